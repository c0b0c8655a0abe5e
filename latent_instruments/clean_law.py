"""The scatter an exactly straight power law shows through a finite cut (S0.6's and S0.7's clean-law readings).

A law known to be straight, f^slope, measured as S0 measures (a finite sequence's periodogram averaged over
sequences and d_model, judged on log-spaced bins), still scatters about its fitted line and still bends: the cut
leaks power across frequencies, and an average of finitely many periodograms keeps some noise. These functions give
that scatter and bend, so that a measured one is compared with what a clean law shows at the same length and not
with zero. The spectra themselves: :mod:`latent_instruments.spectra`.
"""

import numpy as np
import torch

from latent_instruments.spectra import LogBins, as_float64, fit_power_law, power_law_bend

CLEAN_LAW_DRAWS = 400  # draws of the clean law's scatter: its 95th percentile to about ±3 %
CLEAN_LAW_QUANTILE = 0.95  # the tolerance: a law known to be straight scatters less 95 times in 100
SYNTHESIS_LENGTH = 4  # the law is that of a circular process this many times longer than the sequence, cut to
# the sequence's length: the cut leaks power across frequencies as a real finite sequence's does


def periodograms_averaged(white_psd) -> float:
    """How many independent periodograms a mean spectrum is worth, read off a white spectrum of the same states.

    A white (exchangeable) sequence's power has one expectation at every non-zero frequency, so the spread of the
    mean spectrum across frequencies is the estimator's alone: an average of m independent exponential ordinates
    has relative variance 1/m. Measured on the states with their positions shuffled (every token's state kept,
    the order destroyed), it counts what the average over sequences and d_model is worth for these states,
    heavy tails and correlated channels included (S0.6, S0.7's clean law).

    Args:
        white_psd: (..., n_freq) mean power of the shuffled states (DC first; the Nyquist ordinate, whose law
            differs, is left out with DC).
    Returns:
        m (...,), at least 1.
    Raises:
        ValueError: if fewer than 3 frequencies lie strictly between DC and Nyquist.
    """
    x = as_float64(white_psd)[..., 1:-1]
    if x.shape[-1] < 3:
        raise ValueError(f"need at least 3 frequencies between DC and Nyquist, got {x.shape[-1]}")
    return np.maximum(1.0, x.mean(axis=-1) ** 2 / x.var(axis=-1))


def expected_periodogram(slope: float, length: int) -> np.ndarray:
    """E|rfft|² of ``length`` consecutive samples of a stationary Gaussian process with power ∝ f^slope.

    The process is circular over ``SYNTHESIS_LENGTH`` × ``length`` samples; its autocovariance r(τ) is the
    inverse rfft of the law, and the cut's periodogram has mean Σ_τ (length − |τ|) r(τ) cos(2π f τ) at each
    rfft frequency f of the cut (the law seen through the cut's leakage; any scale).

    Args:
        slope: the law's exponent (log-log slope; 0 is white).
        length: samples in the cut (a sequence's positions after the first is dropped).
    Returns:
        (length // 2 + 1,) positive expected power, float64, at ``torch.fft.rfftfreq(length)``.
    """
    circle = torch.fft.rfftfreq(SYNTHESIS_LENGTH * length, dtype=torch.float64)
    law = torch.zeros_like(circle)
    law[1:] = circle[1:] ** slope
    r = torch.fft.irfft(law, n=SYNTHESIS_LENGTH * length)[:length].numpy()  # r(τ), τ = 0 .. length − 1
    lags = np.arange(length)
    weights = (length - lags) * r * np.where(lags > 0, 2.0, 1.0)  # τ and −τ together
    freqs = np.fft.rfftfreq(length)
    return np.cos(2 * np.pi * np.outer(freqs, lags)) @ weights


def straight_law_bend(bins: LogBins, slope: float) -> float:
    """The bend (:func:`power_law_bend`) an exactly straight law f^slope shows through a finite cut: the leakage of
    ``expected_periodogram`` bends it at the low end of the band, more at 128 positions than at 2048 (a law of slope
    −1.77: 0.057 at 127, 0.017 at 2047). S0.6 subtracts it, so that a straight law reads 0 at any length.

    Args:
        bins: the measured spectrum's :class:`LogBins`; the length is read from its frequency grid.
        slope: the law's exponent (the measured spectrum's fitted slope).
    Returns:
        c, decades per decade².
    """
    return float(power_law_bend(bins, expected_periodogram(slope, bins.length)))


def ordinate_shapes(length: int, averaged: float) -> np.ndarray:
    """The Gamma shape of each rfft ordinate of a mean of ``averaged`` periodograms of ``length`` positions,
    (length // 2 + 1,): ``averaged`` (each periodogram's ordinate is exponential, χ²₂), except the Nyquist ordinate
    of an even length, which is real (χ²₁ per periodogram): ``averaged / 2``."""
    shape = np.full(length // 2 + 1, float(averaged))
    if length % 2 == 0:
        shape[-1] = averaged / 2
    return shape


def clean_law_scatter(bins: LogBins, slope: float, averaged: float, seed: int,
                      draws: int = CLEAN_LAW_DRAWS) -> np.ndarray:
    """How far a law known to be straight scatters about its line at this length: S0.6/S0.7's tolerance.

    A Gaussian process whose power is exactly ∝ f^slope, seen through S0's procedure: the cut's expected
    periodogram (:func:`expected_periodogram`, the leakage of a finite sequence included) times the
    fluctuation of an average of ``averaged`` independent periodograms (each ordinate exponential, so the
    average is Gamma(averaged, 1/averaged); at the Nyquist frequency χ²₁-based), then ``bins`` and
    :func:`fit_power_law`. What scatter remains is the estimator's and the cut's, never the law's: S0's "clean
    power law" at this length and averaging.

    Args:
        bins: the measured spectrum's :class:`LogBins`; the length is read from its frequency grid.
        slope: the exponent fitted to the measured spectrum (log-log slope).
        averaged: independent periodograms the measured mean is worth (:func:`periodograms_averaged` of the
            same states shuffled); at least 1.
        seed: seeds the draws.
        draws: independent repetitions.
    Returns:
        (draws,) scatter about the fitted line, decades.
    Raises:
        ValueError: if ``averaged`` is below 1.
    """
    if averaged < 1:
        raise ValueError(f"averaged must be at least 1 periodogram, got {averaged}")
    mean, shape = expected_periodogram(slope, bins.length), ordinate_shapes(bins.length, averaged)
    rng = np.random.default_rng(seed)
    noise = rng.gamma(shape, 1.0 / shape, size=(draws, shape.size))
    return fit_power_law(bins, mean * noise).deviation
