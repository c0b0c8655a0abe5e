"""S2.3's checks as a pure function of its estimates: ``test_analogies.py`` measures, this decides, and the
self-tests (``tests/cases_s2.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass

from latent_instruments.stats import Estimate
from reports.checks import Check

LANDS_NEXT_TO = 0.5  # top-1 rate: the typical (median) analogy lands at rank 1


@dataclass(frozen=True)
class AnalogyEstimates:
    """What S2.3's test measures over analogies (bootstrap over target pairs).

    Attributes:
        lands: top-1 rate under cosine on normalised input embeddings (fraction of analogies).
        misleads: mean reciprocal rank, cosine (normalised) minus Euclidean (raw), paired.
        twin_lands: the untrained twin's top-1 rate under cosine (fraction of analogies).
    """

    lands: Estimate
    misleads: Estimate
    twin_lands: Estimate


def analogy_checks(e: AnalogyEstimates) -> list[Check]:
    """S2.3's two claim checks (lands next to the target; raw distances mislead) and the untrained-twin control."""
    return [
        Check.of("top-1 rate under cosine on normalised embeddings", e.lands, "fraction of analogies", ">",
                 LANDS_NEXT_TO,
                 "S2 gives no figure: Fig 1 is an AI-generated illustration, not a measurement. The threshold is "
                 "the claim's own words, 'king − man + woman and queen are neighbors' on the sphere: the target "
                 "is the nearest token to the query (rank 1), for the typical analogy of the list, i.e. a "
                 "top-1 rate above one half (median rank 1), cleared by the low end of a 95 % bootstrap interval "
                 "over target pairs", key="S2.3/top-1-rate-under-cosine-on-normalised-embeddings"),
        Check.of("mean reciprocal rank, cosine (normalised) minus Euclidean (raw)", e.misleads, "MRR", ">", 0.0,
                 "S2: 'if we compare them using standard distance, a loud vector will seem far away from a quiet "
                 "one, even if they mean the same thing' — raw distances mislead. The threshold is that the raw "
                 "Euclidean ranking puts the target lower than the cosine one: a positive paired difference of "
                 "mean reciprocal rank over the same analogies; no margin, as S2 offers none",
                 key="S2.3/mean-reciprocal-rank-cosine-normalised-minus-euclidean-raw"),
        Check.of("untrained twin: top-1 rate under cosine", e.twin_lands, "fraction of analogies", "<",
                 LANDS_NEXT_TO,
                 "control: the same measurement on the randomly initialised twin's embeddings (same tokenizer, "
                 "same analogies) must not land; if it did, the ranking would be finding targets by something "
                 "other than learned meaning (e.g. token ids or a leak of the query words)", role="control",
                 key="S2.3/untrained-twin-top-1-rate-under-cosine"),
    ]
