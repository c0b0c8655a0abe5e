"""S1: the attention matrix as odds ratios and barycentric coordinates.

S1.1 — every attention row is a point of the simplex: non-negative, sums to 1, zero on masked (future) positions.
S1.2 — the softmax of scaled dot products equals the softmax of Gaussian log odds ratios,
       log N(q|k) − log N(q|0) − log N(k|0).
S1.3 — each head's output at position t is the convex combination of the value vectors with weights S_t.

All three are properties of the mechanism, true of any weights, so they run on every model role: what
they test is that the captured activations are what the source's algebra says they are, on each
architecture (scaling, rotary embedding, grouped-query heads), within the rounding of the dtype the model
ran in. S1 is an argument, not an experiment: it gives no figure, so every threshold is a numerical-error
bound derived from the dtype, stated with each check.
"""

import pytest

from claims.s1_attention.heads import ALL_ROLES
from claims.s1_attention.identity_checks import convex_checks, odds_ratio_checks, simplex_checks
from claims.s1_attention.identity_measures import (
    PATTERNS, identity_context, measure_convex, measure_odds_ratio, measure_simplex,
)
from fixtures.catalogue_text import procedure
from latent_instruments.attention import ScoreForm


@pytest.mark.claim("S1.1", version=2)  # 2: decided entry by entry (per_unit), not by a bootstrap of a maximum
@pytest.mark.models(*ALL_ROLES)
@pytest.mark.needs(PATTERNS)
def test_attention_rows_lie_on_the_simplex(model_name, activations, claim, settings):
    """S1.1: worst |row sum − 1|, worst probability on a future key, worst negative entry, over every row."""
    e, shown = measure_simplex(activations)
    row_sum, future, negative = (shown.per_block[k] for k in ("row_sum", "future", "negative"))
    n_keys = activations.cache["blocks.0.attn.hook_pattern"].shape[-1]
    context = identity_context(settings.dtype, settings.dtype_name, n_keys)
    sum_tolerance, zero = context.sum_tolerance, context.zero
    blocks = list(range(1, row_sum.shape[1] + 1))
    claim.record(
        simplex_checks(e, context),
        procedure=procedure("S1.1/attention-rows-lie-on-the-simplex", prompts=row_sum.shape[0], n_keys=n_keys,
                            dtype=settings.dtype_name),
        details={
            "per_block": {f"block {b}": {"max |row sum − 1|": float(row_sum[:, i].max()),
                                         "max p on future keys": float(future[:, i].max()),
                                         "max −p": float(negative[:, i].max())} for i, b in enumerate(blocks)},
            "tolerances": {"row sum": sum_tolerance, "future and negative entries": zero},
        },
        plot={
            "kind": "lines", "title": f"S1.1 on {model_name}: worst row-sum deviation per block",
            "x": blocks, "xlabel": "block", "ylabel": "max |Σ_j p_ij − 1|",
            "series": {"worst over prompts": {"value": row_sum.max(axis=0).tolist()},
                       f"{settings.dtype_name} rounding bound": {"value": [sum_tolerance] * len(blocks)}},
        },
    )


def _forms_table(forms: list[ScoreForm]) -> dict[str, str]:
    """{blocks: form} with consecutive blocks of the same form on one row ("blocks 1-12": "s = 0.125, no rotary")."""
    rows, start = {}, 0
    for i in range(1, len(forms) + 1):
        if i == len(forms) or forms[i].description != forms[start].description:
            rows[f"block {start + 1}" if i == start + 1 else f"blocks {start + 1}-{i}"] = forms[start].description
            start = i
    return rows


@pytest.mark.claim("S1.2", version=2)  # 2: decided entry by entry (per_unit), not by a bootstrap of a maximum
@pytest.mark.models(*ALL_ROLES)
@pytest.mark.needs(PATTERNS, "blocks.*.attn.hook_q", "blocks.*.attn.hook_k")
def test_attention_is_a_gaussian_odds_ratio(model_name, subject, activations, claim, settings):
    """S1.2: the softmax over causal j of the Gaussian log odds ratios of each head's q_i and k_j is its pattern.

    Queries and keys are captured before the rotary embedding and the score scaling; the architecture's
    rotation is applied with the model's own rotary module, and its scaling s is folded into the
    Gaussians' variance, σ² = 1 / s. The statistic is the worst ratio of |captured − odds ratio| to the
    rounding bound of a dtype softmax of those scores (``pattern_error_bound``): below 1 everywhere.
    """
    e, shown = measure_odds_ratio(subject, activations, settings.dtype, settings.dtype_name, claim)
    per_block = shown.per_block
    ratio, control, unrotated_units = per_block["ratio"], per_block["wider"], per_block.get("unrotated")
    blocks, unrotated = list(range(1, len(shown.forms) + 1)), unrotated_units is not None
    checks = odds_ratio_checks(e, identity_context(settings.dtype, settings.dtype_name, activations.input_ids.shape[1]))
    details = {
        "score form": _forms_table(shown.forms),
        "per_block": {f"block {b}": {"worst ratio to bound": float(ratio[:, i].max()),
                                     "worst |p − p̂|": float(per_block["max_abs_error"][:, i].max()),
                                     "σ² = 2/s: smallest ratio": float(control[:, i].min())}
                      for i, b in enumerate(blocks)},
    }
    if unrotated:
        details["without rotary embedding: smallest ratio per block"] = {
            f"block {b}": float(unrotated_units[:, i].min()) for i, b in enumerate(blocks)}
    claim.record(
        checks,
        procedure=procedure("S1.2/attention-is-a-gaussian-odds-ratio", prompts=ratio.shape[0],
                            positions=activations.input_ids.shape[1],
                            dtype=settings.dtype_name),
        details=details,
        plot={
            "kind": "lines", "title": f"S1.2 on {model_name}: worst |p − p̂| relative to the rounding bound",
            "x": blocks, "xlabel": "block", "ylabel": "ratio to bound (log)", "logy": True,
            "series": {"odds ratio, σ² = 1/s (claim)": {"value": ratio.max(axis=0).tolist()},
                       "σ² = 2/s (control, must exceed 1)": {"value": control.min(axis=0).tolist()},
                       **({"unrotated q, k (control, must exceed 1)": {"value": unrotated_units.min(axis=0).tolist()}}
                          if unrotated else {}),
                       "bound": {"value": [1.0] * len(blocks)}},
        },
    )


@pytest.mark.claim("S1.3", version=2)  # 2: decided entry by entry (per_unit), not by a bootstrap of a maximum
@pytest.mark.models(*ALL_ROLES)
def test_head_outputs_are_convex_combinations_of_values(model_name, subject, prompts, claim, settings):
    """S1.3: each head's output, the input of the attention's output projection, is Σ_j p_ij v_j.

    One forward pass of the held-out prompts captures the pattern, the values and (by a hook on the
    output projection, W_O) the heads' outputs before it; the outputs are recomputed from the first two.
    """
    e, shown = measure_convex(subject, prompts, settings.dtype, offload=settings.device_map is not None)
    ratio, uniform = shown.per_block["ratio"], shown.per_block["uniform"]
    n_keys = prompts.shape[1]
    blocks = list(range(1, ratio.shape[1] + 1))
    claim.record(
        convex_checks(e, identity_context(settings.dtype, settings.dtype_name, n_keys)),
        procedure=procedure("S1.3/head-outputs-are-convex-combinations-of-values", prompts=ratio.shape[0],
                            n_keys=n_keys, dtype=settings.dtype_name),
        details={"per_block": {f"block {b}": {"worst ratio to bound": float(ratio[:, i].max()),
                                              "uniform weights: smallest ratio": float(uniform[:, i].min())}
                               for i, b in enumerate(blocks)}},
        plot={
            "kind": "lines", "title": f"S1.3 on {model_name}: worst |y − Vᵀ S_t| relative to the rounding bound",
            "x": blocks, "xlabel": "block", "ylabel": "ratio to bound (log)", "logy": True,
            "series": {"pattern's weights (claim)": {"value": ratio.max(axis=0).tolist()},
                       "uniform weights (control, must exceed 1)": {"value": uniform.min(axis=0).tolist()},
                       "bound": {"value": [1.0] * len(blocks)}},
        },
    )
