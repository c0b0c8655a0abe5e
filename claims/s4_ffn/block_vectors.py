"""S4's shared measurements of the vector addition inside blocks (S4.3, S4.4).

S4 ("Transformation via Vector Addition") reads a block as ``x + sa_out +
ffwd_out``: the block input plus the attention output plus the FFN output,
each a vector of the residual stream. The helpers here reduce such vectors,
(batch, seq, d_model), to one number per prompt (the bootstrap unit), over
the positions from ``FIRST_POSITION`` on, and give the cross-token baseline
that a cosine between two of them is read against.

The first position is left out, as in S2 (latent_instruments.geometry): its
attention sees only itself, and in pretrained models it is an outlier (an
attention sink with a huge norm).
"""

import torch

from latent_instruments.errors import require_finite
from latent_instruments.geometry import unit

FIRST_POSITION = 1  # positions before it are left out of every S4.3 / S4.4 statistic
EPS = 1e-12  # floor of a norm before dividing by it (a zero vector has no direction)
# S4's notebook norms and cosines, which S4.3 sets beside these, are in S4.3's home (ffn_output.toml)


def _kept(x: torch.Tensor, what: str) -> torch.Tensor:
    """The kept positions of (batch, seq, d_model) as float32 (float64 kept), checked finite.

    Raises:
        ValueError: if x is not (batch, seq, d_model) or no position is left.
        NonFiniteError: if x holds NaN or inf.
    """
    if x.dim() != 3 or x.shape[1] <= FIRST_POSITION:
        raise ValueError(f"{what}: expected (batch, seq > {FIRST_POSITION}, d_model), got {tuple(x.shape)}")
    kept = x[:, FIRST_POSITION:].to(torch.promote_types(x.dtype, torch.float32))
    require_finite(kept, what)
    return kept


def mean_norm(x: torch.Tensor, what: str = "vectors") -> torch.Tensor:
    """Mean L2 norm over the kept positions, per prompt.

    Args:
        x: (batch, seq, d_model), e.g. a block's attention or FFN output.
        what: its name, for errors.
    Returns:
        (batch,) float64 on the CPU, in the activations' units.
    Raises:
        ValueError, NonFiniteError: as ``_kept``.
    """
    return _kept(x, what).norm(dim=-1).mean(dim=-1).double().cpu()


def mean_norm_ratio(x: torch.Tensor, y: torch.Tensor, what: str = "vectors") -> torch.Tensor:
    """Mean over kept positions of ||x[t]|| / ||y[t]||, per prompt (S4.4: FFN-only state against the full state).

    Args:
        x, y: (batch, seq, d_model), same shape.
        what: their name, for errors.
    Returns:
        (batch,) float64 on the CPU, dimensionless.
    Raises:
        ValueError: for mismatched shapes; as ``_kept``.
        NonFiniteError: as ``_kept``.
    """
    if x.shape != y.shape:
        raise ValueError(f"{what}: shapes differ, {tuple(x.shape)} vs {tuple(y.shape)}")
    a, b = _kept(x, what), _kept(y, what)
    return (a.norm(dim=-1) / b.norm(dim=-1).clamp_min(EPS)).mean(dim=-1).double().cpu()


def mean_cosine(x: torch.Tensor, y: torch.Tensor, shift: int = 0, what: str = "vectors") -> torch.Tensor:
    """Mean over kept positions of cos(x[b, t], y[(b + shift) mod batch, t]), per prompt b.

    ``shift=0`` pairs each vector with the other one of the same token; ``shift=k`` pairs it with the
    other one of the token at the same position of another prompt, which shares the position but
    not the token: the cross-token baseline, the cosine that any two such vectors have because of
    directions common to all tokens (a bias, a position code).

    Args:
        x, y: (batch, seq, d_model), same shape; batch > shift when shift > 0.
        shift: how many prompts on the partner is taken from.
        what: their name, for errors.
    Returns:
        (batch,) float64 on the CPU, in [-1, 1].
    Raises:
        ValueError: for mismatched shapes, or a shift that lands a prompt on itself; as ``_kept``.
        NonFiniteError: as ``_kept``.
    """
    if x.shape != y.shape:
        raise ValueError(f"{what}: shapes differ, {tuple(x.shape)} vs {tuple(y.shape)}")
    if shift % x.shape[0] == 0 and shift != 0:
        raise ValueError(f"{what}: shift {shift} pairs each of {x.shape[0]} prompts with itself")
    a, b = unit(_kept(x, what)), unit(_kept(y, what))
    b = torch.roll(b, shifts=-shift, dims=0)
    return (a * b).sum(dim=-1).mean(dim=-1).double().cpu()
