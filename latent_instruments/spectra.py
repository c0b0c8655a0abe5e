"""Power spectral density along the sequence axis, and how close it is to a power law (S0).

Source S0 computes, for hidden states of shape (batch, seq, d_model), the rfft
along the sequence axis and averages the power over batch and hidden
dimensions, first token dropped. Its snippet writes ``fft**2`` (a complex
square); this module uses the power |rfft|², which is what the plotted spectra
show.

A spectrum is judged on **log-spaced bins** (:class:`LogBins`): with 127
positions, 57 of the 63 linearly spaced frequencies lie in the top decade, so a
fit over them would judge straightness almost only at high frequencies.
Straightness is the **scatter about the log-log line** (RMS residual, in
decades), kept apart from the line's slope and span: R² would mix them (a
straight but shallow law has a low R²).
"""

import functools
from dataclasses import dataclass

import numpy as np
import torch

from latent_instruments.errors import NonFiniteError, require_finite

PER_DECADE = 8  # log-spaced bins per decade of frequency: 14 non-empty bins for 127 positions, 22 for 2047


def as_float64(x) -> np.ndarray:
    """float64 numpy copy of a tensor (from any device) or array; never through torch.as_tensor, which would put
    an array on torch's default device."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def power_spectral_density(hidden: torch.Tensor, drop_first: int = 1, window: str | None = None
                           ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sequence power spectral density along the sequence axis.

    Args:
        hidden: hidden states, shape (batch, seq, d_model), any float dtype.
        drop_first: leading positions to drop before the transform (S0 drops
            the first token, whose state is an outlier in most models).
        window: None for S0's procedure (no window, mean kept); "hann" removes
            each sequence's mean per hidden dimension and applies a Hann window,
            so that a slow drift cannot leak ~f⁻² power across the band. The
            power is divided by the window's mean square, keeping its scale.
    Returns:
        (freqs, psd): freqs shape (n_freq,), in cycles per token, from
        ``torch.fft.rfftfreq``; psd shape (batch, n_freq), float64, the power
        |rfft|² averaged over d_model (one spectrum per sequence, so callers
        can bootstrap over sequences). Both on ``hidden``'s device.
    Raises:
        ValueError: if ``hidden`` is not 3-d, fewer than 4 positions remain, or the window is unknown.
        NonFiniteError: if ``hidden`` holds NaN or inf.
    """
    if hidden.dim() != 3:
        raise ValueError(f"hidden must be (batch, seq, d_model), got shape {tuple(hidden.shape)}")
    if window not in (None, "hann"):
        raise ValueError(f"unknown window {window!r}; use None (S0's procedure) or 'hann'")
    x = hidden[:, drop_first:, :].double()
    if x.shape[1] < 4:
        raise ValueError(f"need at least 4 positions after dropping {drop_first}, got {x.shape[1]}")
    require_finite(x, "hidden states")
    scale = 1.0
    if window == "hann":
        w = torch.hann_window(x.shape[1], periodic=False, dtype=x.dtype, device=x.device)
        x = (x - x.mean(dim=1, keepdim=True)) * w[None, :, None]
        scale = w.square().mean().item()
    spectrum = torch.fft.rfft(x, dim=1)  # (batch, n_freq, d_model)
    psd = spectrum.abs().square().mean(dim=2) / scale  # (batch, n_freq)
    return torch.fft.rfftfreq(x.shape[1], dtype=torch.float64, device=x.device), psd


def _as_slice(mask: np.ndarray) -> slice | np.ndarray:
    """A bool mask over the last axis as a slice where it selects the last entries (an rfft's non-zero
    frequencies: indexing by it is a view, not a copy), else the mask itself."""
    first = int(np.argmax(mask))
    return slice(first, None) if mask[first:].all() and not mask[:first].any() else mask


@dataclass(frozen=True)
class LogBins:
    """Log-spaced frequency bins over the non-zero frequencies of an rfft.

    Attributes:
        freqs: (n_freq,) every rfft frequency in cycles per token (the DC bin included, never used).
        weights: (n_freq, n_bins) averaging matrix: column b averages the power of the frequencies in bin b.
        centers: (n_bins,) each bin's geometric-mean frequency, cycles per token.
        low: (n_freq,) bool, the low band: non-zero frequencies in the lowest third of the band in log f.
        high: (n_freq,) bool, the high band: the top third in log f.
    """

    freqs: np.ndarray
    weights: np.ndarray
    centers: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def of(cls, freqs, per_decade: int = PER_DECADE) -> "LogBins":
        """Bins of ``per_decade`` equal steps in log10 f; empty bins dropped.

        Raises:
            ValueError: if fewer than 3 bins are non-empty (too few positions for a power-law fit).
        """
        freqs = as_float64(freqs)
        nonzero = np.flatnonzero(freqs > 0)
        logf = np.log10(freqs[nonzero])
        index = np.floor((logf - logf[0]) * per_decade + 1e-9).astype(int)
        used = np.unique(index)
        if used.size < 3:
            raise ValueError(f"{freqs.size} frequencies give {used.size} log-spaced bins; need at least 3")
        weights = np.zeros((freqs.size, used.size))
        for b, bin_index in enumerate(used):
            members = nonzero[index == bin_index]
            weights[members, b] = 1.0 / members.size
        centers = 10 ** (np.log10(np.where(freqs > 0, freqs, 1.0)) @ weights)  # geometric mean of each bin
        third = (logf[-1] - logf[0]) / 3
        low, high = np.zeros(freqs.size, bool), np.zeros(freqs.size, bool)
        low[nonzero[logf <= logf[0] + third + 1e-12]] = True
        high[nonzero[logf >= logf[-1] - third - 1e-12]] = True
        return cls(freqs, weights, centers, low, high)

    @property
    def length(self) -> int:
        """Samples in the sequence whose rfft the frequencies are (an even length ends at the Nyquist frequency)."""
        return 2 * (self.freqs.size - 1) + (0 if np.isclose(self.freqs[-1], 0.5) else 1)

    # What every fit on these bins reuses, computed on first use (a bootstrap fits about a thousand resamples).
    @functools.cached_property
    def band_decades(self) -> float:
        """Decades of frequency the non-zero bins cover, log10(f_max / f_min) (S0 at 2047 positions: 3.0)."""
        nonzero = self.freqs[self.freqs > 0]
        return float(np.log10(nonzero.max() / nonzero.min()))

    @functools.cached_property
    def _used(self) -> slice | np.ndarray:
        """The frequencies some bin averages (:func:`_as_slice`)."""
        return _as_slice(self.weights.sum(axis=1) > 0)

    @functools.cached_property
    def nonzero(self) -> tuple[slice | np.ndarray, np.ndarray]:
        """(index, log10 f) of the non-zero frequencies (index: :func:`_as_slice`)."""
        index = _as_slice(self.freqs > 0)
        return index, np.log10(self.freqs[index])

    @functools.cached_property
    def log_centers(self) -> tuple[np.ndarray, float, np.ndarray, float]:
        """(x, x̄, x − x̄, Σ(x − x̄)²) of x = log10 of the bin centers: the abscissa of every power-law fit."""
        x = np.log10(self.centers)
        dx = x - x.mean()
        return x, x.mean(), dx, dx @ dx

    @functools.cached_property
    def bend_basis(self) -> tuple[np.ndarray, float]:
        """(s, Σs²): the x̄-centred square of x = log10 of the bin centers, orthogonal to 1 and x, that
        :func:`power_law_bend` projects on."""
        _, _, dx, dx_squared = self.log_centers
        square = dx ** 2 - (dx ** 2).mean() - ((dx ** 2) @ dx / dx_squared) * dx
        return square, square @ square

    def log_power(self, psd) -> np.ndarray:
        """Mean log10 power in each bin, (..., n_bins), of a positive psd (..., n_freq).

        Averaging the logarithm (of spectra already averaged over d_model and sequences) keeps an exact
        power law exactly straight on the binned axis, whose bin centers are geometric means.

        Raises:
            ValueError: if a power at a non-zero frequency is not positive.
        """
        psd = np.asarray(psd, dtype=np.float64)
        used = self._used
        if (psd[..., used] <= 0).any():
            raise ValueError("power spectral density must be positive to take its logarithm")
        logs = np.zeros_like(psd)
        logs[..., used] = np.log10(psd[..., used])
        return logs @ self.weights


@dataclass(frozen=True)
class PowerLawFit:
    """Least-squares line through a log-binned spectrum in log10-log10 space (arrays over leading dims).

    Attributes:
        slope: exponent of psd ~ f^slope (dimensionless; -1 for pink noise, 0 for white).
        intercept: log10 power at f = 1 cycle/token.
        deviation: RMS distance of the binned log10 power from the line, in decades: the
            straightness of S0.3 (0 for an exact power law, whatever its slope).
        span_decades: |slope| × the band's decades, the "orders of magnitude" the law spans (S0.4).
    """

    slope: np.ndarray
    intercept: np.ndarray
    deviation: np.ndarray
    span_decades: np.ndarray


def fit_power_law(bins: LogBins, psd) -> PowerLawFit:
    """Fit the bins' mean log10 psd = slope · log10 f + intercept, each log-spaced bin weighing the same.

    Args:
        bins: the spectrum's :class:`LogBins`.
        psd: (..., n_freq) positive power, numpy or torch (moved to the CPU).
    Returns:
        PowerLawFit with fields of shape (...).
    Raises:
        ValueError: if a binned power is not positive.
        NonFiniteError: if psd holds NaN or inf.
    """
    psd = as_float64(psd)
    if not np.isfinite(psd).all():
        raise NonFiniteError(f"power spectral density holds {'NaN' if np.isnan(psd).any() else 'inf'}")
    (x, x_mean, dx, dx_squared), y = bins.log_centers, bins.log_power(psd)
    # closed-form least squares: LAPACK's lstsq differs in the last bit from call to call on CPU, which
    # would make a serial and a pytest-xdist run disagree
    slope = (y - y.mean(axis=-1, keepdims=True)) @ dx / dx_squared
    intercept = y.mean(axis=-1) - slope * x_mean
    residual = y - (slope[..., None] * x + intercept[..., None])
    return PowerLawFit(slope, intercept, np.sqrt(np.mean(residual ** 2, axis=-1)),
                       np.abs(slope) * bins.band_decades)


def power_law_bend(bins: LogBins, psd) -> np.ndarray:
    """The bend of a log-binned spectrum: the curvature c of y = a + b·x + c·(x − x̄)² fitted in log10-log10.

    S0.6's "nearly straight": an exact power law has c = 0 at any length. Unlike the scatter about the line
    (``PowerLawFit.deviation``), which an estimator's noise inflates and which shrinks as more sequences are
    averaged, the fitted curvature has no such floor: noise widens its interval but does not move it, so a bend
    of fixed size reads the same at 8 × 128 and at 8 × 2048. Each log-spaced bin weighs the same, as in
    :func:`fit_power_law`.

    Args:
        bins: the spectrum's :class:`LogBins`.
        psd: (..., n_freq) positive power, numpy or torch.
    Returns:
        (...) c, decades of log10 power per decade² of frequency (positive: the spectrum bends up at both ends
        of the band, like a valley; negative: like a hill). Over a band of D decades the parabola departs from
        its chord by |c|·D²/4 at the middle.
    Raises:
        ValueError: if a binned power is not positive, or there are fewer than 4 bins (a parabola needs 3 and a
            residual).
    """
    if bins.centers.size < 4:
        raise ValueError(f"a bend needs at least 4 log-spaced bins, got {bins.centers.size}")
    square, square_squared = bins.bend_basis
    y = bins.log_power(as_float64(psd))
    return (y - y.mean(axis=-1, keepdims=True)) @ square / square_squared


def largest_excess(bins: LogBins, psd, fit: PowerLawFit, band: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The largest rise of the full-resolution spectrum above its fitted law: a spike (S0.8, S0.9).

    Args:
        bins: the spectrum's :class:`LogBins`.
        psd: (..., n_freq) positive power.
        fit: ``fit_power_law(bins, psd)``.
        band: (n_freq,) bool, the frequencies to search (e.g. ``bins.low``); default every non-zero one.
    Returns:
        (excess, freq): (...) the largest log10 psd − line over the band, in decades, and the
        frequency where it is, in cycles per token.
    """
    psd = as_float64(psd)
    if band is None:
        search, log_f = bins.nonzero
    else:
        search = (bins.freqs > 0) & np.asarray(band, bool)
        log_f = np.log10(bins.freqs[search])
    f = bins.freqs[search]
    above = np.log10(psd[..., search]) - (fit.slope[..., None] * log_f + fit.intercept[..., None])
    return above.max(axis=-1), f[above.argmax(axis=-1)]


def low_band_share(bins: LogBins, psd) -> np.ndarray:
    """Fraction of the power at non-zero frequencies that lies in the low band (lowest third of log f), (...)."""
    psd = as_float64(psd)
    nonzero = bins.freqs > 0
    return psd[..., bins.low].sum(axis=-1) / psd[..., nonzero].sum(axis=-1)
