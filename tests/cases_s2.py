"""S2's claims' checks functions with estimates on which each claim holds (``tests/check_cases.py``)."""

from claims.s2_residual.analogy_checks import AnalogyEstimates, analogy_checks
from claims.s2_residual.stream_checks import DirectionEstimates, GrowthEstimates, direction_checks, growth_checks
from tests.check_cases import Case, estimate

CASES = [
    Case("S2.1", growth_checks, GrowthEstimates(keeps_growing=estimate(1.1), typical=estimate(3.0)),
         {"first": "block 1", "last": "block 6"}),
    Case("S2.2", direction_checks, DirectionEstimates(floor=estimate(0.95), above_null=estimate(0.3)),
         {"counted": "block 1 → block 2 .. block 5 → block 6"}),
    Case("S2.3", analogy_checks, AnalogyEstimates(lands=estimate(0.7, 0.05), misleads=estimate(0.2),
                                                  twin_lands=estimate(0.05))),
]
