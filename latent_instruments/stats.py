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
MIN_BOOTSTRAP_UNITS = 16  # fewest units a bootstrap interval decides from: BCa undercovers on 4-8 units (issue 43)
MIN_RESAMPLES = 200  # fewest bootstrap resamples: with 1 or 10 the interval's ends are noise (1 can exclude the value)
BOOTSTRAP = "bootstrap"  # the word every bootstrap interval's ``method`` carries (``undecidable`` reads it)
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


def sample_mean(units: np.ndarray) -> float:
    """The mean of every unit's value: a bootstrap statistic over (units, ...) arrays, in the units' own unit."""
    return float(units.mean())


def paired_difference(units: np.ndarray) -> float:
    """Mean of column 0 minus mean of column 1: a bootstrap statistic of paired units (units, 2), e.g. a model's
    value and its control's on the same prompt, in the values' unit."""
    return float(units[:, 0].mean() - units[:, 1].mean())


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
        ValueError: naming the argument: ``units`` without an axis or with fewer than 2 units, ``confidence``
            outside (0, 1) (a level, not a percentage: 0.95, not 95), ``n_resamples`` under ``MIN_RESAMPLES``; or
            if the statistic is not finite.
    """
    units = np.asarray(units)
    confidence = current_confidence() if confidence is None else confidence
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be a level in (0, 1), e.g. 0.95, got {confidence!r}")
    if not isinstance(n_resamples, int) or n_resamples < MIN_RESAMPLES:
        raise ValueError(f"n_resamples must be an integer of at least {MIN_RESAMPLES}, got {n_resamples!r}")
    if units.ndim == 0:
        raise ValueError("units must have a first axis of units (one row per prompt or sequence), got a scalar")
    if units.shape[0] < 2:
        raise ValueError(f"bootstrap needs at least 2 units, got {units.shape[0]}")
    value = float(statistic(units))
    if not np.isfinite(value):
        raise ValueError(f"statistic is not finite ({value}) on the full sample")

    def resampled(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        # scipy hands over every resample's (and jackknife sample's) unit indices at once, (..., k) along ``axis``;
        # the statistic runs on each in turn, as ``vectorized=False`` would run it through numpy's apply_along_axis
        idx = np.moveaxis(np.asarray(idx), axis, -1)
        rows = idx.reshape(-1, idx.shape[-1]).astype(int)
        return np.array([statistic(units[row]) for row in rows]).reshape(idx.shape[:-1])

    def interval(method: str):
        return stats.bootstrap(
            (np.arange(units.shape[0]),),
            resampled,
            vectorized=True,
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


def per_unit(units: np.ndarray, worst: str) -> Estimate:
    """A per-unit decision: the worst of every unit, each compared with the claim's threshold, no interval.

    For a claim asserted of each unit (an identity that holds entry by entry, S1.1-S1.3; a bound every example
    must keep): the statistic is the largest (``worst="max"``) or smallest (``"min"``) of all the values, and a
    check on it passes only if every unit passes. That is a statement about the measured units, with
    ``units.size`` comparisons and no inference beyond them, so the interval is the value. A bootstrap of an
    extreme is not a valid interval (a resampled maximum can never exceed the sample's), which is why extremes
    are decided so rather than resampled.

    Args:
        units: (n_units, ...) values; every entry is one comparison.
        worst: "max" (the check needs the largest below its threshold) or "min" (the smallest above it).
    The same extreme decides an existence check too (S1.1's control: the largest leaked probability must exceed
    its bound somewhere), again a statement about the measured units.

    Returns:
        Estimate with value = low = high = the extreme, confidence 1.0, n = units.shape[0], and a method that
        states the multiplicity ("per-unit decision: the largest of 1,024 values over 8 units").
    Raises:
        ValueError: naming the argument: ``worst`` other than "max"/"min", ``units`` without an axis (a scalar) or
            empty, or with a value that is not finite (NaN or ±inf anywhere, not only at the extreme).
    """
    units = np.asarray(units, dtype=float)
    if worst not in ("max", "min"):
        raise ValueError(f"worst must be 'max' or 'min', got {worst!r}")
    if units.ndim == 0:
        raise ValueError("units must have a first axis of units, got a scalar: pass [value] for one unit")
    if units.size == 0:
        raise ValueError("a per-unit decision needs at least one value in units")
    bad = ~np.isfinite(units)
    if bad.any():
        raise ValueError(f"units hold {int(bad.sum())} value(s) that are not finite (e.g. {units[bad].flat[0]}): "
                         "every unit is compared, so none may be NaN or inf")
    value = float(units.max() if worst == "max" else units.min())
    word = "largest" if worst == "max" else "smallest"
    return Estimate(value=value, low=value, high=value, confidence=1.0, n=units.shape[0],
                    method=f"per-unit decision: the {word} of {units.size:,} values over {units.shape[0]} units "
                           "(a statement about the measured units, no interval)")


def undecidable(method: str | None, n: int | None, low: float, high: float) -> str:
    """Why an interval cannot decide a check, or "" where it can.

    A bootstrap interval decides only from at least ``MIN_BOOTSTRAP_UNITS`` units, and never when it has zero
    width from n > 1 units (every resample equal: the sample cannot show its own spread). Exact, deterministic
    and per-unit intervals decide at any n; an interval whose method is unknown (``None``: records from before
    the method was recorded) is read as it was then.

    Args:
        method: ``Estimate.method``; n: the units; low, high: the interval.
    """
    if method is None or BOOTSTRAP not in method:
        return ""
    if n is not None and n < MIN_BOOTSTRAP_UNITS:
        return (f"a bootstrap from {n} units decides nothing (at least {MIN_BOOTSTRAP_UNITS}: below that it "
                "undercovers)")
    if low == high and (n is None or n > 1):
        return f"a zero-width bootstrap interval from {n} units decides nothing (every resample equal)"
    return ""


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


def proportion_difference(first: np.ndarray, second: np.ndarray, paired: bool,
                          confidence: float | None = None) -> Estimate:
    """The difference of two proportions, mean(first) − mean(second), with Newcombe's hybrid score interval: Wilson
    intervals of both rates, joined through the pairs' correlation where the units are paired (his method 10 for
    paired data, 1998b), without it where the samples are independent (method 10 of 1998a).

    For "the untrained twin recovers more prompts than the trained model" on the same prompts (S3.3, paired) and
    "more of the wider layers' initialisations find the token" (S3.9, independent): every pair (1, 0) must not
    give the bootstrap's [1, 1]. 16 pairs all (1, 0) at 98.3 % give [0.63, 1].

    Args:
        first, second: (n_units,) 0/1 or booleans; paired by position when ``paired`` (equal lengths).
        paired: whether the units are the same (prompts measured twice) or independent samples.
        confidence: interval level; None: :func:`current_confidence`.
    Returns:
        Estimate with n = the units (paired) or the smaller sample (independent), method naming the interval.
    Raises:
        ValueError: for an empty sample, unequal lengths when paired, or units that are not 0/1.
    References: R. G. Newcombe, "Interval estimation for the difference between independent proportions" and
    "Improved confidence intervals for the difference between binomial proportions based on paired data",
    Statistics in Medicine 17 (1998) 873-890 and 2635-2650.
    """
    x, y = (np.asarray(u).ravel() for u in (first, second))
    if x.size == 0 or y.size == 0 or (paired and x.shape != y.shape):
        raise ValueError(f"a difference of proportions needs two non-empty samples (equal when paired), got {x.size} "
                         f"and {y.size} units")
    if not (np.isin(x, (0, 1)).all() and np.isin(y, (0, 1)).all()):
        raise ValueError("a proportion's units must be 0/1 (or booleans)")
    confidence = current_confidence() if confidence is None else confidence
    x, y = x.astype(bool), y.astype(bool)
    p1, p2 = x.mean(), y.mean()
    (l1, u1), (l2, u2) = _wilson(int(x.sum()), x.size, confidence), _wilson(int(y.sum()), y.size, confidence)
    phi = 0.0
    if paired:  # the pairs' correlation, continuity-corrected as in Newcombe's method 10
        a, b, c, d = (int(v) for v in ((x & y).sum(), (x & ~y).sum(), (~x & y).sum(), (~x & ~y).sum()))
        denominator = (a + b) * (c + d) * (a + c) * (b + d)
        cross = a * d - b * c
        corrected = cross - x.size / 2 if cross > x.size / 2 else min(cross, 0)
        phi = corrected / np.sqrt(denominator) if denominator else 0.0
    low = p1 - p2 - np.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    high = p1 - p2 + np.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    method = ("Newcombe score interval for paired proportions (method 10)" if paired
              else "Newcombe hybrid score interval for independent proportions (method 10)")
    return Estimate(value=float(p1 - p2), low=float(max(low, -1.0)), high=float(min(high, 1.0)), confidence=confidence,
                    n=int(min(x.size, y.size)), method=method)


def _wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """Wilson's score interval of k successes in n (two-sided, at ``confidence``)."""
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)
