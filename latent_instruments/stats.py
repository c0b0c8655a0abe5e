"""Uncertainty helpers: bootstrap over prompts (every averaged claim statistic)."""

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Estimate:
    """A statistic with its bootstrap confidence interval.

    Attributes:
        value: the statistic on the full sample.
        low, high: bootstrap interval bounds (same units as value).
        confidence: the interval's level, e.g. 0.95.
        n: number of resampling units (prompts, sequences, seeds).
    """

    value: float
    low: float
    high: float
    confidence: float
    n: int


def bootstrap(
    units: np.ndarray,
    statistic: Callable[[np.ndarray], float],
    seed: int,
    n_resamples: int = 1000,
    confidence: float = 0.95,
) -> Estimate:
    """Bias-corrected (BCa) bootstrap of ``statistic`` over the first axis of ``units``.

    Resamples whole units (rows) with replacement, so paired measurements
    stored along the other axes stay paired. Uses ``scipy.stats.bootstrap``
    with BCa, which corrects the bias of nonlinear statistics (a fit to a
    mean spectrum, a ratio of means) that would leave a percentile interval
    beside the value; where BCa is undefined (every resample equal) the
    percentile interval is used.

    Args:
        units: shape (n_units, ...); one row per prompt or sequence.
        statistic: maps an array of the same trailing shape, (k, ...), to a float.
        seed: seeds the resampling, so the interval is reproducible.
        n_resamples: number of bootstrap resamples.
        confidence: interval level in (0, 1).
    Returns:
        Estimate with value = statistic(units).
    Raises:
        ValueError: if fewer than 2 units, or the statistic is not finite.
    """
    units = np.asarray(units)
    if units.shape[0] < 2:
        raise ValueError(f"bootstrap needs at least 2 units, got {units.shape[0]}")
    value = float(statistic(units))
    if not np.isfinite(value):
        raise ValueError(f"statistic is not finite ({value}) on the full sample")

    def interval(method: str):
        return stats.bootstrap(
            (np.arange(units.shape[0]),),
            lambda idx: statistic(units[idx.astype(int)]),
            vectorized=False,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method=method,
            rng=np.random.default_rng(seed),
        ).confidence_interval

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)  # BCa's acceleration is 0/0 on degenerate data
        ci = interval("BCa")
    if not (np.isfinite(ci.low) and np.isfinite(ci.high)):
        ci = interval("percentile")
    return Estimate(value=value, low=float(ci.low), high=float(ci.high), confidence=confidence, n=units.shape[0])
