"""Uncertainty helpers: bootstrap over prompts (every averaged claim statistic), exact intervals of proportions.

The level of every interval is 95 % unless a caller asks for another, either per
call or for a stretch of code with :func:`confidence_level` (a sequential claim
test that looks at its sample up to K times takes 1 − 0.05/K at each look, so
that its error stays within 5 % over all looks: ``fixtures.rounds``).
"""

import contextlib
import contextvars
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from scipy import stats


DEFAULT_CONFIDENCE = 0.95
_confidence = contextvars.ContextVar("confidence", default=DEFAULT_CONFIDENCE)


@contextlib.contextmanager
def confidence_level(level: float) -> Iterator[float]:
    """Within the block, :func:`bootstrap` calls that name no level use ``level``.

    Raises:
        ValueError: for a level outside (0, 1).
    """
    if not 0 < level < 1:
        raise ValueError(f"confidence level must lie in (0, 1), got {level}")
    token = _confidence.set(level)
    try:
        yield level
    finally:
        _confidence.reset(token)


def current_confidence() -> float:
    """The level :func:`bootstrap` uses when a call names none (0.95 outside :func:`confidence_level`)."""
    return _confidence.get()


@dataclass(frozen=True)
class Estimate:
    """A statistic with its confidence interval and how the interval was made.

    Attributes:
        value: the statistic on the full sample.
        low, high: interval bounds (same units as value).
        confidence: the interval's level, e.g. 0.95 (1.0 for a deterministic statistic).
        n: number of units (prompts, sequences, seeds, tokens).
        method: how the interval was made, e.g. "BCa bootstrap, 1000 resamples", "exact binomial
            (Clopper–Pearson)", "deterministic" (a count or an identity: the interval is the value).
    """

    value: float
    low: float
    high: float
    confidence: float
    n: int
    method: str = "deterministic"


def bootstrap(
    units: np.ndarray,
    statistic: Callable[[np.ndarray], float],
    seed: int,
    n_resamples: int = 1000,
    confidence: float | None = None,
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
        confidence: interval level in (0, 1); None: :func:`current_confidence` (0.95 unless a sequential test
            set another with :func:`confidence_level`).
    Returns:
        Estimate with value = statistic(units).
    Raises:
        ValueError: if fewer than 2 units, or the statistic is not finite.
    """
    units = np.asarray(units)
    confidence = current_confidence() if confidence is None else confidence
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
    method = f"BCa bootstrap, {n_resamples} resamples"
    if not (np.isfinite(ci.low) and np.isfinite(ci.high)):
        ci = interval("percentile")
        method = f"percentile bootstrap, {n_resamples} resamples (BCa undefined: the resamples do not vary)"
    return Estimate(value=value, low=float(ci.low), high=float(ci.high), confidence=confidence, n=units.shape[0],
                    method=method)


def proportion(successes: np.ndarray, confidence: float | None = None) -> Estimate:
    """The fraction of units that succeed, with its exact binomial (Clopper–Pearson) interval.

    For a statistic that is a proportion of 0/1 units (prompts recovered, seeds that find a token), the
    interval the sample can give: 4 of 4 prompts at 98.3 % is [0.30, 1], never the bootstrap's [1, 1].

    Args:
        successes: (n_units,) booleans or 0/1.
        confidence: interval level; None: :func:`current_confidence`.
    Returns:
        Estimate with value k / n and method "exact binomial (Clopper–Pearson)".
    Raises:
        ValueError: for no units, or units that are not 0/1.
    """
    units = np.asarray(successes).ravel()
    if units.size == 0:
        raise ValueError("a proportion needs at least 1 unit")
    if not np.isin(units, (0, 1)).all():
        raise ValueError("a proportion's units must be 0/1 (or booleans)")
    confidence = current_confidence() if confidence is None else confidence
    k, n = int(units.sum()), int(units.size)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return Estimate(value=k / n, low=float(ci.low), high=float(ci.high), confidence=confidence, n=n,
                    method="exact binomial (Clopper–Pearson)")
