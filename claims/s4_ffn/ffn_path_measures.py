"""S4.4's measurements: the FFN-only and attention-only sums against the stream, their predictions' Hellinger distances,
the seed-sibling floor, and the cosine excess over the cross-token baseline. test_ffn_path.py records what these
measure; ffn_path_checks.py decides; the numbers both read are in the topic's home, ffn_path.toml.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from claims.s4_ffn.block_vectors import FIRST_POSITION, mean_cosine, mean_norm_ratio
from fixtures.homes import numbers
from latent_instruments.distances import hellinger_distance
from latent_instruments.errors import require_finite
from latent_instruments.geometry import excess_over_baseline
from latent_instruments.stats import Estimate, paired_difference, per_unit, sample_mean

# S4 Appendix II: H between S4's model and its three seed siblings on 20,000 prompts, "~0.11 is probably a reasonable
# lower bound for the threshold Hellinger distance" of a meaningful change; kept in S4.6-S4.8's home, where it is a
# claim's floor. Shown beside S4.4's own floor, never used for it.
SOURCE_FLOOR = numbers(Path(__file__).with_name("similar_strings.toml"),
                       "SOURCE_FLOOR_1", "SOURCE_FLOOR_2", "SOURCE_FLOOR_3")
SOURCE_SIBLING_FLOOR = sum(SOURCE_FLOOR) / len(SOURCE_FLOOR)

NEEDS = ("blocks.0.hook_resid_pre", "blocks.*.hook_attn_out", "blocks.*.hook_mlp_out", "blocks.*.hook_resid_post",
         "logits")


@dataclass(frozen=True)
class FfnPathEstimates:
    """What S4.4's checks decide on, measured at the last block, over sequences (the bootstrap unit).

    Attributes:
        ratio: ‖input + Σ FFN outputs‖ / ‖final state‖.
        cos: cos(input + Σ FFN outputs, final state).
        excess: that cosine's excess over the cross-token baseline, (c − b) / (1 − b) (fraction).
        input_cos: cos(input alone, final state).
        readout: largest H of the final norm + head applied to the captured final state to the model's logits
            (per prompt, Hellinger).
        below_siblings: mean H(prediction from input + Σ FFN outputs, model's) minus the seed siblings' (a reading;
            None without siblings).
        siblings: how many seed siblings ``below_siblings`` is measured against.
    """

    ratio: Estimate
    cos: Estimate
    excess: Estimate
    input_cos: Estimate
    readout: Estimate
    below_siblings: Estimate | None = None
    siblings: int = 0


@dataclass(frozen=True)
class FfnPathShown:
    """What S4.4's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        h: H of the final FFN-only state's prediction to the model's.
        readings, twin_readings: :func:`path_readings` of the model and of its untrained twin.
        floor: (prompts,) H between the model's prediction and its seed siblings' (None without siblings).
        by_depth: {"cos", "ratio"}: per block, the FFN-only state's estimates against the stream.
    """

    h: Estimate
    readings: dict[str, np.ndarray]
    twin_readings: dict[str, np.ndarray]
    floor: np.ndarray | None
    by_depth: dict[str, list[Estimate]] = field(default_factory=dict)


def excess_over_cross_token(units: np.ndarray) -> float:
    """(c − b) / (1 − b) of the mean same-token cosine c and cross-token cosine b; units (batch, 2) = [c, b]."""
    c, b = units.mean(axis=0)
    return float(excess_over_baseline(torch.tensor(c), torch.tensor(b)))


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


def measure_ffn_path(subject, twin, captured, twin_captured, siblings,
                     claim) -> tuple[FfnPathEstimates, FfnPathShown]:
    """S4.4's measurement at the last block, over prompts: the FFN-only state's norm ratio, cosine and its excess
    over the cross-token baseline, the input-alone and readout controls, and (with seed siblings) its prediction's
    H against the siblings' floor on the same prompts: (the checks' estimates, what the record shows beside them).

    Args:
        subject, twin: the loaded model and its untrained twin (``LoadedModel``).
        captured, twin_captured: their captures with ``NEEDS`` (see :func:`path_readings`).
        siblings: the model's loaded seed siblings, possibly none.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``), whose ``bootstrap`` gives the intervals.
    Raises:
        NonFiniteError: as :func:`path_readings` and :func:`sibling_floor`.
    """
    r = path_readings(subject, captured)
    t = path_readings(twin, twin_captured, contrasts=False)
    last = r["cos"].shape[1] - 1

    def est(u):
        return claim.bootstrap(u, sample_mean)

    floor = sibling_floor(siblings, captured.input_ids, captured.cache.logits) if siblings else None
    by_depth = {k: [est(r[k][:, i]) for i in range(last + 1)] for k in ("cos", "ratio")}
    return FfnPathEstimates(
        by_depth["ratio"][last], by_depth["cos"][last],
        claim.bootstrap(np.stack([r["cos"][:, last], r["cross"]], axis=1), excess_over_cross_token),
        est(r["input_cos"]), per_unit(r["readout_H"], "max"),
        None if floor is None else claim.bootstrap(np.stack([r["H"], floor], axis=1), paired_difference),
        len(siblings or [])), FfnPathShown(h=est(r["H"]), readings=r, twin_readings=t, floor=floor, by_depth=by_depth)
