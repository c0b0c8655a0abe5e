"""What a final normalisation layer does to input scale and direction (S4.5)."""

import copy

import torch

from latent_instruments.errors import require_finite


def relative_norm_change(norm: torch.nn.Module, x: torch.Tensor, x_other: torch.Tensor) -> torch.Tensor:
    """| ||norm(x_other)|| - ||norm(x)|| | / ||norm(x)||, per vector.

    Args:
        norm: a normalisation module (LayerNorm, RMSNorm) over the last axis.
        x, x_other: inputs, shape (n, d_model).
    Returns:
        shape (n,), dimensionless (0.01 = 1 %).
    Raises:
        NonFiniteError: if an input or output holds NaN or inf.
    """
    require_finite(x, "normalisation input")
    require_finite(x_other, "perturbed normalisation input")
    with torch.no_grad():
        a = norm(x).double().norm(dim=-1)
        b = norm(x_other).double().norm(dim=-1)
    require_finite(a, "normalisation output norm")
    return (b - a).abs() / a


def rotate_to_cosine(x: torch.Tensor, cosine: float, generator: torch.Generator) -> torch.Tensor:
    """Vectors at exactly the given cosine to ``x``, with the same norm.

    Mixes each row of ``x`` with a random direction orthogonal to it, so the
    direction change of S4.5 (cosine 0.52) is reached exactly rather than by
    the source's noise level.

    Args:
        x: shape (n, d_model).
        cosine: target cosine similarity in [-1, 1].
        generator: seeds the random orthogonal directions; the noise is drawn
            on the generator's device and moved to x's, so a seed gives the
            same directions whatever device x is on.
    Returns:
        shape (n, d_model), float of x's dtype, on x's device.
    Raises:
        ValueError: if cosine is outside [-1, 1].
    """
    if not -1.0 <= cosine <= 1.0:
        raise ValueError(f"cosine must be in [-1, 1], got {cosine}")
    x64 = x.double()
    unit = x64 / x64.norm(dim=-1, keepdim=True)
    # Drawn on the generator's device, then moved: same seed, same numbers on every device of x.
    noise = torch.randn(x.shape, generator=generator, dtype=torch.float64, device=generator.device).to(x.device)
    ortho = noise - (noise * unit).sum(-1, keepdim=True) * unit
    ortho = ortho / ortho.norm(dim=-1, keepdim=True)
    sine = (1.0 - cosine**2) ** 0.5
    turned = cosine * unit + sine * ortho
    return (turned * x64.norm(dim=-1, keepdim=True)).to(x.dtype)


def _gain(norm: torch.nn.Module) -> torch.Tensor | None:
    """The learned per-dimension gain of a LayerNorm or RMSNorm (its ``weight``), or None without one.

    Raises:
        ValueError: for a norm that scales by (1 + weight) (Gemma's RMSNorm), whose ``weight`` is not the gain.
    """
    if "gemma" in type(norm).__name__.lower():
        raise ValueError(f"{type(norm).__name__} scales by (1 + weight); its gain is not its weight")
    return getattr(norm, "weight", None)


def gain_unevenness(norm: torch.nn.Module) -> float:
    """Coefficient of variation of the squared gain, std(g²) / mean(g²), over d_model (S4.5).

    A norm's output is g ⊙ z + b with z the normalised input (‖z‖² = d_model for LayerNorm): with an
    even gain (all g_i equal) and no bias its norm is the same for every input direction; the more
    uneven g², the more the output norm depends on which dimensions z loads on. 0 for an even gain
    or none (an untrained norm).

    Args:
        norm: a LayerNorm or RMSNorm over the last axis.
    Returns:
        dimensionless, ≥ 0.
    Raises:
        ValueError: for Gemma's (1 + weight) norm (see ``_gain``).
    """
    gain = _gain(norm)
    if gain is None:
        return 0.0
    squared = gain.detach().double().square()
    return float(squared.std(unbiased=False) / squared.mean())


def with_even_gain(norm: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``norm`` whose gain is replaced by one even gain of the same RMS, bias kept (S4.5).

    The output norm's dependence on direction that remains is the bias's; comparing with the original
    tells how much of it the gain's unevenness causes.

    Raises:
        ValueError: for a norm without a gain, or Gemma's (1 + weight) norm.
    """
    gain = _gain(norm)
    if gain is None:
        raise ValueError(f"{type(norm).__name__} has no gain to even out")
    out = copy.deepcopy(norm)
    with torch.no_grad():
        out.weight.fill_(float(gain.detach().double().square().mean().sqrt()))
    return out


def without_bias(norm: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``norm`` with its bias set to zero (the norm itself where it has none) (S4.5)."""
    out = copy.deepcopy(norm)
    if getattr(out, "bias", None) is not None:
        with torch.no_grad():
            out.bias.zero_()
    return out


def with_concentrated_gain(norm: torch.nn.Module, fraction: float = 1 / 16) -> torch.nn.Module:
    """A copy of ``norm`` whose gain is concentrated on its first ``fraction`` of coordinates, at the same RMS,
    zero elsewhere, bias kept (S4.5's control).

    Such a norm's output norm is the input's standardised mass on those few coordinates, which a change of
    direction moves by far more than 1 %: a measurement of the output norm under a turn that cannot see this
    cannot see any direction dependence, and a pass of S4.5 through it would be vacuous.

    Args:
        norm: a LayerNorm or RMSNorm over the last axis, with a gain (d_model,).
        fraction: the share of coordinates that keep a gain, in (0, 1].
    Raises:
        ValueError: for a norm without a gain, Gemma's (1 + weight) norm, or a fraction outside (0, 1].
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    gain = _gain(norm)
    if gain is None:
        raise ValueError(f"{type(norm).__name__} has no gain to concentrate")
    kept = max(1, round(gain.numel() * fraction))
    rms = float(gain.detach().double().square().mean().sqrt())
    out = copy.deepcopy(norm)
    with torch.no_grad():
        out.weight.zero_()
        out.weight[:kept] = rms * (gain.numel() / kept) ** 0.5
    return out
