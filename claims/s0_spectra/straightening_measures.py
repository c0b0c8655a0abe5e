"""S0.3-S0.5's measurements: the power law's scatter by layer, its straightening, the last block's exponent, and the
trained model's straightening over its twin's. test_straightening.py records what these measure; straightening_checks.py
decides.
"""

import numpy as np
from scipy import stats

from claims.s0_spectra.model_spectra import beyond_null, mean_fit
from claims.s0_spectra.straightening_checks import LearnedEstimates, SpanEstimates, StraighteningEstimates
from fixtures.catalogue_text import gate


def deviation_by_layer(bins, units: np.ndarray) -> np.ndarray:
    """RMS scatter about the power law, decades, per layer of the mean spectrum; units (batch, n_layers, n_freq)."""
    return mean_fit(bins, units).deviation


def straightening(bins, units: np.ndarray, start: int) -> float:
    """Scatter at the last block minus at the start layer, decades (negative: straighter after the blocks)."""
    deviation = deviation_by_layer(bins, units)
    return float(deviation[-1] - deviation[start])


def learned_straightening(bins, units: np.ndarray, start: int) -> float:
    """Straightening of the trained model minus its twin's, decades; units (batch, 2, n_layers, n_freq)."""
    return straightening(bins, units[:, 0], start) - straightening(bins, units[:, 1], start)


def _trend(bins, units: np.ndarray, start: int) -> float:
    """Spearman correlation of scatter with depth, from the start layer to the last block."""
    deviation = deviation_by_layer(bins, units)[start:]
    return float(stats.spearmanr(np.arange(deviation.size), deviation).statistic)


def _slope(bins):
    """Statistic of units (batch, n_freq): the mean spectrum's power-law exponent (log-log slope)."""
    return lambda u: float(mean_fit(bins, u).slope)


def measure_straightening(spectra, claim) -> StraighteningEstimates:
    """S0.3's measurement over sequences: scatter's rank correlation with depth, the scatter's drop from the start
    layer to the last block, the last block's exponent, the drop Hann-windowed (the leakage control) and beyond the
    position-shuffled stream's (the control).

    Args:
        spectra: the model's spectra (``claims.s0_spectra.model_spectra``) with ``hidden``, ``hidden_hann`` and
            ``shuffled.hidden``, each (batch, n_layers, n_freq) power.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap`` and ``seed``.
    """
    bins, hidden, start = spectra.bins, spectra.hidden, spectra.start
    return StraighteningEstimates(
        claim.bootstrap(hidden, lambda u: _trend(bins, u, start)),
        claim.bootstrap(hidden, lambda u: straightening(bins, u, start)),
        claim.bootstrap(hidden[:, -1], _slope(bins)),
        claim.bootstrap(spectra.hidden_hann, lambda u: straightening(bins, u, start)),
        beyond_null(hidden, spectra.shuffled.hidden, lambda u: straightening(bins, u, start), claim.seed))


def measure_span(spectra, claim) -> SpanEstimates:
    """S0.4's measurement over sequences: the last block's exponent, unwindowed and Hann-windowed (the control), and
    (shown) every layer's.

    Args:
        spectra: the model's spectra with ``hidden`` and ``hidden_hann`` (batch, n_layers, n_freq).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    """
    bins, hidden = spectra.bins, spectra.hidden
    by_layer = [claim.bootstrap(hidden[:, i], _slope(bins)) for i in range(hidden.shape[1])]
    return SpanEstimates(by_layer[-1], claim.bootstrap(spectra.hidden_hann[:, -1], _slope(bins)), by_layer)


def measure_learned(spectra, twin_spectra, claim) -> LearnedEstimates:
    """S0.5's measurement, positions removed from every layer and counted from block 1's output, paired over
    sequences: the trained model's straightening minus its untrained twin's, and that beyond the position-shuffled
    streams' (the control).

    Args:
        spectra, twin_spectra: the model's and its twin's spectra with ``hidden_nopos`` and
            ``shuffled.hidden_nopos`` (batch, n_layers, n_freq), on the same token ids.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap`` and ``seed``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` for a one-block model.
    """
    bins, first = spectra.bins, spectra.labels.index("block 1")
    if len(spectra.labels) - first < 2:
        claim.not_informative(gate("S0.5/straightening-is-learned/one-block"))
    paired = np.stack([spectra.hidden_nopos, twin_spectra.hidden_nopos], axis=1)  # (batch, 2, n_layers, n_freq)
    null = np.stack([spectra.shuffled.hidden_nopos, twin_spectra.shuffled.hidden_nopos], axis=1)
    return LearnedEstimates(
        claim.bootstrap(paired, lambda u: learned_straightening(bins, u, first)),
        beyond_null(paired, null, lambda u: learned_straightening(bins, u, first), claim.seed),
        twin=claim.bootstrap(twin_spectra.hidden_nopos, lambda u: straightening(bins, u, first)))
