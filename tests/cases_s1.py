"""S1's claims' checks functions with estimates on which each claim holds (``tests/check_cases.py``)."""

from claims.s1_attention.identity_checks import convex_checks, odds_ratio_checks, simplex_checks
from claims.s1_attention.identity_measures import (
    ConvexEstimates, IdentityContext, OddsRatioEstimates, SimplexEstimates,
)
from claims.s1_attention.probe_checks import probe_checks
from claims.s1_attention.probe_measures import ProbeEstimates
from claims.s1_attention.trajectory_checks import trajectory_checks
from claims.s1_attention.trajectory_measures import TrajectoryEstimates
from tests.check_cases import Case, estimate, per_unit


ZERO = 1.1754943508222875e-38  # float32's smallest normal number
FLOAT32 = {"context": IdentityContext("float32", 128, 1e-5, ZERO)}  # float32 over 128 keys (a rounded row-sum bound)
CASES = [
    Case("S1.1", simplex_checks, SimplexEstimates(per_unit(2e-7), per_unit(0.0), per_unit(-0.0, 9), per_unit(0.9)),
         FLOAT32),
    Case("S1.2", odds_ratio_checks, OddsRatioEstimates(per_unit(0.2), per_unit(40.0)), FLOAT32),
    Case("S1.2", odds_ratio_checks, OddsRatioEstimates(per_unit(0.2), per_unit(40.0), per_unit(300.0)),
         FLOAT32, label="rotary"),
    Case("S1.3", convex_checks, ConvexEstimates(per_unit(0.1), per_unit(50.0)), FLOAT32),
    Case("S1.4", trajectory_checks, TrajectoryEstimates(gain=estimate(0.1), over_twin=estimate(0.2))),
    Case("S1.5", probe_checks, ProbeEstimates(best=estimate(0.4, 0.05), null=estimate(0.03, 0.005), chance=0.04,
                                              n=370, shuffles=8)),
]
