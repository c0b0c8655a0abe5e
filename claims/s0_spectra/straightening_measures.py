"""S0.3 and S0.5's statistics: the power law's scatter by layer, its straightening, and the trained model's
straightening over its twin's. test_straightening.py measures with these; straightening_checks.py decides.
"""

import numpy as np

from claims.s0_spectra.conftest import mean_fit


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
