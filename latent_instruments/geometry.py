"""Geometry of the residual stream and of static embeddings (S2).

Hidden-state norms by depth (S2.1), cosine similarity between consecutive
layers and between different tokens of one layer (S2.2), and word analogies
ranked by cosine on normalised embeddings or by Euclidean distance on raw ones
(S2.3). Every function takes the residual stream as a list of layers, each
``(batch, seq, d_model)``, and skips the first positions it is told to skip
(the first token's state is an outlier: an attention sink with a huge norm).
"""

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from latent_instruments.errors import require_finite

METRICS = ("cosine", "euclidean")  # how analogy_ranks compares the query with the candidates
EPS = 1e-12  # floor of a norm before dividing by it (a zero vector has no direction)


def _checked(layers: Sequence[torch.Tensor], first_position: int, what: str) -> None:
    """Raise ValueError unless the layers are one (batch, seq, d_model) shape with a position left after first_position."""
    if not layers:
        raise ValueError(f"{what}: no layers given")
    shape = layers[0].shape
    if len(shape) != 3 or any(h.shape != shape for h in layers):
        raise ValueError(f"{what}: every layer must be (batch, seq, d_model) of one shape, got "
                         f"{[tuple(h.shape) for h in layers]}")
    if not 0 <= first_position < shape[1]:
        raise ValueError(f"{what}: first_position {first_position} leaves no position of {shape[1]}")


def _kept(h: torch.Tensor, first_position: int, what: str) -> torch.Tensor:
    """One layer's kept positions, (batch, seq - first_position, d_model), in float32 (float64 kept), checked finite.

    Layers are taken one at a time: a large model's whole stream in float32 would be gigabytes.
    """
    x = h[:, first_position:].to(torch.promote_types(h.dtype, torch.float32))
    require_finite(x, what)
    return x


def unit(x: torch.Tensor) -> torch.Tensor:
    """x scaled to unit L2 norm over the last axis (a zero vector stays zero)."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(EPS)


def mean_norm_by_layer(layers: Sequence[torch.Tensor], first_position: int = 1) -> torch.Tensor:
    """Mean L2 norm of the hidden states per sequence and layer (S2.1).

    Args:
        layers: the residual stream by depth, each (batch, seq, d_model).
        first_position: positions before it are left out (1: the first token).
    Returns:
        (batch, n_layers), float64 on the CPU, in the activations' units.
    Raises:
        ValueError: for no layers, mismatched shapes, or no position left.
        NonFiniteError: if a hidden state holds NaN or inf.
    """
    _checked(layers, first_position, "hidden states")
    return torch.stack([_kept(h, first_position, "hidden states").norm(dim=-1).mean(dim=-1).double().cpu()
                        for h in layers], dim=1)


def consecutive_cosines(layers: Sequence[torch.Tensor], first_position: int = 1) -> torch.Tensor:
    """Mean cosine similarity of each token's hidden state at layer l and l + 1 (S2.2).

    Args:
        layers: the residual stream by depth, each (batch, seq, d_model); at least two.
        first_position: positions before it are left out.
    Returns:
        (batch, n_layers - 1), float64 on the CPU: entry l is the mean over positions of
        cos(h_l[t], h_{l+1}[t]), in [-1, 1].
    Raises:
        ValueError: for fewer than two layers, mismatched shapes, or no position left.
        NonFiniteError: if a hidden state holds NaN or inf.
    """
    if len(layers) < 2:
        raise ValueError(f"consecutive cosines need at least two layers, got {len(layers)}")
    _checked(layers, first_position, "hidden states")
    before, out = unit(_kept(layers[0], first_position, "hidden states")), []
    for h in layers[1:]:
        after = unit(_kept(h, first_position, "hidden states"))
        out.append((before * after).sum(dim=-1).mean(dim=-1).double().cpu())
        before = after
    return torch.stack(out, dim=1)


def cross_token_cosine(layers: Sequence[torch.Tensor], first_position: int = 1) -> torch.Tensor:
    """Mean cosine similarity between the hidden states of different positions of one sequence, per layer (S2.2).

    The baseline of a stream that points one way for every token: its cross-token
    cosine is as high as its consecutive-layer cosine. Over all ordered pairs t ≠ s
    of kept positions, from the sum of unit vectors: (|Σ u_t|² − n) / (n (n − 1)).

    Args:
        layers: the residual stream by depth, each (batch, seq, d_model).
        first_position: positions before it are left out; at least two must remain.
    Returns:
        (batch, n_layers), float64 on the CPU, in [-1, 1].
    Raises:
        ValueError: for mismatched shapes or fewer than two positions left.
        NonFiniteError: if a hidden state holds NaN or inf.
    """
    _checked(layers, first_position, "hidden states")
    n = layers[0].shape[1] - first_position
    if n < 2:
        raise ValueError("cross-token cosine needs at least two positions after first_position")
    out = []
    for h in layers:
        u = unit(_kept(h, first_position, "hidden states")).double()
        total = u.sum(dim=1).square().sum(dim=-1)  # |Σ_t u_t|², (batch,)
        out.append(((total - u.square().sum(dim=(1, 2))) / (n * (n - 1))).cpu())
    return torch.stack(out, dim=1)


def mismatched_consecutive_cosines(layers: Sequence[torch.Tensor], first_position: int = 1) -> torch.Tensor:
    """Mean cosine between one token's state at layer l and a *different* token's at layer l + 1 (S2.2's null).

    The null of S2.2's control: if the stream points one shared way and no token keeps its
    own direction, a token's state at layer l + 1 is as close to any other token's state at
    layer l as to its own, so the consecutive cosine equals this. Over all ordered pairs t ≠ s
    of kept positions, exactly: ((Σ_t u_t) · (Σ_s v_s) − Σ_t u_t · v_t) / (n (n − 1)), u, v
    the unit states at layers l and l + 1.

    Args:
        layers: the residual stream by depth, each (batch, seq, d_model); at least two.
        first_position: positions before it are left out; at least two must remain.
    Returns:
        (batch, n_layers - 1), float64 on the CPU, in [-1, 1]; entry l pairs layers l and l + 1.
    Raises:
        ValueError: for fewer than two layers, mismatched shapes, or fewer than two positions left.
        NonFiniteError: if a hidden state holds NaN or inf.
    """
    if len(layers) < 2:
        raise ValueError(f"consecutive cosines need at least two layers, got {len(layers)}")
    _checked(layers, first_position, "hidden states")
    n = layers[0].shape[1] - first_position
    if n < 2:
        raise ValueError("mismatched cosines need at least two positions after first_position")
    before, out = unit(_kept(layers[0], first_position, "hidden states")).double(), []
    for h in layers[1:]:
        after = unit(_kept(h, first_position, "hidden states")).double()
        every_pair = (before.sum(dim=1) * after.sum(dim=1)).sum(dim=-1)  # (batch,)
        same_token = (before * after).sum(dim=(1, 2))
        out.append(((every_pair - same_token) / (n * (n - 1))).cpu())
        before = after
    return torch.stack(out, dim=1)


def token_norm_ratio(first: torch.Tensor, last: torch.Tensor, first_position: int = 1) -> torch.Tensor:
    """Each token's norm at a later layer over its norm at an earlier one, ‖last[t]‖ / ‖first[t]‖ (S2.1's control).

    Args:
        first, last: hidden states (batch, seq, d_model) of one batch at two layers.
        first_position: positions before it are left out.
    Returns:
        (batch, seq − first_position), float64 on the CPU (1: the token's norm did not change).
    Raises:
        ValueError: for mismatched shapes or no position left.
        NonFiniteError: if a hidden state holds NaN or inf.
    """
    _checked([first, last], first_position, "hidden states")
    before = _kept(first, first_position, "hidden states").double().norm(dim=-1)
    after = _kept(last, first_position, "hidden states").double().norm(dim=-1)
    return (after / before.clamp_min(EPS)).cpu()


def excess_over_baseline(cosine: torch.Tensor, baseline: torch.Tensor) -> torch.Tensor:
    """(cosine − baseline) / (1 − baseline): the part of the headroom above a baseline cosine that is reached.

    If every state is a shared direction plus a token-specific part, orthogonal across
    tokens, the baseline is the cross-token cosine and this is the cosine between the
    token-specific parts of the two states; 0 when a shared direction explains it all
    (S4.3's alignment of FFN and attention outputs).

    Args:
        cosine, baseline: broadcastable, each in [-1, 1]; baseline < 1.
    Returns:
        the excess, same shape, dimensionless (1: identical directions).
    Raises:
        ValueError: if a baseline is 1 or more (no headroom to measure against).
    """
    if (baseline >= 1).any():
        raise ValueError("a baseline cosine of 1 leaves no headroom: every token points the same way")
    return (cosine - baseline) / (1 - baseline)


def growth_per_layer(mean_norms: torch.Tensor) -> torch.Tensor:
    """Geometric-mean growth factor per layer, (last / first) ** (1 / (n_layers − 1)) (S2.1).

    Args:
        mean_norms: (..., n_layers) positive norms by depth.
    Returns:
        (...), the factor per layer (1: no growth), float64.
    Raises:
        ValueError: for fewer than two layers or a non-positive norm.
    """
    if mean_norms.shape[-1] < 2:
        raise ValueError("growth needs at least two layers")
    if (mean_norms <= 0).any():
        raise ValueError("norms must be positive")
    m = mean_norms.double()
    return (m[..., -1] / m[..., 0]) ** (1.0 / (m.shape[-1] - 1))


@dataclass(frozen=True)
class LogLinearFit:
    """Least-squares line through log(norm) against depth (S2.1's "grows exponentially").

    Attributes:
        factor: exp(slope), the fitted growth factor per layer.
        r_squared: of the line in log space (1: exactly exponential).
    """

    factor: float
    r_squared: float


def fit_log_growth(mean_norms: torch.Tensor) -> LogLinearFit:
    """Fit log(norm) = a + depth · log(factor) over layers 0..n−1.

    Args:
        mean_norms: (n_layers,) positive norms by depth, n_layers >= 2.
    Returns:
        the :class:`LogLinearFit`; r_squared is 1 for two layers or an exactly flat line.
    Raises:
        ValueError: for a shape other than (n_layers >= 2,) or a non-positive norm.
    """
    if mean_norms.ndim != 1 or mean_norms.numel() < 2:
        raise ValueError(f"need (n_layers >= 2,) norms, got shape {tuple(mean_norms.shape)}")
    if (mean_norms <= 0).any():
        raise ValueError("norms must be positive")
    y = mean_norms.double().log()
    x = torch.arange(y.numel(), dtype=torch.float64)
    xc, yc = x - x.mean(), y - y.mean()
    slope = (xc * yc).sum() / xc.square().sum()
    ss_tot = yc.square().sum()
    ss_res = (yc - slope * xc).square().sum()
    r2 = 1.0 if ss_tot <= 1e-30 else float(1 - ss_res / ss_tot)
    return LogLinearFit(float(slope.exp()), r2)
