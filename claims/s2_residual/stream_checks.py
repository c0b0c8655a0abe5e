"""S2.1 and S2.2's checks as pure functions of their estimates: ``stream_measures.py`` measures, these decide,
and the self-tests (``tests/cases_s2.py``) drive the same functions to hold and to fail each check. Their rows, with
their derivations, and the floor S2.2 decides with (COSINE_FLOOR, S2's Table 1) are in the topic's home,
``stream.toml``.
"""

from claims.s2_residual.stream_measures import DirectionEstimates, GrowthEstimates, StreamContext
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

COSINE_FLOOR = numbers(__file__, "COSINE_FLOOR")


def growth_checks(e: GrowthEstimates, context: StreamContext) -> list[Check]:
    """S2.1's claim check (the norm grows at every step: ratios above 1) and the median-token control guarding a
    pass, named by the context's block 1 and last block. Pure.

    Returns:
        one claim check and one control, in that order.
    """
    first, last = context.labels[1], context.labels[-1]
    return [
        Check.of("smallest step ratio of mean norm, layer l + 1 / layer l", e.keeps_growing, "ratio", ">", 1.0,
                 **catalogued("S2.1/keeps-growing")),
        Check.of(f"median token's norm ratio, {last} / {first}", e.typical, "ratio", ">", 1.0, role="control",
                 guards_pass=True, **catalogued("S2.1/median-token-control")),
    ]


def direction_checks(e: DirectionEstimates, context: StreamContext) -> list[Check]:
    """S2.2's claim check (above S2's COSINE_FLOOR over the transitions after block 1's, named by the context) and
    the mismatched-token control (a margin above 0). Pure.

    Returns:
        one claim check and one control, in that order.
    """
    steps = context.steps
    return [
        Check.of(f"smallest consecutive-layer cosine, {steps[1]} .. {steps[-1]}", e.floor, "cosine", ">",
                 COSINE_FLOOR, **catalogued("S2.2/cosine-floor")),
        Check.of("smallest margin of the consecutive cosine over the mismatched-token null", e.above_null, "cosine",
                 ">", 0.0,
                 role="control",
                 **catalogued("S2.2/mismatched-token-control")),
    ]
