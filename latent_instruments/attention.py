"""Attention as Gaussian odds ratios and barycentric coordinates (source S1, claims S1.1-S1.3).

S1 writes one head's attention as ``S = softmax(M Q Kᵀ)`` and ``Y = S V`` and reads it three ways:

- each row ``S_i`` is a point of the simplex (S1.1): non-negative, summing to 1, zero where masked;
- ``S_ij ∝ N(q_i | k_j) / (N(q_i | 0) N(k_j | 0))`` for isotropic Gaussians (S1.2), because
  ``⟨k, q⟩ = ½ (‖k‖² + ‖q‖² − ‖k − q‖²)``: the log odds ratio of "q was drawn around k" against "q and k
  were drawn independently around 0" is ⟨q, k⟩ / σ² plus a constant, so a head that scales its scores by s
  is the odds ratio at σ² = 1 / s;
- each output row ``Y_t = Vᵀ S_t`` is a convex combination of the value vectors (S1.3).

This module measures each against captured activations, in float64, with error bounds derived from the
dtype the model ran in (:func:`probability_rounding`, :func:`pattern_error_bound`, :func:`output_error_bound`),
and knows, per architecture, how captured queries and keys become scores: the score scaling and the rotary
embedding, applied with the model's own rotary module and its modeling module's ``apply_rotary_pos_emb``
(:func:`score_form`). Architectures whose scores are not a scaled dot product of q and k alone (ALiBi,
soft-capping) raise :class:`NotAnOddsRatio` with the reason.
"""

import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

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
        return ScoreForm(self.scaling, _cast, 0, self.window)


def _cast(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return q.double(), k.double()


def _modeling_function(model: nn.Module, name: str) -> Callable:
    """A function of the model's transformers modeling module (e.g. ``apply_rotary_pos_emb``), or a clear error.

    Raises:
        ValueError: naming the module, the function and the installed transformers version, if it is gone.
    """
    module = sys.modules[type(model).__module__]
    found = getattr(module, name, None)
    if found is None:
        import transformers

        raise ValueError(f"{module.__name__} has no {name} in transformers {transformers.__version__}: S1.2 rotates "
                         "queries and keys with it; latent_instruments.attention.score_form needs updating for this "
                         "version (the suite's supported range is in pyproject.toml)")
    return found


def _rotary_module(model: nn.Module) -> nn.Module:
    """The model-level rotary embedding module (``model.model.rotary_emb``, ``gpt_neox.rotary_emb``, ...)."""
    found = [(name, module) for name, module in model.named_modules() if name.split(".")[-1] == "rotary_emb"]
    if not found:
        raise ValueError(f"{type(model).__name__} has no rotary_emb module to rotate its queries and keys with")
    return min(found, key=lambda item: item[0].count("."))[1]


def _hf_rotary(model: nn.Module) -> tuple[Callable, int]:
    """Rotation by the model's rotary module and its modeling module's ``apply_rotary_pos_emb`` (rotate_half;
    GPT-NeoX and Phi-3 turn the first ``cos.shape[-1]`` dimensions and pass the rest)."""
    rotary = _rotary_module(model)
    apply = _modeling_function(model, "apply_rotary_pos_emb")

    def angles(x: torch.Tensor, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = rotary(x, torch.arange(seq, device=x.device)[None])  # (1, seq, rotary dims)
        return cos.double(), sin.double()

    def rotate(q, k):
        q, k = q.double(), k.double()
        cos, sin = angles(q, q.shape[1])
        return apply(q, k, cos, sin, unsqueeze_dim=2)  # q, k are (batch, seq, heads, d): heads on axis 2

    return rotate, angles(torch.zeros(1, dtype=torch.float64), 1)[0].shape[-1]


def _gptj_rotary(model: nn.Module) -> tuple[Callable, int]:
    """GPT-J's rotation: the modeling module's ``create_sinusoidal_positions`` on ``config.rotary_dim`` (else
    the hidden size, as GPT-J builds them) and its rotate_every_two ``apply_rotary_pos_emb``, on the first
    ``rotary_dim`` dimensions of each head (all of them if None)."""
    config = model.config
    sinusoids = _modeling_function(model, "create_sinusoidal_positions")
    apply = _modeling_function(model, "apply_rotary_pos_emb")
    dims = config.rotary_dim or head_dim(config)

    def rotate(q, k):
        sincos = sinusoids(q.shape[1], config.rotary_dim or config.hidden_size)
        sincos = sincos.to(device=q.device, dtype=torch.float64)[None]  # (1, seq, dims)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)  # (1, seq, dims / 2) each
        q, k = q.double(), k.double()
        return tuple(torch.cat([apply(x[..., :dims], sin, cos), x[..., dims:]], dim=-1) for x in (q, k))

    return rotate, dims


ROTARY = ("gpt_neox", "llama", "mistral", "qwen2", "gemma", "gemma2", "phi3", "falcon")  # HF rotate_half rotary


def head_dim(config) -> int:
    """d_head from a transformers config: ``head_dim`` where the config sets it, else hidden size / heads."""
    explicit = getattr(config, "head_dim", None)
    return int(explicit) if explicit else config.hidden_size // config.num_attention_heads


def score_scaling(config, layer: int) -> float:
    """s, the factor on ⟨q_i, k_j⟩ in one layer's attention scores, from the model's config alone.

    1/√d_head for every supported architecture, except: Gemma 2's ``query_pre_attn_scalar``^-½; GPT-2's
    ``scale_attn_weights=False`` (s = 1) and ``scale_attn_by_inverse_layer_idx`` (an extra 1/(layer + 1)).
    These are the configuration fields transformers documents, so the form does not depend on attribute names
    of the attention modules, which change between versions (GPT-J's ``scale_attn`` is ``scaling`` in 5.x).

    Args:
        config: the model's transformers config.
        layer: the block's index, from 0.
    """
    kind = config.model_type
    if kind == "gemma2":
        return float(config.query_pre_attn_scalar) ** -0.5
    scaling = head_dim(config) ** -0.5
    if kind == "gpt2":
        scaling = scaling if config.scale_attn_weights else 1.0
        if config.scale_attn_by_inverse_layer_idx:
            scaling /= float(layer + 1)
    return scaling


def sliding_window(config, layer: int) -> int | None:
    """One layer's sliding window from the config: ``sliding_window`` on the layers ``layer_types`` marks
    "sliding_attention" (Gemma 2, Qwen2), on every layer where the config has no ``layer_types`` (Mistral,
    Phi-3), None where it has no window."""
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None)
    if window is None or types is None:
        return window
    return window if types[layer] == "sliding_attention" else None


def score_form(model: nn.Module, layer: int) -> ScoreForm:
    """The :class:`ScoreForm` of one block's attention in a Hugging Face causal LM (eager attention).

    Handled: GPT-2 and OPT (no rotary; OPT multiplies the query by its scaling inside the module, after the
    q_proj output that is captured), GPT-NeoX (partial rotary), Llama, Mistral, Qwen2, Gemma, Gemma 2 without
    soft-capping, Phi-3 (partial rotary), Falcon with rotary, GPT-J (partial rotary, rotate_every_two). The
    scaling and window come from the config (:func:`score_scaling`, :func:`sliding_window`); the rotation from
    the model's rotary module and its modeling module's functions.

    Args:
        model: the causal LM (for its config and rotary module).
        layer: the block's index, from 0.
    Raises:
        NotAnOddsRatio: for ALiBi (BLOOM, Falcon with alibi=True) and soft-capped scores (Gemma 2 default).
        ValueError: for an architecture this module does not know (never a silent pass), or a modeling module
            that lacks the rotary function (naming the transformers version).
    """
    config = model.config
    kind = config.model_type
    if kind == "bloom" or (kind == "falcon" and getattr(config, "alibi", False)):
        raise NotAnOddsRatio(
            f"{kind} uses ALiBi: its scores are s·⟨q_i, k_j⟩ plus a per-head bias m_h·(j − i) linear in the "
            "distance between positions, a term of neither q nor k, so the pattern is not a Gaussian odds ratio of "
            "q and k alone")
    if kind == "gemma2" and getattr(config, "attn_logit_softcapping", None) is not None:
        raise NotAnOddsRatio(
            f"gemma2 soft-caps its scores, c·tanh(s·⟨q_i, k_j⟩ / c) with c = {config.attn_logit_softcapping}: a "
            "nonlinear squashing of the log odds ratio, so the pattern is not a Gaussian odds ratio of q and k")
    if kind in ("gpt2", "opt"):
        rotate, dims = _cast, 0
    elif kind in ROTARY:
        rotate, dims = _hf_rotary(model)
    elif kind == "gptj":
        rotate, dims = _gptj_rotary(model)
    else:
        raise ValueError(f"no score form for architecture {kind!r} ({type(model).__name__}): S1.2 cannot "
                         "rebuild its scores from q and k; add it to latent_instruments.attention.score_form")
    return ScoreForm(score_scaling(config, layer), rotate, dims, sliding_window(config, layer))


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


OUTPUT_PROJECTION = {"gpt2": "c_proj", "opt": "out_proj", "gptj": "out_proj", "gpt_neox": "dense", "falcon": "dense",
                     "bloom": "dense"}  # the attention module's output projection; "o_proj" elsewhere (Llama family)


def output_projection(model: nn.Module, attention: nn.Module) -> nn.Module:
    """The linear map after an attention module's heads (W_O): its input is the heads' outputs, concatenated.

    Args:
        model: the causal LM (its ``config.model_type`` picks the name).
        attention: one of its attention modules.
    Raises:
        AttributeError: if the module has no projection of that name (an architecture this table lacks).
    """
    return attention.get_submodule(OUTPUT_PROJECTION.get(model.config.model_type, "o_proj"))


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


@contextmanager
def module_inputs(modules: list[nn.Module]) -> Iterator[list[list[torch.Tensor]]]:
    """Record the first input of each module (e.g. each attention's output projection) while in the context.

    The output projection's input is the heads' outputs before it, concatenated: (batch, seq, heads · d_head)
    for every architecture the suite supports. Each call appends one tensor (a forward pass in micro-batches
    calls it once per micro-batch); read them after the forward pass.

    Args:
        modules: the modules to watch, in order.
    Yields:
        one list per module of the detached inputs it received, in call order.
    """
    seen: list[list[torch.Tensor]] = [[] for _ in modules]

    def keep(index):
        def hook(_module, args, kwargs):
            tensor = args[0] if args else next(iter(kwargs.values()))
            seen[index].append(tensor.detach())
        return hook

    handles = [m.register_forward_pre_hook(keep(i), with_kwargs=True) for i, m in enumerate(modules)]
    try:
        yield seen
    finally:
        for handle in handles:
            handle.remove()
