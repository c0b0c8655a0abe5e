"""S3.1's checks as a pure function of its estimates: ``test_round_trip.py`` measures, this decides, and the
self-tests (``tests/cases_s3.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass

from latent_instruments.stats import Estimate
from reports.checks import Check

EXACT = 0.999  # S3: the round trip gives the prompt back exactly, every token (see the derivation)
PERMUTED_CEILING = 0.5  # control: the same embeddings decoded with W_E's rows shuffled must not give the prompt


@dataclass(frozen=True)
class RoundTripEstimates:
    """What S3.1's test measures, decided prompt by prompt (per-unit extremes of token accuracy).

    Attributes:
        recovered: the least token accuracy of argmax(W_E[ids]·W_E⁺) over the prompts.
        permuted: the largest token accuracy with W_E's rows shuffled (a control).
        prompts: prompts; tokens: tokens per prompt.
    """

    recovered: Estimate
    permuted: Estimate
    prompts: int
    tokens: int


def round_trip_checks(e: RoundTripEstimates) -> list[Check]:
    """S3.1's claim check (every prompt comes back) and the row-shuffled control."""
    return [
        Check.of("least token accuracy of argmax(W_E[ids]·W_E⁺) over the prompts", e.recovered, "fraction of tokens",
                 ">", EXACT,
                 "S3 (Direct Input Representation): the pseudo-inverse round trip gives the prompt back, the "
                 "true index holding ~1e-2 where the others hold ≤ 1e-3; 'exactly' admits no wrong token. "
                 f"The threshold {EXACT} is that, with room for rounding only, asserted of every one of the "
                 f"{e.prompts} prompts of {e.tokens} tokens (S3 verifies its prompt comes back): one "
                 "wrong token in any prompt fails it",
                 key="S3.1/least-token-accuracy-of-argmax-w-e-ids-w-e-over-the-prompts"),
        Check.of("largest token accuracy over the prompts with W_E's rows shuffled", e.permuted, "fraction of tokens",
                 "<", PERMUTED_CEILING,
                 "control: decoding the same embeddings with the pseudo-inverse of a row-shuffled W_E must give "
                 "other tokens (only fixed points of the shuffle, about 1/vocab, match); a decode that did not "
                 f"read W_E's rows, or returned its input ids, would score 1. Ceiling {PERMUTED_CEILING}: far "
                 "above chance, far below a vacuous pass; asserted of every prompt", role="control",
                 key="S3.1/largest-token-accuracy-over-the-prompts-with-w-e-s-rows-shuffled"),
    ]
