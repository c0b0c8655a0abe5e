"""Power spectral density along the sequence axis and its power-law fit (S0).

Source S0 computes, for hidden states of shape (batch, seq, d_model), the rfft
along the sequence axis and averages the power over batch and hidden
dimensions. Its snippet writes ``fft**2`` (a complex square); CLAIMS.md and
this module use the power |rfft|^2, which is what the plotted spectra show.
"""

from dataclasses import dataclass

import torch

from latent_instruments.errors import require_finite


def power_spectral_density(hidden: torch.Tensor, drop_first: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sequence power spectral density along the sequence axis.

    Args:
        hidden: hidden states, shape (batch, seq, d_model), any float dtype.
        drop_first: leading positions to drop before the transform (S0 drops
            the first token, whose state is an outlier in most models).
    Returns:
        (freqs, psd): freqs shape (n_freq,), in cycles per token, from
        ``torch.fft.rfftfreq``; psd shape (batch, n_freq), float64, the power
        |rfft|^2 averaged over d_model (one spectrum per sequence, so callers
        can bootstrap over sequences). Both on ``hidden``'s device.
    Raises:
        ValueError: if fewer than 4 positions remain.
        NonFiniteError: if ``hidden`` holds NaN or inf.
    """
    if hidden.dim() != 3:
        raise ValueError(f"hidden must be (batch, seq, d_model), got shape {tuple(hidden.shape)}")
    x = hidden[:, drop_first:, :].double()
    if x.shape[1] < 4:
        raise ValueError(f"need at least 4 positions after dropping {drop_first}, got {x.shape[1]}")
    require_finite(x, "hidden states")
    spectrum = torch.fft.rfft(x, dim=1)  # (batch, n_freq, d_model)
    psd = spectrum.abs().square().mean(dim=2)  # (batch, n_freq)
    return torch.fft.rfftfreq(x.shape[1], dtype=torch.float64, device=x.device), psd


@dataclass(frozen=True)
class PowerLawFit:
    """Least-squares line through a spectrum in log10-log10 space.

    Attributes:
        slope: exponent -alpha of psd ~ f^slope (dimensionless).
        intercept: log10 power at f = 1 cycle/token.
        rms_residual: root-mean-square distance of log10 psd from the line, in
            decades; 0 for an exact power law.
        r_squared: fraction of the variance of log10 psd that the line explains,
            in [0, 1]: 1 for an exact power law with non-zero exponent, near 0
            for a flat (white) spectrum, which is "straight" only trivially.
            This is the power-law straightness of S0.3.
        span_decades: log10(max psd / min psd) of the fitted line over the
            fitted band, the "orders of magnitude" of S0.4.
    """

    slope: float
    intercept: float
    rms_residual: float
    r_squared: float
    span_decades: float


def fit_power_law(freqs: torch.Tensor, psd: torch.Tensor) -> PowerLawFit:
    """Fit log10 psd = slope * log10 f + intercept over the non-zero frequencies.

    Args:
        freqs: shape (n_freq,), cycles per token; the zero (DC) bin is excluded;
            moved to psd's device, where the fit is computed.
        psd: shape (n_freq,), positive power.
    Returns:
        PowerLawFit of the line.
    Raises:
        ValueError: if fewer than 3 non-zero frequencies, or psd is not positive.
        NonFiniteError: if psd holds NaN or inf.
    """
    require_finite(psd, "power spectral density")
    freqs = freqs.to(psd.device)
    keep = freqs > 0
    f, p = freqs[keep].double(), psd[keep].double()
    if f.numel() < 3:
        raise ValueError("need at least 3 non-zero frequencies to fit a power law")
    if (p <= 0).any():
        raise ValueError("power spectral density must be positive to take its logarithm")
    x, y = torch.log10(f), torch.log10(p)
    # closed-form least squares: LAPACK's lstsq differs in the last bit from call to call on CPU, which
    # would make a serial and a pytest-xdist run disagree
    dx = x - x.mean()
    slope = (dx * (y - y.mean())).sum() / dx.square().sum()
    intercept = y.mean() - slope * x.mean()
    line = slope * x + intercept
    residual = (y - line).square().mean()
    return PowerLawFit(
        slope=slope.item(),
        intercept=intercept.item(),
        rms_residual=residual.sqrt().item(),
        r_squared=(1 - residual / (y - y.mean()).square().mean().clamp_min(1e-300)).item(),
        span_decades=(line.max() - line.min()).item(),
    )
