"""Self-tests of latent_instruments.spectra on signals of known spectrum."""

import math

import pytest
import torch
from hypothesis import example, given, settings, strategies as st

from latent_instruments.errors import NonFiniteError
from latent_instruments.spectra import fit_power_law, power_spectral_density

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


@given(alpha=alphas)
@example(alpha=0.0)
@example(alpha=1.0)
@settings(max_examples=25, deadline=None)
def test_power_law_signal_gives_back_its_exponent(alpha):
    freqs, psd = power_spectral_density(power_law_signal(alpha))
    fit = fit_power_law(freqs, psd.mean(0))
    assert fit.slope == pytest.approx(-alpha, abs=1e-6)
    assert fit.rms_residual < 1e-6
    if alpha > 0.1:
        assert fit.r_squared == pytest.approx(1.0, abs=1e-6)


def test_span_counts_decades_of_the_fitted_line():
    freqs, psd = power_spectral_density(power_law_signal(2.0, seq=1025))
    fit = fit_power_law(freqs, psd.mean(0))
    expected = 2.0 * math.log10(freqs[-1].item() / freqs[1].item())
    assert fit.span_decades == pytest.approx(expected, rel=1e-6)


def test_white_noise_is_flat():
    noise = torch.randn(64, 513, 32, generator=torch.Generator().manual_seed(1))
    freqs, psd = power_spectral_density(noise)
    fit = fit_power_law(freqs, psd.mean(0))
    assert abs(fit.slope) < 0.05
    assert fit.r_squared < 0.2  # straight, but no power law: R² sees that


def test_a_low_frequency_bump_is_less_straight():
    clean = power_law_signal(1.0)
    bumped = clean.clone()
    positions = torch.arange(bumped.shape[1], dtype=torch.float64)
    bumped += 30 * torch.sin(2 * math.pi * 3 * positions / 256)[None, :, None]
    freqs, psd_clean = power_spectral_density(clean)
    _, psd_bumped = power_spectral_density(bumped)
    straight, curved = fit_power_law(freqs, psd_clean.mean(0)), fit_power_law(freqs, psd_bumped.mean(0))
    assert curved.rms_residual > straight.rms_residual + 0.1
    assert curved.r_squared < straight.r_squared - 0.1


def test_nan_is_an_error_not_a_number():
    hidden = torch.zeros(2, 16, 4)
    hidden[0, 5, 1] = float("nan")
    with pytest.raises(NonFiniteError, match="NaN"):
        power_spectral_density(hidden)


@pytest.mark.parametrize("shape", [(16, 4), (2, 3, 4)])
def test_bad_shapes_are_refused(shape):
    with pytest.raises(ValueError):
        power_spectral_density(torch.zeros(shape))
