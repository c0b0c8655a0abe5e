"""How far a captured attention pattern is from the Gaussian odds ratio of its own queries and keys (S1.2), in
units of the error the model's dtype allows: :func:`pattern_fit` over a model's prompts, in chunks.
"""

import math
from dataclasses import dataclass

import torch

from latent_instruments.attention import (ScoreForm, allowed_positions, gaussian_log_odds, opmath_eps,
                                          probability_rounding, repeat_kv)
from latent_instruments.errors import require_finite


@dataclass(frozen=True)
class PatternFit:
    """A captured pattern against an odds-ratio reconstruction (S1.2), one layer.

    Attributes:
        width: σ² in units of the head's own 1 / s (1: the architecture's scaling; 2: Gaussians twice as wide).
        error_ratio: (batch,) max over heads, queries and keys of |p − p̂| / :func:`pattern_error_bound`.
        max_abs_error: (batch,) max |p − p̂| in probability.
    """

    width: float
    error_ratio: torch.Tensor
    max_abs_error: torch.Tensor


def pattern_error_bound(pattern: torch.Tensor, reference: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                        scaling: float, dtype: torch.dtype, window: int | None = None) -> torch.Tensor:
    """Bound on |p − p̂| for a pattern p a model computed in ``dtype`` from these (rotated) queries and keys.

    Each score s·⟨q_i, k_j⟩ is off by at most Δ_i = s·max_j ‖q_i‖‖k_j‖·[(d + 2)·ε_acc + 6·ε], with ε the
    dtype's machine epsilon and ε_acc that of the type torch accumulates in (:func:`opmath_eps`): γ_d of the
    dot product (Higham: |fl(q·k) − q·k| ≤ γ_d Σ|q_l k_l| ≤ γ_d ‖q‖‖k‖) and the softmax's subtraction of the row
    maximum (2), both accumulated; the roundings to the dtype of the rotated q and k (4), of the score and of
    the scaling (2; OPT scales its query instead, the same count). A softmax whose scores move by at most Δ
    moves each probability by a factor within e^{±2Δ}, so |p − p̂| ≤ min(p, p̂)·expm1(2Δ) ≤ max(p, p̂)·expm1(2Δ);
    exp, sum and division add :func:`probability_rounding` ρ. The bound is max(p, p̂)·expm1(2Δ_i + ρ), plus the
    dtype's smallest normal number for entries that underflow. (Machine epsilon is twice the unit roundoff:
    a factor 2 to spare throughout.)

    Args:
        pattern: (batch, heads, seq_q, seq_k) the captured probabilities p.
        reference: the same shape, the float64 reconstruction p̂.
        q: (batch, heads, seq_q, d), k: (batch, heads, seq_k, d) rotated queries and keys.
        scaling: the head's score scaling s.
        dtype: the dtype the model ran in.
        window: the layer's sliding window, or None.
    Returns:
        (batch, heads, seq_q, seq_k) bound, float64.
    """
    per_norm = (q.shape[-1] + 2) * opmath_eps(dtype) + 6 * torch.finfo(dtype).eps  # score error per s·‖q‖‖k‖
    norms = q.norm(dim=-1)[..., :, None] * k.norm(dim=-1)[..., None, :]
    allowed = allowed_positions(q.shape[-2], k.shape[-2], window, device=norms.device)
    delta = per_norm * scaling * norms.masked_fill(~allowed, 0.0).amax(dim=-1, keepdim=True)
    rho = probability_rounding(dtype, k.shape[-2])
    factor = torch.expm1((2 * delta + rho).clamp(max=700.0))  # finite (≤ 1e304): a zero probability keeps a zero bound
    return torch.maximum(pattern.double(), reference) * factor + torch.finfo(dtype).smallest_normal


PROMPT_CHUNK = 1 << 21  # float64 entries (16 MiB) per chunk of prompts: heads × seq² × prompts


def pattern_fit(pattern: torch.Tensor, q: torch.Tensor, k: torch.Tensor, form: ScoreForm,
                widths: tuple[float, ...] = (1.0,)) -> list[PatternFit]:
    """Compare one layer's captured pattern with S1.2's odds-ratio reconstruction from its queries and keys.

    The distances ‖q_i − k_j‖² are computed once, in :func:`gaussian_log_odds` at σ² = 1; the log odds at
    σ² = w / s are those times s / w, up to a constant per row (the normalisers' (d/2)·log(2πσ²)) that the
    softmax ignores, so one distance computation serves every width.

    Args:
        pattern: (batch, heads, seq, seq) captured probabilities (its dtype is the model's).
        q: (batch, seq, heads, d) captured queries, before rotary embedding and scaling.
        k: (batch, seq, kv_heads, d) captured keys, likewise.
        form: the layer's :class:`ScoreForm`.
        widths: σ² of the Gaussians in units of 1 / form.scaling: 1.0 is the claim; a control passes 2.0.
    Returns:
        one :class:`PatternFit` per width, error ratios against :func:`pattern_error_bound`.
    Raises:
        NonFiniteError: for NaN or inf in the pattern, q or k.
    """
    for tensor, what in ((pattern, "attention pattern"), (q, "queries"), (k, "keys")):
        if not torch.isfinite(tensor.sum(dtype=torch.float64)):  # one reduction; the full count only when needed
            require_finite(tensor, what)
    q_rot, k_rot = form.rotate(q, k)
    q_rot, k_rot = q_rot.transpose(1, 2), repeat_kv(k_rot, q.shape[2]).transpose(1, 2)  # (batch, heads, seq, d)
    allowed = allowed_positions(q_rot.shape[-2], k_rot.shape[-2], form.window, device=q_rot.device)
    chunk = max(1, PROMPT_CHUNK // (pattern[0].numel()))
    ratios: dict[float, list] = {w: [] for w in widths}
    errors: dict[float, list] = {w: [] for w in widths}
    for start in range(0, q.shape[0], chunk):
        qb, kb = q_rot[start : start + chunk], k_rot[start : start + chunk]
        pb = pattern[start : start + chunk].double()
        unit = gaussian_log_odds(qb, kb, 1.0).masked_fill(~allowed, -math.inf)  # σ² = 1, constants kept
        for width in widths:
            reference = torch.softmax(unit * (form.scaling / width), dim=-1)  # σ² = width / s
            bound = pattern_error_bound(pb, reference, qb, kb, form.scaling, pattern.dtype, form.window)
            error = (pb - reference).abs()
            ratios[width].append((error / bound).flatten(1).amax(dim=1))
            errors[width].append(error.flatten(1).amax(dim=1))
    return [PatternFit(w, torch.cat(ratios[w]).cpu(), torch.cat(errors[w]).cpu()) for w in widths]


# ------------------------------------------------------------------------------------------------ S1.3
