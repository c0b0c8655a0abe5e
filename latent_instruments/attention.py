"""Attention as Gaussian odds ratios and barycentric coordinates (source S1, claims S1.1-S1.3).

S1 writes one head's attention as ``S = softmax(M Q Kᵀ)`` and ``Y = S V`` and reads it three ways:

- each row ``S_i`` is a point of the simplex (S1.1): non-negative, summing to 1, zero where masked;
- ``S_ij ∝ N(q_i | k_j) / (N(q_i | 0) N(k_j | 0))`` for isotropic Gaussians (S1.2), because
  ``⟨k, q⟩ = ½ (‖k‖² + ‖q‖² − ‖k − q‖²)``: the log odds ratio of "q was drawn around k" against "q and k
  were drawn independently around 0" is ⟨q, k⟩ / σ² plus a constant, so a head that scales its scores by s
  is the odds ratio at σ² = 1 / s;
- each output row ``Y_t = Vᵀ S_t`` is a convex combination of the value vectors (S1.3).

This module measures each against captured activations, in float64, with error bounds derived from the
dtype the model ran in (:func:`probability_rounding`, :func:`pattern_error_bound`, :func:`output_error_bound`).
It takes tensors only: how an architecture turns its captured queries and keys into scores (the scaling, the
rotary embedding, the window) arrives as a :class:`ScoreForm`, which ``models.attention_forms.score_form`` reads
from a model. Architectures whose scores are not a scaled dot product of q and k alone (ALiBi, soft-capping)
raise :class:`NotAnOddsRatio` there, with the reason.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from latent_instruments.errors import require_finite


class NotAnOddsRatio(ValueError):
    """An architecture whose attention scores are not a scaled dot product of its queries and keys alone.

    ALiBi (BLOOM, Falcon with ``alibi=True``) adds a per-head bias linear in the distance j − i; Gemma 2
    soft-caps the scores with c·tanh(s / c). Neither is an odds ratio of Gaussians centred on q and k (S1.2),
    so the claim can say nothing on such a model: its test ends "not informative" with this message.
    """


# ------------------------------------------------------------------------------------------------ S1.1


def allowed_positions(seq_q: int, seq_k: int, window: int | None = None, device=None) -> torch.Tensor:
    """The causal (and sliding-window) mask: True where query i may attend to key j.

    Query i sits at position ``seq_k − seq_q + i``; it may attend to keys j at or before it and, with a
    sliding window w, to the last w of them (j > i − w, as ``transformers.masking_utils`` builds it).

    Returns:
        (seq_q, seq_k) bool.
    """
    i = torch.arange(seq_q, device=device)[:, None] + (seq_k - seq_q)
    j = torch.arange(seq_k, device=device)[None, :]
    allowed = j <= i
    if window is not None:
        allowed &= j > i - window
    return allowed


@dataclass(frozen=True)
class SimplexDeviation:
    """How far attention rows are from the simplex, per prompt (S1.1).

    Attributes (each (batch,) float64, a maximum over heads, queries and keys):
        row_sum: max |Σ_j p_ij − 1|.
        future: max p_ij over future (masked) keys j > i.
        negative: max of −p_ij (0 where every entry is non-negative).
    """

    row_sum: torch.Tensor
    future: torch.Tensor
    negative: torch.Tensor


def simplex_deviation(pattern: torch.Tensor) -> SimplexDeviation:
    """The :class:`SimplexDeviation` of one layer's attention pattern.

    Args:
        pattern: (batch, heads, seq_q, seq_k) attention probabilities, any float dtype (read in float64).
    Returns:
        per-prompt maxima over heads, queries and keys.
    Raises:
        ValueError: if the pattern is not 4-dimensional or has more queries than keys.
        NonFiniteError: if it holds NaN or inf.
    """
    if pattern.dim() != 4 or pattern.shape[2] > pattern.shape[3]:
        raise ValueError(f"expected a (batch, heads, seq_q, seq_k) pattern with seq_q <= seq_k, "
                         f"got {tuple(pattern.shape)}")
    if not torch.isfinite(pattern.sum(dtype=torch.float64)):  # one reduction; the full count only when needed
        require_finite(pattern, "attention pattern")
    allowed = allowed_positions(pattern.shape[2], pattern.shape[3], device=pattern.device)
    per_prompt = lambda x: x.flatten(1).amax(dim=1).double().cpu()  # noqa: E731 - maxima are exact in any dtype
    return SimplexDeviation(
        row_sum=per_prompt((pattern.sum(dim=-1, dtype=torch.float64) - 1).abs()),  # summed in float64
        future=per_prompt(pattern.masked_fill(allowed, 0)),
        negative=(0.0 - pattern.flatten(1).amin(dim=1).double().cpu()).clamp_min(0.0),  # 0.0 − 0.0 is +0.0
    )


def opmath_eps(dtype: torch.dtype) -> float:
    """Machine epsilon of the type torch accumulates ``dtype`` in: float32 for float16/bfloat16, else itself."""
    return torch.finfo(torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype).eps


def probability_rounding(dtype: torch.dtype, n_keys: int) -> float:
    """Bound on the relative error of each probability a softmax over ``n_keys`` scores returns in ``dtype``.

    exp (1 ulp), the row sum of n terms (n ulp, Higham's γ_n), the division (1 ulp), each in the type torch
    computes in (:func:`opmath_eps`), and the final rounding to ``dtype`` (half an ulp of it). Machine epsilon
    is twice the unit roundoff, so each term holds with a factor 2 to spare. Summed over a row the same
    bound holds for |Σ_j p_ij − 1|, since Σ_j p_ij = 1 exactly.
    """
    return torch.finfo(dtype).eps / 2 + (n_keys + 2) * opmath_eps(dtype)


# ------------------------------------------------------------------------------------------------ S1.2


def gaussian_log_odds(q: torch.Tensor, k: torch.Tensor, variance: float) -> torch.Tensor:
    """log N(q_i | k_j, σ²I) − log N(q_i | 0, σ²I) − log N(k_j | 0, σ²I), for every query i and key j.

    The squared distance ‖q_i − k_j‖² is computed as a distance (``torch.cdist`` without its
    ‖q‖² + ‖k‖² − 2⟨q, k⟩ shortcut), so that the identity with ⟨q_i, k_j⟩ / σ² is measured, not assumed.
    The normalising constants are kept: they add (d/2)·log(2πσ²) to every entry.

    Args:
        q: (..., seq_q, d) queries.
        k: (..., seq_k, d) keys, the same leading dimensions.
        variance: σ² of the isotropic Gaussians (> 0); a head scaling its scores by s is σ² = 1 / s.
    Returns:
        (..., seq_q, seq_k) log odds ratios, float64.
    Raises:
        ValueError: for a non-positive variance or mismatched shapes.
    """
    if not variance > 0:
        raise ValueError(f"variance must be positive, got {variance}")
    if q.shape[:-2] != k.shape[:-2] or q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q {tuple(q.shape)} and k {tuple(k.shape)} must share leading dimensions and d")
    q, k = q.double(), k.double()
    d = q.shape[-1]
    log_norm = -0.5 * d * math.log(2 * math.pi * variance)
    sq_dist = torch.cdist(q, k, compute_mode="donot_use_mm_for_euclid_dist").square()
    log_q_given_k = -sq_dist / (2 * variance) + log_norm
    log_q_null = -q.square().sum(-1) / (2 * variance) + log_norm
    log_k_null = -k.square().sum(-1) / (2 * variance) + log_norm
    return log_q_given_k - log_q_null[..., :, None] - log_k_null[..., None, :]


def odds_ratio_pattern(q: torch.Tensor, k: torch.Tensor, variance: float, window: int | None = None) -> torch.Tensor:
    """S1.2's attention pattern: the softmax over allowed keys of the Gaussian log odds ratios.

    Args:
        q: (..., seq_q, d) queries, rotary embedding already applied.
        k: (..., seq_k, d) keys, the same heads as q (grouped-query keys repeated).
        variance: σ² = 1 / (the head's score scaling).
        window: a sliding window, or None (causal only).
    Returns:
        (..., seq_q, seq_k) probabilities, float64, exactly 0 on masked keys.
    """
    log_odds = gaussian_log_odds(q, k, variance)
    allowed = allowed_positions(q.shape[-2], k.shape[-2], window, device=log_odds.device)
    return torch.softmax(log_odds.masked_fill(~allowed, -math.inf), dim=-1)


@dataclass(frozen=True)
class ScoreForm:
    """How one attention module turns its captured queries and keys into scores.

    ``score_ij = scaling · ⟨q̃_i, k̃_j⟩`` on allowed keys, where (q̃, k̃) = rotate(q, k).

    Attributes:
        scaling: s, the factor on the dot product (1/√d_head, Gemma 2's query_pre_attn_scalar^-½, GPT-2's
            extra 1/(layer + 1) where configured).
        rotate: (q (batch, seq, heads, d), k (batch, seq, kv_heads, d)) -> the same in float64, rotary
            embedding applied at positions 0..seq−1; only the cast for absolute-position models.
        rotary_dims: how many of the d_head dimensions the rotary embedding turns (0: none).
        window: sliding window of the layer, or None.
    """

    scaling: float
    rotate: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
    rotary_dims: int
    window: int | None

    @property
    def description(self) -> str:
        """e.g. "s = 0.125, rotary on 16 dimensions", for the report."""
        rotary = f"rotary on {self.rotary_dims} dimensions" if self.rotary_dims else "no rotary"
        return f"s = {self.scaling:.6g}, {rotary}" + (f", sliding window {self.window}" if self.window else "")

    def unrotated(self) -> "ScoreForm":
        """The same form with the rotary embedding left out (a control: the rotation must matter)."""
        return ScoreForm(self.scaling, as_float64, 0, self.window)


def as_float64(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and keys in float64, unrotated: the ``rotate`` of a :class:`ScoreForm` without rotary embedding."""
    return q.double(), k.double()


def repeat_kv(x: torch.Tensor, heads: int) -> torch.Tensor:
    """Grouped-query keys or values repeated to the query heads: kv head g serves heads g·r .. g·r + r − 1.

    Args:
        x: (batch, seq, kv_heads, d).
        heads: the query head count, a multiple of kv_heads.
    Returns:
        (batch, seq, heads, d).
    Raises:
        ValueError: if heads is not a multiple of kv_heads.
    """
    if heads % x.shape[2]:
        raise ValueError(f"{heads} query heads are not a multiple of {x.shape[2]} key-value heads")
    return x.repeat_interleave(heads // x.shape[2], dim=2)


def convex_combination(pattern: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Each head's output as S1 writes it, Y_t = Vᵀ S_t: the values weighted by the attention row.

    Args:
        pattern: (batch, heads, seq_q, seq_k) attention probabilities.
        v: (batch, seq_k, kv_heads, d) values (grouped-query values are repeated, :func:`repeat_kv`).
    Returns:
        (batch, seq_q, heads, d), float64.
    """
    values = repeat_kv(v.double(), pattern.shape[1])
    return torch.einsum("bhij,bjhd->bihd", pattern.double(), values)


def output_error_bound(pattern: torch.Tensor, v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Bound on |y − Σ_j p_ij v_j| for head outputs a model computed in ``dtype`` from this pattern and values.

    Higham's bound for a sum of n products, |fl(Σ p v) − Σ p v| ≤ γ_n Σ_j p_ij |v_j|, with n the number of
    keys and the accumulation in :func:`opmath_eps`'s type, plus the rounding of the result to ``dtype``
    (half an ulp of |y| ≤ Σ p|v|), plus the dtype's smallest normal number for outputs that underflow.

    Args:
        pattern: (batch, heads, seq_q, seq_k), v: (batch, seq_k, kv_heads, d), as the model used them.
        dtype: the dtype the model ran in.
    Returns:
        (batch, seq_q, heads, d) bound, float64.
    """
    n = pattern.shape[-1]
    scale = torch.finfo(dtype).eps / 2 + n * opmath_eps(dtype)
    magnitude = torch.einsum("bhij,bjhd->bihd", pattern.float(), repeat_kv(v.float().abs(), pattern.shape[1]))
    return scale * magnitude.double() + torch.finfo(dtype).smallest_normal  # a bound: float32 is precise enough


def causal_mean(v: torch.Tensor, heads: int) -> torch.Tensor:
    """Each head's output were its attention uniform over the causal keys: the running mean of the values.

    The same as :func:`convex_combination` with weights 1/(i + 1) on keys j ≤ i (S1.3's control), in O(seq).

    Args:
        v: (batch, seq, kv_heads, d) values.
        heads: the query head count.
    Returns:
        (batch, seq, heads, d), float64.
    """
    values = repeat_kv(v.double(), heads)
    counts = torch.arange(1, v.shape[1] + 1, device=v.device, dtype=torch.float64)[None, :, None, None]
    return values.cumsum(dim=1) / counts
