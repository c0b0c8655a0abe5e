"""S1.1-S1.3's measurements: the attention rows' deviations from the simplex, the patterns recomputed as Gaussian
odds ratios, and the heads' outputs recomputed as convex combinations of the values, each as a ratio to its
rounding bound. test_identity.py records what these measure; identity_checks.py decides; the rows and bounds both
read are in the topic's home, identity.toml.
"""

from dataclasses import dataclass, field

import numpy as np
import torch

from claims.s1_attention.heads import attention_modules
from fixtures.catalogue_text import gate
from latent_instruments.attention import (
    NotAnOddsRatio, causal_mean, convex_combination, output_error_bound, probability_rounding, simplex_deviation,
)
from latent_instruments.attention_fit import pattern_fit
from latent_instruments.stats import Estimate, per_unit
from models.attention_forms import module_inputs, output_projection, score_form
from models.capture import run_with_cache

PATTERNS = "blocks.*.attn.hook_pattern"
# S1.2 and S1.3 are identities checked entry by entry: 8 prompts already give 8 × blocks × heads × 8,256 causal
# entries (tiny-w128: 1.1 million probabilities); their float64 recomputation is O(seq² · d_head) per head, so the
# first 8 of the held-out prompts keep the family within its time budget on reference-size models.
IDENTITY_PROMPTS = 8


@dataclass(frozen=True)
class IdentityContext:
    """What S1.1-S1.3's checks read beside their estimates: the dtype the model ran in and its rounding bounds
    (S1 gives no figure: every threshold of the topic is the rounding of that dtype).

    Attributes:
        dtype_name: the dtype's name ("float32"), for the derivations.
        n_keys: keys per attention row (the prompts' length).
        sum_tolerance: the rounding bound of a softmax over ``n_keys`` keys in that dtype (probability;
            ``latent_instruments.attention.probability_rounding``), S1.1's row-sum bound.
        zero: the dtype's smallest normal number (probability), S1.1's "exactly 0".
    """

    dtype_name: str
    n_keys: int
    sum_tolerance: float
    zero: float


def identity_context(dtype: torch.dtype, dtype_name: str, n_keys: int) -> IdentityContext:
    """The :class:`IdentityContext` of a model run in ``dtype`` (named ``dtype_name``) on rows of ``n_keys`` keys."""
    return IdentityContext(dtype_name, n_keys, probability_rounding(dtype, n_keys), torch.finfo(dtype).smallest_normal)


@dataclass(frozen=True)
class SimplexEstimates:
    """What S1.1's checks decide on, measured on every attention row (probabilities, per unit).

    Attributes:
        row_sum: worst |Σ_j p_ij − 1|.
        future: worst probability on a future key (j > i).
        negative: worst negative entry, max(−p_ij).
        leak: largest probability the future check finds in the transposed pattern (a control).
    """

    row_sum: Estimate
    future: Estimate
    negative: Estimate
    leak: Estimate


@dataclass(frozen=True)
class SimplexShown:
    """What S1.1's record shows beside its checks, deciding nothing (issue 79: report-only, out of the estimates).

    Attributes:
        per_block: {"row_sum", "future", "negative"}: (prompts, n_blocks) the worst of each per prompt and block.
    """

    per_block: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class OddsRatioEstimates:
    """What S1.2's checks decide on (ratios to the rounding bound of a dtype softmax of the scores, per unit).

    Attributes:
        ratio: worst |p − p̂| / bound, p̂ the softmax of the Gaussian log odds ratios with σ² = 1/s.
        wider: smallest such ratio with σ² = 2/s (a control).
        unrotated: smallest such ratio without the rotary embedding (a control of rotary models; None otherwise).
    """

    ratio: Estimate
    wider: Estimate
    unrotated: Estimate | None = None


@dataclass(frozen=True)
class OddsRatioShown:
    """What S1.2's record shows beside its checks, deciding nothing (issue 79: report-only, out of the estimates).

    Attributes:
        forms: each block's ``latent_instruments.attention.ScoreForm``.
        per_block: {"ratio", "wider", "unrotated" (rotary models only), "max_abs_error"}: (prompts, n_blocks) per
            prompt and block.
    """

    forms: list = field(default_factory=list)
    per_block: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class ConvexEstimates:
    """What S1.3's checks decide on (ratios to the rounding bound of the model's matmul, per unit).

    Attributes:
        ratio: worst |y − Σ_j p_ij v_j| / bound over prompts, blocks, heads, positions, dims.
        uniform: smallest worst ratio with uniform causal weights 1/(i+1) (a control).
    """

    ratio: Estimate
    uniform: Estimate


@dataclass(frozen=True)
class ConvexShown:
    """What S1.3's record shows beside its checks, deciding nothing (issue 79: report-only, out of the estimates).

    Attributes:
        per_block: {"ratio", "uniform"}: (prompts, n_blocks) the worst ratio and the smallest uniform-weights ratio
            per prompt and block.
    """

    per_block: dict[str, np.ndarray] = field(default_factory=dict)


def _patterns(activations) -> list[torch.Tensor]:
    """Each block's (batch, heads, seq, seq) attention pattern."""
    return [activations.cache[f"blocks.{i}.attn.hook_pattern"] for i in range(activations.cache.n_blocks)]


def measure_simplex(captured) -> tuple[SimplexEstimates, SimplexShown]:
    """S1.1's measurement, entry by entry (``per_unit``): the worst |row sum − 1|, probability on a future key and
    negative entry over every attention row, and the future check on the transposed pattern (the control): (the
    checks' estimates, what the record shows beside them).

    Args:
        captured: a capture with ``PATTERNS``, each (batch, heads, seq, seq).
    """
    patterns = _patterns(captured)
    deviations = [simplex_deviation(p) for p in patterns]
    row_sum, future, negative = (np.stack([getattr(d, f).numpy() for d in deviations], axis=1)
                                 for f in ("row_sum", "future", "negative"))  # each (batch, n_blocks)
    leak = np.stack([simplex_deviation(p.transpose(-1, -2)).future.numpy() for p in patterns], axis=1)
    return (SimplexEstimates(per_unit(row_sum, "max"), per_unit(future, "max"), per_unit(negative, "max"),
                             per_unit(leak, "max")),
            SimplexShown({"row_sum": row_sum, "future": future, "negative": negative}))


def _score_forms(subject, claim) -> list:
    """Each block's ``ScoreForm``; ends the test as not informative where scores are not an odds ratio."""
    try:
        return [score_form(subject.model, i) for i in range(len(attention_modules(subject)))]
    except NotAnOddsRatio as why:
        claim.not_informative(gate("S1.2/attention-is-a-gaussian-odds-ratio/not-an-odds-ratio", why=why))


def measure_odds_ratio(subject, captured, dtype: torch.dtype, dtype_name: str, claim
                       ) -> tuple[OddsRatioEstimates, OddsRatioShown]:
    """S1.2's measurement on the first ``IDENTITY_PROMPTS`` prompts: the worst ratio of |captured pattern − softmax
    of the Gaussian log odds ratios of q and k| to the rounding bound, and the controls with Gaussians twice as
    wide and (rotary models) without the rotary embedding: (the checks' estimates, what the record shows beside
    them).

    Args:
        subject: the loaded model (``LoadedModel``).
        captured: its capture with ``PATTERNS``, ``blocks.*.attn.hook_q`` and ``blocks.*.attn.hook_k``.
        dtype, dtype_name: the dtype the model ran in, and its name.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``), for ``not_informative``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where the scores are not an odds ratio, or the
            dtype's rounding cannot resolve the identity.
    """
    forms = _score_forms(subject, claim)
    cache = captured.cache
    fits, wider, unrotated = [], [], []
    for i, form in enumerate(forms):
        pattern, q, k = (cache[f"blocks.{i}.attn.hook_{x}"][:IDENTITY_PROMPTS] for x in ("pattern", "q", "k"))
        fit, wide = pattern_fit(pattern, q, k, form, widths=(1.0, 2.0))
        fits.append(fit)
        wider.append(wide.error_ratio)
        if form.rotary_dims:
            unrotated.append(pattern_fit(pattern, q, k, form.unrotated())[0].error_ratio)
    ratio = np.stack([f.error_ratio.numpy() for f in fits], axis=1)  # (batch, n_blocks)
    control = np.stack([w.numpy() for w in wider], axis=1)
    if dtype in (torch.bfloat16, torch.float16) and control.min() <= 1:
        claim.not_informative(
            gate("S1.2/attention-is-a-gaussian-odds-ratio/below-rounding", dtype=dtype_name,
                 eps=torch.finfo(dtype).eps, smallest=control.min()),
            details={"worst ratio to bound": float(ratio.max()), "σ² = 2/s: smallest ratio": float(control.min())})
    per_block = {"ratio": ratio, "wider": control,
                 "max_abs_error": np.stack([f.max_abs_error.numpy() for f in fits], axis=1)}
    if unrotated:
        per_block["unrotated"] = np.stack([u.numpy() for u in unrotated], axis=1)
    return (OddsRatioEstimates(per_unit(ratio, "max"), per_unit(control, "min"),
                               per_unit(per_block["unrotated"], "min") if unrotated else None),
            OddsRatioShown(forms, per_block))


def measure_convex(subject, prompts: torch.Tensor, dtype: torch.dtype, offload: bool
                   ) -> tuple[ConvexEstimates, ConvexShown]:
    """S1.3's measurement on the first ``IDENTITY_PROMPTS`` of ``prompts`` (batch, seq): one forward pass captures
    the pattern, the values and (by a hook on the output projection, W_O) the heads' outputs before it; the worst
    ratio of |output − Σ_j p_ij v_j| to the matmul's rounding bound, and of |output − the causal mean of v| (the
    control): (the checks' estimates, what the record shows beside them).

    Args:
        subject: the loaded model (``LoadedModel``).
        dtype: the dtype the model ran in; offload: whether its weights are offloaded (``--device-map``).
    """
    attentions = attention_modules(subject)
    prompts = prompts[:IDENTITY_PROMPTS]
    with module_inputs([output_projection(subject.model, a) for a in attentions]) as seen:
        cache = run_with_cache(subject.model, subject.adapter, prompts, names=[PATTERNS, "blocks.*.attn.hook_v"],
                               offload=offload)
    ratio, uniform = [], []
    for i in range(len(attentions)):
        pattern, v = cache[f"blocks.{i}.attn.hook_pattern"], cache[f"blocks.{i}.attn.hook_v"]
        heads = torch.cat([x.to(pattern.device) for x in seen[i]]).unflatten(-1, (pattern.shape[1], -1)).double()
        bound = output_error_bound(pattern, v, dtype)
        ratio.append(((heads - convex_combination(pattern, v)).abs() / bound).flatten(1).amax(dim=1).cpu().numpy())
        uniform.append(((heads - causal_mean(v, pattern.shape[1])).abs() / bound).flatten(1).amax(dim=1).cpu().numpy())
    ratio, uniform = np.stack(ratio, axis=1), np.stack(uniform, axis=1)  # (batch, n_blocks)
    shown = ConvexShown({"ratio": ratio, "uniform": uniform})
    return ConvexEstimates(per_unit(ratio, "max"), per_unit(uniform, "min")), shown
