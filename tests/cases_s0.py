"""S0's claims' checks functions with estimates on which each claim holds (``tests/check_cases.py``)."""

from claims.s0_spectra.embedding_checks import FlatEstimates, TiltEstimates, flat_checks, tilt_checks
from claims.s0_spectra.straightening_checks import (
    LearnedEstimates, SpanEstimates, StraighteningEstimates, learned_checks, span_checks, straightening_checks,
)
from tests.check_cases import Case, estimate

CASES = [
    Case("S0.1", flat_checks, FlatEstimates(slope=estimate(0.02), shuffled=estimate(0.03))),
    Case("S0.2", tilt_checks, TiltEstimates(trained=estimate(0.3), learned=estimate(0.2), hann=estimate(0.25))),
    Case("S0.3", straightening_checks, StraighteningEstimates(
        trend=estimate(-0.8, 0.1), drop=estimate(-0.05), slope=estimate(-0.4), windowed=estimate(-0.04),
        ordered=estimate(-0.03)), {"start": "embed", "last": "block 6"}),
    Case("S0.4", span_checks, SpanEstimates(slope=estimate(-0.33), windowed=estimate(-0.3)), {"last": "block 6"}),
    Case("S0.5", learned_checks, LearnedEstimates(learned=estimate(-0.05), ordered=estimate(-0.04)),
         {"last": "block 6"}),
]
