"""S2.3's checks as a pure function of its estimates: ``analogy_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s2.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass, field

import numpy as np

from fixtures.catalogue_text import catalogued
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
        ranks, twin_ranks: shown beside the checks, deciding nothing: target ranks (pairs, analogies per pair,
            [cosine, Euclidean]) of the model and of its untrained twin.
        analogies, kept: shown: the analogies (``latent_instruments.analogies.Analogy``) and the word pairs kept.
        spread: shown: the relative spread of the embedding's row norms.
        by_pair: shown: {"cosine", "euclidean", "twin"}: mean reciprocal rank per target pair.
    """

    lands: Estimate
    misleads: Estimate
    twin_lands: Estimate
    ranks: np.ndarray | None = field(default=None, compare=False)
    twin_ranks: np.ndarray | None = field(default=None, compare=False)
    analogies: list = field(default_factory=list, compare=False)
    kept: list[tuple[str, str]] = field(default_factory=list, compare=False)
    spread: float = field(default=float("nan"), compare=False)
    by_pair: dict[str, list[Estimate]] = field(default_factory=dict, compare=False)


def analogy_checks(e: AnalogyEstimates) -> list[Check]:
    """S2.3's two claim checks (lands next to the target; raw distances mislead) and the untrained-twin control."""
    return [
        Check.of("top-1 rate under cosine on normalised embeddings", e.lands, "fraction of analogies", ">",
                 LANDS_NEXT_TO, **catalogued("S2.3/top-1-rate-under-cosine-on-normalised-embeddings")),
        Check.of("mean reciprocal rank, cosine (normalised) minus Euclidean (raw)", e.misleads, "MRR", ">", 0.0,
                 **catalogued("S2.3/mean-reciprocal-rank-cosine-normalised-minus-euclidean-raw")),
        Check.of("untrained twin: top-1 rate under cosine", e.twin_lands, "fraction of analogies", "<",
                 LANDS_NEXT_TO, role="control",
                 **catalogued("S2.3/untrained-twin-top-1-rate-under-cosine")),
    ]
