"""S1.4's checks as a pure function of its estimates: ``trajectory_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s1.py``) drive the same function to hold and to fail each check. Its rows, with their
derivations, are in the topic's home, ``trajectory.toml``: S1 is an argument, not an experiment, so both bounds
are the sign (0), with no figure to take a margin from.
"""

from claims.s1_attention.trajectory_measures import TrajectoryEstimates
from fixtures.catalogue_text import catalogued
from reports.checks import Check


def trajectory_checks(e: TrajectoryEstimates) -> list[Check]:
    """S1.4's claim check (decided on the unembedding row W_U since version 3) and the untrained-twin control, both
    excess closenesses in cosine units above 0. Pure.

    Returns:
        one claim check and one control, in that order.
    """
    return [
        Check.of("the unembedding row W_U[τ_(t+1)]: final block's excess closeness minus max(earlier layers', 0)",
                 e.gain, "cosine", ">", 0.0,
                 **catalogued("S1.4/final-gain")),
        Check.of("final-layer excess closeness to W_U[τ_(t+1)], model minus its untrained twin",
                 e.over_twin, "cosine", ">", 0.0, role="control",
                 **catalogued("S1.4/twin-control")),
    ]
