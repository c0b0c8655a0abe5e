"""S3.1's checks as a pure function of its estimates: ``round_trip_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s3.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass, field

import numpy as np
import torch

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

EXACT = 0.999  # S3: the round trip gives the prompt back exactly, every token (derivation: the catalogue row of its check)
PERMUTED_CEILING = 0.5  # control: the same embeddings decoded with W_E's rows shuffled must not give the prompt


@dataclass(frozen=True)
class RoundTripEstimates:
    """What S3.1's test measures, decided prompt by prompt (per-unit extremes of token accuracy).

    Attributes:
        recovered: the least token accuracy of argmax(W_E[ids]·W_E⁺) over the prompts.
        permuted: the largest token accuracy with W_E's rows shuffled (a control).
        prompts: prompts; tokens: tokens per prompt.
        rank: shown beside the checks, deciding nothing: rank(W_E).
        ratio: shown: per token, the true coordinate over the largest other (S3: ~1e-2 against ≤ 1e-3).
        shifted: shown: the token accuracy of a′ = a + 0.05·noise (prompts, tokens) 0/1.
        top: shown: (prompts, tokens, 5) the round trip's top-5 token ids.
    """

    recovered: Estimate
    permuted: Estimate
    prompts: int
    tokens: int
    rank: int = field(default=0, compare=False)
    ratio: np.ndarray | None = field(default=None, compare=False)
    shifted: torch.Tensor | None = field(default=None, compare=False)
    top: torch.Tensor | None = field(default=None, compare=False)


def round_trip_checks(e: RoundTripEstimates) -> list[Check]:
    """S3.1's claim check (every prompt comes back) and the row-shuffled control."""
    return [
        Check.of("least token accuracy of argmax(W_E[ids]·W_E⁺) over the prompts", e.recovered, "fraction of tokens",
                 ">", EXACT,
                 **catalogued("S3.1/least-token-accuracy-of-argmax-w-e-ids-w-e-over-the-prompts", EXACT=EXACT,
                              prompts=e.prompts, tokens=e.tokens)),
        Check.of("largest token accuracy over the prompts with W_E's rows shuffled", e.permuted, "fraction of tokens",
                 "<", PERMUTED_CEILING, role="control",
                 **catalogued("S3.1/largest-token-accuracy-over-the-prompts-with-w-e-s-rows-shuffled",
                              PERMUTED_CEILING=PERMUTED_CEILING)),
    ]
