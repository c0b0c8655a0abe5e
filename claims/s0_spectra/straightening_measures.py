"""S0.3-S0.5's measurements: the power law's scatter by layer, its straightening, the last block's exponent, and the
trained model's straightening over its twin's. test_straightening.py records what these measure; straightening_checks.py
decides; the numbers both read are in the topic's home, straightening.toml.
"""

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from claims.s0_spectra.model_spectra import beyond_null, mean_fit
from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.stats import Estimate

S0_BAND_DECADES = numbers(__file__, "S0_BAND_DECADES")


@dataclass(frozen=True)
class StraighteningEstimates:
    """What S0.3's checks decide on, measured on a trained model's hidden-state spectra, each over sequences (the
    bootstrap unit).

    Attributes:
        trend: Spearman correlation of the power-law scatter with depth, start layer to last block (ρ).
        drop: scatter at the last block minus at the start layer (decades).
        slope: the last block's power-law exponent (log-log slope).
        windowed: ``drop`` of the Hann-windowed, mean-removed spectra (decades).
        ordered: ``drop`` minus that of the position-shuffled stream (decades, paired).
    """

    trend: Estimate
    drop: Estimate
    slope: Estimate
    windowed: Estimate
    ordered: Estimate


@dataclass(frozen=True)
class StraighteningContext:
    """The layers S0.3's checks compare, by label: ``start`` the first block's input ("embed" or "embed+pos"),
    ``last`` the last block ("block 6")."""

    start: str
    last: str


@dataclass(frozen=True)
class SpanEstimates:
    """What S0.4's checks decide on, measured on the last block's spectrum, over sequences.

    Attributes:
        slope: its power-law exponent (log-log slope).
        windowed: the exponent of its Hann-windowed, mean-removed spectrum.
    """

    slope: Estimate
    windowed: Estimate


@dataclass(frozen=True)
class LastBlockContext:
    """What S0.4's and S0.5's checks are told beside their estimates: ``last``, the last block's label ("block 6")."""

    last: str


@dataclass(frozen=True)
class SpanShown:
    """What S0.4's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        by_layer: every layer's power-law exponent, in the order of the spectra's labels.
    """

    by_layer: list[Estimate] = field(default_factory=list)


@dataclass(frozen=True)
class LearnedEstimates:
    """What S0.5's checks decide on, measured on a trained model and its untrained twin, positions removed, paired
    over sequences.

    Attributes:
        learned: straightening from block 1 to the last block, trained minus twin (decades).
        ordered: that difference minus the position-shuffled streams' (decades).
    """

    learned: Estimate
    ordered: Estimate


@dataclass(frozen=True)
class LearnedShown:
    """What S0.5's record shows beside its checks, deciding nothing (issue 79, item 3).

    Attributes:
        twin: the twin's straightening, positions removed, from block 1 (decades).
    """

    twin: Estimate | None = None


def span_over_s0_band(exponent: float) -> float:
    """The span in decades of power a law of ``exponent`` (log-log slope) has over S0's band of frequency
    (``S0_BAND_DECADES``): the figure S0 gives (S0.4's source number)."""
    return abs(exponent) * S0_BAND_DECADES


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


def measure_span(spectra, claim) -> tuple[SpanEstimates, SpanShown]:
    """S0.4's measurement over sequences: the last block's exponent, unwindowed and Hann-windowed (the control), and
    (shown) every layer's.

    Args:
        spectra: the model's spectra with ``hidden`` and ``hidden_hann`` (batch, n_layers, n_freq).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Returns:
        (the checks' estimates, what the record shows beside them: every layer's exponent).
    """
    bins, hidden = spectra.bins, spectra.hidden
    by_layer = [claim.bootstrap(hidden[:, i], _slope(bins)) for i in range(hidden.shape[1])]
    return SpanEstimates(by_layer[-1], claim.bootstrap(spectra.hidden_hann[:, -1], _slope(bins))), SpanShown(by_layer)


def measure_learned(spectra, twin_spectra, claim) -> tuple[LearnedEstimates, LearnedShown]:
    """S0.5's measurement, positions removed from every layer and counted from block 1's output, paired over
    sequences: the trained model's straightening minus its untrained twin's, and that beyond the position-shuffled
    streams' (the control).

    Args:
        spectra, twin_spectra: the model's and its twin's spectra with ``hidden_nopos`` and
            ``shuffled.hidden_nopos`` (batch, n_layers, n_freq), on the same token ids.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap`` and ``seed``.
    Returns:
        (the checks' estimates, what the record shows beside them: the twin's own straightening).
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
    ), LearnedShown(twin=claim.bootstrap(twin_spectra.hidden_nopos, lambda u: straightening(bins, u, first)))
