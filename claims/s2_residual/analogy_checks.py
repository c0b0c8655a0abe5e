"""S2.3's checks as a pure function of its estimates: ``analogy_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s2.py``) drive the same function to hold and to fail each check. Its rows, with their
derivations, and the rate it decides with (LANDS_NEXT_TO) are in the topic's home, ``analogy.toml``.
"""

from claims.s2_residual.analogy_measures import AnalogyEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

LANDS_NEXT_TO = numbers(__file__, "LANDS_NEXT_TO")


def analogy_checks(e: AnalogyEstimates) -> list[Check]:
    """S2.3's two claim checks (lands next to the target: a top-1 rate above LANDS_NEXT_TO; raw distances mislead: a
    paired difference of mean reciprocal rank above 0) and the untrained-twin control (below LANDS_NEXT_TO). Pure.

    Returns:
        two claim checks and one control, in that order.
    """
    return [
        Check.of("top-1 rate under cosine on normalised embeddings", e.lands, "fraction of analogies", ">",
                 LANDS_NEXT_TO, **catalogued("S2.3/lands-next-to")),
        Check.of("mean reciprocal rank, cosine (normalised) minus Euclidean (raw)", e.misleads, "MRR", ">", 0.0,
                 **catalogued("S2.3/raw-distances-mislead")),
        Check.of("untrained twin: top-1 rate under cosine", e.twin_lands, "fraction of analogies", "<",
                 LANDS_NEXT_TO, role="control",
                 **catalogued("S2.3/twin-control")),
    ]
