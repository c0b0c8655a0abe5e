"""Self-tests of latent_instruments.spectra on signals of known spectrum."""

import math

import numpy as np

import pytest
import torch
from hypothesis import example, given, settings, strategies as st

from latent_instruments.errors import NonFiniteError
from latent_instruments.clean_law import clean_law_scatter, expected_periodogram, periodograms_averaged
from latent_instruments.spectra import (PER_DECADE, LogBins, fit_power_law, largest_excess, low_band_share,
                                        power_spectral_density)

alphas = st.floats(min_value=0.0, max_value=3.0)


def power_law_signal(alpha: float, seq: int = 257, batch: int = 4, d_model: int = 8, seed: int = 0) -> torch.Tensor:
    """(batch, seq, d_model) whose |rfft|^2 along seq is exactly f^-alpha (random phases, fixed amplitudes).

    One extra leading position is prepended, since the PSD drops the first position.
    """
    n = seq - 1
    freqs = torch.fft.rfftfreq(n, dtype=torch.float64)
    amplitude = torch.zeros_like(freqs)
    amplitude[1:] = freqs[1:] ** (-alpha / 2)
    g = torch.Generator().manual_seed(seed)
    phase = torch.rand(batch, freqs.numel(), d_model, generator=g, dtype=torch.float64) * 2 * math.pi
    spectrum = amplitude[None, :, None] * torch.exp(1j * phase)
    spectrum[:, -1] = amplitude[-1]  # the Nyquist bin of an even length must be real
    signal = torch.fft.irfft(spectrum, n=n, dim=1)
    return torch.cat([torch.zeros(batch, 1, d_model, dtype=torch.float64), signal], dim=1)


def fit(signal: torch.Tensor, window=None):
    freqs, psd = power_spectral_density(signal, window=window)
    bins = LogBins.of(freqs)
    return bins, psd, fit_power_law(bins, psd.mean(0))


@given(alpha=alphas)
@example(alpha=0.0)
@example(alpha=1.0)
@settings(max_examples=25, deadline=None)
def test_power_law_signal_gives_back_its_exponent_and_no_scatter(alpha):
    _, _, law = fit(power_law_signal(alpha))
    assert float(law.slope) == pytest.approx(-alpha, abs=1e-6)
    assert float(law.deviation) < 1e-6  # straight whatever the slope: a shallow law is as straight as a steep one


def test_span_counts_decades_of_the_fitted_line():
    bins, _, law = fit(power_law_signal(2.0, seq=1025))
    nonzero = bins.freqs[bins.freqs > 0]
    assert float(law.span_decades) == pytest.approx(2.0 * math.log10(nonzero.max() / nonzero.min()), rel=1e-6)


def test_log_bins_spread_the_fit_over_the_band():
    """127 positions: linear bins put 57 of 63 frequencies in the top decade; log bins give each decade its share."""
    bins = LogBins.of(torch.fft.rfftfreq(127, dtype=torch.float64))
    top_decade = bins.centers > bins.freqs.max() / 10
    assert top_decade.sum() <= PER_DECADE + 1 and bins.centers.size >= 12
    assert bins.low.any() and bins.high.any() and not (bins.low & bins.high).any()


def test_white_noise_is_flat():
    _, _, law = fit(torch.randn(64, 513, 32, generator=torch.Generator().manual_seed(1)))
    assert abs(float(law.slope)) < 0.05


def test_a_low_frequency_bump_scatters_about_the_law_and_is_a_spike():
    clean = power_law_signal(1.0)
    bumped = clean.clone()
    positions = torch.arange(bumped.shape[1], dtype=torch.float64)
    bumped += 30 * torch.sin(2 * math.pi * 3 * positions / 256)[None, :, None]
    _, _, straight = fit(clean)
    bins, psd, curved = fit(bumped)
    assert float(curved.deviation) > float(straight.deviation) + 0.1
    size, where = largest_excess(bins, psd.mean(0), curved)
    assert float(size) > 0.5 and float(where) == pytest.approx(3 / 256, rel=0.05)


def test_hann_window_removes_the_leakage_of_a_slow_drift():
    """A linear drift leaks ~f^-2 power over the whole band without a window; with Hann and the mean removed the
    high band is back at the level of the white noise beneath."""
    noise = torch.randn(16, 257, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    drifting = noise + 0.2 * torch.arange(257, dtype=torch.float64)[None, :, None]
    freqs, clean = power_spectral_density(noise, window="hann")
    high = LogBins.of(freqs).high
    _, raw = power_spectral_density(drifting)
    _, windowed = power_spectral_density(drifting, window="hann")
    level = float(clean.mean(0)[high].mean())
    assert float(raw.mean(0)[high].mean()) > 3 * level
    assert float(windowed.mean(0)[high].mean()) == pytest.approx(level, rel=0.05)


def test_low_band_share_of_white_noise_follows_the_count_of_its_frequencies():
    noise = torch.randn(64, 513, 16, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    freqs, psd = power_spectral_density(noise)
    bins = LogBins.of(freqs)
    expected = bins.low.sum() / (bins.freqs > 0).sum()
    assert float(low_band_share(bins, psd.mean(0))) == pytest.approx(expected, rel=0.1)


def test_nan_is_an_error_not_a_number():
    hidden = torch.zeros(2, 16, 4)
    hidden[0, 5, 1] = float("nan")
    with pytest.raises(NonFiniteError, match="NaN"):
        power_spectral_density(hidden)


@pytest.mark.parametrize("shape", [(16, 4), (2, 3, 4)])
def test_bad_shapes_are_refused(shape):
    with pytest.raises(ValueError):
        power_spectral_density(torch.zeros(shape))


def test_non_finite_entries_are_counted_across_the_pieces_of_a_large_tensor(monkeypatch):
    """require_finite checks a large table piece by piece (bounded temporaries); the count covers every piece."""
    import latent_instruments.errors as errors
    monkeypatch.setattr(errors, "_CHECKED_PER_PIECE", 7)
    table = torch.zeros(4, 10, dtype=torch.float16)
    errors.require_finite(table, "a finite table")
    table[0, 1], table[2, 3], table[3, 9] = float("nan"), float("inf"), -float("inf")
    with pytest.raises(NonFiniteError, match="holds 3 non-finite value"):
        errors.require_finite(table, "the table")
    with pytest.raises(NonFiniteError, match="holds 2 non-finite"):  # columns 0, 3, 6, 9: the inf and the -inf
        errors.require_finite(table[:, ::3].T, "a strided view")  # not contiguous: checked on a copy


# --- S0.6/S0.7's clean law -----------------------------------------------------------------------------------------


def test_the_expected_periodogram_is_the_mean_of_cut_power_law_sequences():
    """The cut's leakage included: the mean |rfft|² of many Gaussian sequences cut from a longer circular one with
    power f^-2 matches :func:`expected_periodogram` up to one scale (relative spread ~ 1/sqrt(draws))."""
    length, slope, draws = 127, -2.0, 4000
    circle = torch.fft.rfftfreq(4 * length, dtype=torch.float64)
    amplitude = torch.zeros_like(circle)
    amplitude[1:] = circle[1:] ** (slope / 2)
    g = torch.Generator().manual_seed(0)
    noise = torch.complex(*(torch.randn(draws, circle.numel(), generator=g, dtype=torch.float64) for _ in range(2)))
    x = torch.fft.irfft(noise * amplitude, n=4 * length, dim=1)[:, :length + 1, None]  # +1: the first is dropped
    measured = power_spectral_density(x)[1].mean(0).numpy()[1:]
    ratio = measured / expected_periodogram(slope, length)[1:]
    assert ratio.std() / ratio.mean() < 0.05
    circular = (circle[1:] ** slope).numpy()  # a circular sequence's law, no leakage: visibly not the cut's
    assert ratio.std() / ratio.mean() < 0.2 * np.std(np.log(measured / np.interp(np.fft.rfftfreq(length)[1:],
                                                                                    circle[1:].numpy(), circular)))


def test_a_white_spectrum_tells_how_many_periodograms_it_averages():
    rng = np.random.default_rng(0)
    white = rng.gamma(50.0, 1 / 50.0, size=(8, 1024)).mean(axis=0)  # 8 sequences × 50 periodograms each
    assert periodograms_averaged(white) == pytest.approx(400, rel=0.15)
    with pytest.raises(ValueError, match="at least 3 frequencies"):
        periodograms_averaged(np.ones(4))


def test_a_clean_laws_scatter_falls_with_averaging_and_a_bent_law_exceeds_it():
    bins = LogBins.of(np.fft.rfftfreq(2047))
    few, many = (np.quantile(clean_law_scatter(bins, -0.5, m, seed=0), 0.95) for m in (10, 1000))
    assert many < few / 5  # scatter ~ 1/sqrt(m)
    f = np.where(bins.freqs > 0, bins.freqs, 1.0)
    bent = f ** -0.5 * (1 + np.exp(-((np.log10(f) + 2) / 0.2) ** 2))  # a bump on the law
    assert float(fit_power_law(bins, bent).deviation) > 5 * many  # its bend, not noise
    with pytest.raises(ValueError, match="at least 1 periodogram"):
        clean_law_scatter(bins, -0.5, 0.5, seed=0)


def test_the_fits_cached_abscissa_gives_what_the_formulas_give_afresh():
    """``LogBins`` keeps what every fit reuses (log10 of the centers, the bend's basis, the non-zero frequencies as a
    slice): a fit, a bend and a spike must equal those computed from the bins' fields afresh, bit for bit, also where
    the used frequencies are not the last ones (a mask, not a slice)."""
    from latent_instruments.spectra import _as_slice, power_law_bend

    assert _as_slice(np.array([False, True, True])) == slice(1, None)
    gap = np.array([False, True, False, True])
    assert _as_slice(gap) is gap
    bins = LogBins.of(np.fft.rfftfreq(127))
    psd = np.exp(np.random.default_rng(0).normal(size=(3, 5, bins.freqs.size)))
    used = bins.weights.sum(axis=1) > 0
    logs = np.zeros_like(psd)
    logs[..., used] = np.log10(psd[..., used])
    y, x = logs @ bins.weights, np.log10(bins.centers)
    dx = x - x.mean()
    slope = (y - y.mean(axis=-1, keepdims=True)) @ dx / (dx @ dx)
    fit = fit_power_law(bins, psd)
    assert np.array_equal(fit.slope, slope) and np.array_equal(fit.intercept, y.mean(axis=-1) - slope * x.mean())
    square = dx ** 2 - (dx ** 2).mean() - ((dx ** 2) @ dx / (dx @ dx)) * dx
    assert np.array_equal(power_law_bend(bins, psd), (y - y.mean(axis=-1, keepdims=True)) @ square / (square @ square))
    f = bins.freqs[bins.freqs > 0]
    above = np.log10(psd[..., bins.freqs > 0]) - (fit.slope[..., None] * np.log10(f) + fit.intercept[..., None])
    assert np.array_equal(largest_excess(bins, psd, fit)[0], above.max(axis=-1))
    masked = LogBins(bins.freqs, np.where(np.arange(bins.freqs.size)[:, None] == 2, 0.0, bins.weights), bins.centers,
                     bins.low, bins.high)  # frequency 2 in no bin: the used ones are a mask
    assert isinstance(masked._used, np.ndarray)
    kept = masked.weights.sum(axis=1) > 0
    logs = np.zeros_like(psd)
    logs[..., kept] = np.log10(psd[..., kept])
    assert np.array_equal(masked.log_power(psd), logs @ masked.weights)
