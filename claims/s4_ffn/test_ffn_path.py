"""S4.4: the input plus the FFN outputs alone is shorter than the full final state but points nearly the same way.

S4 ("Transformation via Vector Addition") drops every attention output from
the vector sum of the blocks: the block-1 input plus the six FFN outputs ends
"far from" the full final state but "quite closely aligned in direction" with
it, and since the final LayerNorm removes the norm (S4.5), the difference in
length "would have no impact on the transformer's final output". Measured here
in the model's own dimensions: the norm ratio and the cosine of that FFN-only
state to the full final state, and the Hellinger distance between the
predictions the two give through the final norm and the output head.

Since version 7 the claim is decided on what S4 measured and said: the FFN-only state is shorter (norm ratio) and
points roughly the same way (cosine). "The difference in norms would have no impact ... because of the LayerNorm" is
a statement about the norm, which the final LayerNorm removes by construction (S4.5 tests that). The stricter reading
of versions 4-6, that the FFN-only state's prediction is no farther from the model's than a seed sibling's is (the
model's own seed-sibling floor, on the same prompts), is kept beside the verdict as a reading: on S4's recipe it
fails (+0.042 [0.035, 0.046] Hellinger, 2026-11-28 H200) where the norm ratio (0.829) and the cosine (0.882) pass.
A model whose recipe has no other training in the zoo gets no floor reading (S4's floor, 0.106 for its own recipe,
is no floor of another recipe's), and the report says so. The cosine bound 0.851
is a reading of S4's words, not a figure S4 gives for this sum: the details show the check's status across
the plausible range of that reading, from S4's "quite close" (0.9967) to its "quite different" (0.5178).
"""

from dataclasses import replace

import numpy as np
import pytest
import torch

from claims.s4_ffn.conftest import FIRST_POSITION, mean_cosine, mean_norm_ratio
from claims.s4_ffn.ffn_path_checks import NEARLY_SAME_WAY, FfnPathEstimates, ffn_path_checks
from fixtures.catalogue_text import procedure
from latent_instruments.distances import hellinger_distance
from latent_instruments.errors import require_finite
from latent_instruments.stats import paired_difference, per_unit, sample_mean
from reports.plots import series
from claims.s4_ffn.ffn_path_measures import excess_over_cross_token


NEEDS = ("blocks.0.hook_resid_pre", "blocks.*.hook_attn_out", "blocks.*.hook_mlp_out", "blocks.*.hook_resid_post",
         "logits")
# S4 Appendix II: H between the main model and three seed siblings on 20,000 prompts, 0.1064, 0.1057, 0.1053:
# "~0.11 is probably a reasonable lower bound for the threshold Hellinger distance" of a meaningful change.
# A model with seed siblings in the zoo is judged against its own floor, measured on the same prompts (since version
# 4 no other model is: S4's floor is shown beside, not used).
SOURCE_SIBLING_FLOOR = (0.1064 + 0.1057 + 0.1053) / 3
READINGS = (0.9967, 0.95, 0.9, NEARLY_SAME_WAY, 0.8, 0.7, 0.6, 0.5178)  # S4's "quite close" ... "quite different"
CHUNK_ELEMENTS = 1 << 24  # logits read out at once (positions × vocabulary): ~130 MB as float64


def readout_distance(subject, states: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """Per-prompt mean Hellinger distance between the prediction of residual states and the model's logits.

    The states go through the model's final norm and output head (S4: ``ln_f`` then ``lm_head``), a few
    prompts at a time (``CHUNK_ELEMENTS``) so that a large vocabulary stays in memory.

    Args:
        subject: the loaded model (``LoadedModel``).
        states: (batch, seq, d_model) residual-stream states, e.g. the input plus the FFN outputs alone.
        logits: (batch, seq, vocab) the model's own logits on the same prompts.
    Returns:
        (batch,) float64 on the CPU, H in [0, 1] averaged over positions from ``FIRST_POSITION``.
    Raises:
        NonFiniteError: if the states or the logits of the readout are not finite.
    """
    model = subject.model
    norm, head = model.get_submodule(subject.adapter.final_norm), model.get_output_embeddings()
    step = max(1, CHUNK_ELEMENTS // (logits.shape[1] * logits.shape[2]))
    out = []
    with torch.no_grad():
        for start in range(0, states.shape[0], step):
            x = states[start : start + step, FIRST_POSITION:].to(head.weight.device, head.weight.dtype)
            require_finite(x, "residual states read out")
            mine = head(norm(x)).float()
            require_finite(mine, "logits of the read-out states")
            ref = logits[start : start + step, FIRST_POSITION:].to(mine.device)
            out.append(hellinger_distance(torch.softmax(mine, -1), torch.softmax(ref, -1)).mean(dim=-1).cpu())
    return torch.cat(out).double()


NO_FLOOR = ("no seed siblings given: the zoo has no other training of this model's recipe, and none was named "
            "(--group siblings:NAME=THIS,SIBLING,... gives them); S4's floor, "
            f"{SOURCE_SIBLING_FLOOR:.3f} for its own recipe, is shown beside, not checked")


def sibling_floor(siblings, ids: torch.Tensor, logits: torch.Tensor) -> np.ndarray:
    """(batch,) H between the model's prediction and its seed siblings', per prompt: mean over positions from
    ``FIRST_POSITION`` and over siblings (S4.7's floor on these prompts).

    Args:
        siblings: the loaded seed siblings (``LoadedModel``), at least one.
        ids: (batch, seq) the token ids the model's ``logits`` (batch, seq, vocab) are of.
    """
    own = torch.softmax(logits[:, FIRST_POSITION:].double(), dim=-1).cpu()
    per_sibling = []
    with torch.no_grad():
        for sibling in siblings:
            theirs = sibling.model(input_ids=ids.to(sibling.input_device)).logits[:, FIRST_POSITION:].double().cpu()
            require_finite(theirs, f"logits of {sibling.name}")
            per_sibling.append(hellinger_distance(own, torch.softmax(theirs, dim=-1)).mean(dim=-1))
    return torch.stack(per_sibling).mean(dim=0).numpy()


def path_readings(subject, captured, contrasts: bool = True) -> dict[str, np.ndarray]:
    """The FFN-only (and, for contrast, attention-only) sums against the full stream, per prompt (S4.4).

    Args:
        subject: the loaded model the capture is of.
        captured: a capture with ``NEEDS``.
        contrasts: whether to read out the contrasts' predictions too ("attn_H", "input_H", "readout_H").
    Returns:
        {"cos", "ratio": (batch, n_blocks) cos and norm ratio of input + Σ_(i≤l) FFN outputs against block l's
        output, per prompt; "cross": (batch,) the cross-token baseline of the final cosine; "H": (batch,) H of the
        final FFN-only state's prediction to the model's; "attn_cos", "attn_ratio", "attn_H": (batch,) the same for
        input + Σ attention outputs; "input_cos", "input_H": (batch,) the same for the input alone; "readout_H":
        (batch,) H of the full final state's readout to the logits}.
    """
    cache = captured.cache
    start = cache["blocks.0.hook_resid_pre"].float()
    ffn_only, attn_only = start.clone(), start.clone()
    cos, ratio = [], []
    for i in range(cache.n_blocks):
        ffn_only = ffn_only + cache[f"blocks.{i}.hook_mlp_out"].float()
        attn_only = attn_only + cache[f"blocks.{i}.hook_attn_out"].float()
        full = cache[f"blocks.{i}.hook_resid_post"]
        cos.append(mean_cosine(ffn_only, full, what="FFN-only state"))
        ratio.append(mean_norm_ratio(ffn_only, full, what="FFN-only state"))
    out = {
        "cos": torch.stack(cos, dim=1).numpy(), "ratio": torch.stack(ratio, dim=1).numpy(),
        "cross": mean_cosine(ffn_only, full, shift=1).numpy(),
        "H": readout_distance(subject, ffn_only, cache.logits).numpy(),
        "attn_cos": mean_cosine(attn_only, full).numpy(), "attn_ratio": mean_norm_ratio(attn_only, full).numpy(),
        "input_cos": mean_cosine(start, full).numpy(),
    }
    if contrasts:
        for key, state in (("attn_H", attn_only), ("input_H", start), ("readout_H", full)):
            out[key] = readout_distance(subject, state, cache.logits).numpy()
    return out


def _by_depth(r: dict, t: dict) -> dict:
    """S4.4's details by block: cosine and norm ratio of input + Σ FFN outputs to the stream, model and twin."""
    return {f"block {i + 1}": {"cos": float(r["cos"][:, i].mean()), "norm ratio": float(r["ratio"][:, i].mean()),
                               "twin cos": float(t["cos"][:, i].mean()),
                               "twin norm ratio": float(t["ratio"][:, i].mean())}
            for i in range(r["cos"].shape[1])}


def _final_state(r: dict, t: dict, cos, ratio, h, floor: np.ndarray | None) -> dict:
    """S4.4's details at the final state: the FFN-only state, the attention-only and input-only contrasts, the
    untrained twin's, and the seed-sibling floors (this model's where it has siblings, and S4's)."""
    last = r["cos"].shape[1] - 1
    return {
        "input + Σ FFN outputs (S4.4)": {"cos": cos.value, "norm ratio": ratio.value, "H": h.value,
                                         "cross-token cos": float(r["cross"].mean())},
        "input + Σ attention outputs (contrast)": {"cos": float(r["attn_cos"].mean()),
                                                   "norm ratio": float(r["attn_ratio"].mean()),
                                                   "H": float(r["attn_H"].mean())},
        "input alone (contrast)": {"cos": float(r["input_cos"].mean()), "H": float(r["input_H"].mean())},
        "untrained twin: input + Σ FFN outputs (no floor: its predictions are near uniform)": {
            "cos": float(t["cos"][:, last].mean()), "norm ratio": float(t["ratio"][:, last].mean()),
            "H": float(t["H"].mean()), "cross-token cos": float(t["cross"].mean())},
        "seed-sibling floor (this model's, on the same prompts)": {"H": float(floor.mean()) if floor is not None
                                                                   else float("nan")},
        "S4 sibling floor (Appendix II)": {"H": SOURCE_SIBLING_FLOOR},
    }


# 7: the seed-sibling floor a reading (S4 speaks of the norm); 6: excess floor in S4's words; 5: readout control per prompt
@pytest.mark.claim("S4.4", version=7, sample="prompts")
@pytest.mark.models("trained", "hf", twin=True, siblings=True)
@pytest.mark.needs(*NEEDS)
def test_ffn_only_state_is_shorter_and_aligned(model_name, subject, pool, activations, twin_activations, siblings,
                                               claim):
    """S4.4: input + Σ FFN outputs against the final state: norm ratio < 1 and cosine > 0.851; the Hellinger
    distance of its prediction to the model's under its own seed-sibling floor (where it has siblings) is a reading
    beside the verdict."""
    r = path_readings(subject, activations)
    t = path_readings(pool.get(subject.entry.twin), twin_activations, contrasts=False)
    last = r["cos"].shape[1] - 1

    def est(u):
        return claim.bootstrap(u, sample_mean)

    cos, ratio, h = est(r["cos"][:, last]), est(r["ratio"][:, last]), est(r["H"])
    paired = np.stack([r["cos"][:, last], r["cross"]], axis=1)
    excess = claim.bootstrap(paired, excess_over_cross_token)
    floor = sibling_floor(siblings, activations.input_ids, activations.cache.logits) if siblings else None
    checks = ffn_path_checks(FfnPathEstimates(
        ratio, cos, excess, est(r["input_cos"]), per_unit(r["readout_H"], "max"),
        None if floor is None else claim.bootstrap(np.stack([r["H"], floor], axis=1), paired_difference), len(siblings or [])))
    readings = {f"cosine > {b:.4g}": replace(checks[1], threshold=b).status for b in READINGS}  # the cosine check
    blocks = list(range(1, last + 2))
    claim.record(
        checks,
        procedure=procedure("S4.4/ffn-only-state-is-shorter-and-aligned", prompts=r['H'].shape[0],
                            positions=activations.input_ids.shape[1],
                            FIRST_POSITION=FIRST_POSITION),
        details={"final state": _final_state(r, t, cos, ratio, h, floor), "by depth": _by_depth(r, t),
                 "the cosine check at readings of 'nearly the same way' from S4's 'quite close' to 'quite different'":
                     readings,
                 "floor reading": (f"this model's own floor, {len(siblings)} seed siblings" if floor is not None else
                                 NO_FLOOR)},
        plot={
            "kind": "lines",
            "title": f"S4.4 on {model_name}: input + Σ FFN outputs against the stream, by depth",
            "x": blocks, "xlabel": "block", "ylabel": "cosine / norm ratio",
            "series": {"cos (trained)": series([est(r["cos"][:, i]) for i in range(last + 1)]),
                       "norm ratio (trained)": series([est(r["ratio"][:, i]) for i in range(last + 1)]),
                       "cos (untrained twin)": {"value": t["cos"].mean(axis=0).tolist()},
                       "norm ratio (untrained twin)": {"value": t["ratio"].mean(axis=0).tolist()}},
        },
        not_informative={} if floor is not None else {"the seed-sibling floor reading": NO_FLOOR},
        beside_source={"‖input + Σ FFN outputs‖ / ‖final state‖": ratio.value},
    )
