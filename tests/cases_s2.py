"""S2's claims' checks functions with estimates on which each claim holds (``tests/check_cases.py``)."""

from claims.s2_residual.analogy_checks import analogy_checks
from claims.s2_residual.analogy_measures import AnalogyEstimates
from claims.s2_residual.stream_checks import direction_checks, growth_checks
from claims.s2_residual.stream_measures import DirectionEstimates, GrowthEstimates, StreamContext
from tests.check_cases import Case, estimate

SIX_BLOCKS = {"context": StreamContext(("embed", *(f"block {i}" for i in range(1, 7))))}
CASES = [
    Case("S2.1", growth_checks, GrowthEstimates(keeps_growing=estimate(1.1), typical=estimate(3.0)), SIX_BLOCKS),
    Case("S2.2", direction_checks, DirectionEstimates(floor=estimate(0.95), above_null=estimate(0.3)), SIX_BLOCKS),
    Case("S2.3", analogy_checks, AnalogyEstimates(lands=estimate(0.7, 0.05), misleads=estimate(0.2),
                                                  twin_lands=estimate(0.05))),
]
