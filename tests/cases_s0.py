"""S0's claims' checks functions with estimates on which each claim holds (``tests/check_cases.py``)."""

from claims.s0_spectra.embedding_checks import flat_checks, tilt_checks
from claims.s0_spectra.embedding_measures import FlatEstimates, TiltEstimates
from claims.s0_spectra.residual_checks import (
    attention_spike_checks, bend_checks, closeness_checks, low_band_checks, mlp_spike_checks,
)
from claims.s0_spectra.residual_measures import (
    AttentionSpikeContext, AttentionSpikeEstimates, BendContext, BendEstimates, ClosenessContext, ClosenessEstimates,
    LowBandContext, LowBandEstimates, MlpSpikeEstimates,
)
from claims.s0_spectra.straightening_checks import learned_checks, span_checks, straightening_checks
from claims.s0_spectra.straightening_measures import (
    LearnedEstimates, LastBlockContext, SpanEstimates, StraighteningContext, StraighteningEstimates,
)
from fixtures.catalogue import load_catalogue
from tests.check_cases import Case, estimate

CALIBRATION = {claim: next(c for c in load_catalogue().claims[claim].calibrations if c.positions == 128).at(4)
               for claim in ("S0.6", "S0.7")}
CASES = [
    Case("S0.6", bend_checks, BendEstimates(estimate(0.02, 0.005), estimate(0.1), estimate(-0.5, 0.1)),
         {"context": BendContext(CALIBRATION["S0.6"])}),
    Case("S0.7", closeness_checks, ClosenessEstimates(estimate(0.01, 0.002), estimate(0.2, 0.05)),
         {"context": ClosenessContext(CALIBRATION["S0.7"])}),
    Case("S0.8", attention_spike_checks, AttentionSpikeEstimates(estimate(0.3), estimate(0.2), estimate(0.1),
                                                                 estimate(0.15)), {"context": AttentionSpikeContext(2)}),
    Case("S0.9", mlp_spike_checks, MlpSpikeEstimates(estimate(0.4), estimate(0.3))),
    Case("S0.10", low_band_checks, LowBandEstimates(estimate(0.3), estimate(0.2)), {"context": LowBandContext(2)}),
    Case("S0.1", flat_checks, FlatEstimates(slope=estimate(0.02), shuffled=estimate(0.03))),
    Case("S0.2", tilt_checks, TiltEstimates(trained=estimate(0.3), learned=estimate(0.2), hann=estimate(0.25))),
    Case("S0.3", straightening_checks, StraighteningEstimates(
        trend=estimate(-0.8, 0.1), drop=estimate(-0.05), slope=estimate(-0.4), windowed=estimate(-0.04),
        ordered=estimate(-0.03)), {"context": StraighteningContext("embed", "block 6")}),
    Case("S0.4", span_checks, SpanEstimates(slope=estimate(-0.33), windowed=estimate(-0.3)),
         {"context": LastBlockContext("block 6")}),
    Case("S0.5", learned_checks, LearnedEstimates(learned=estimate(-0.05), ordered=estimate(-0.04)),
         {"context": LastBlockContext("block 6")}),
]
