"""S4.2's measurements: the Hellinger distance of each block's ablations at the last position, and S4.2's estimates from
them. test_feedforward.py records what these measure; feedforward_checks.py decides; S4's table is in the topic's
home, feedforward.toml.
"""

from dataclasses import dataclass

import numpy as np
import torch

from fixtures.homes import numbers
from latent_instruments.distances import hellinger_distance
from latent_instruments.stats import Estimate, bootstrap
from models.forwards import ablated_logits

# S4 Appendix IV, mean Hellinger distance to the full model per block (1..6), attention or FFN output dropped
SOURCE_NO_ATTN = list(numbers(__file__, *(f"SOURCE_NO_ATTN_{b}" for b in range(1, 7))))
SOURCE_NO_FFN = list(numbers(__file__, *(f"SOURCE_NO_FFN_{b}" for b in range(1, 7))))
SOURCE_RATIO = [f / a for f, a in zip(SOURCE_NO_FFN, SOURCE_NO_ATTN)]  # S4's H(no FFN) / H(no attention) per block


@dataclass(frozen=True)
class FeedforwardEstimates:
    """What S4.2's checks decide on, measured at the last position of short prompts, over prompts (Hellinger
    distances H to the full model's prediction).

    Attributes:
        ratios: per block, H(no FFN) / H(no attention) (a ratio of means).
        lead: block 1's H(no FFN) − H(no attention) minus the largest later block's (None for one block).
        floor: the smallest block's mean H(no attention) (a control: a dead ablation gives ~1e-7).
    """

    ratios: list[Estimate]
    lead: Estimate | None
    floor: Estimate


@dataclass(frozen=True)
class FeedforwardShown:
    """What S4.2's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        h, twin_h, context_h: per-prompt H (prompts, n_blocks, 2; [..., 0] attention dropped, [..., 1] FFN dropped)
            at the last position, of the untrained twin there, and over every position of full-context prompts
            (version 3's reading).
        sides: per block, [mean H(no attention), mean H(no FFN)].
        twin_ratios, context_ratios: per block, the twin's ratio and the full-context ratio.
    """

    h: np.ndarray
    twin_h: np.ndarray
    context_h: np.ndarray
    sides: list[list[Estimate]]
    twin_ratios: list[Estimate]
    context_ratios: list[Estimate]


def last_position_distances(subject, input_ids: torch.Tensor) -> np.ndarray:
    """S4 Appendix IV's measurement: H of the next-token distribution at the last position of each prompt, with one
    block's attention or FFN output dropped, to the full model's.

    Args:
        subject: the loaded model (``LoadedModel``).
        input_ids: (batch, seq) short prompts (S4: 10 characters), on the model's input device.
    Returns:
        (batch, n_blocks, 2) float64: [..., 0] attention output dropped, [..., 1] FFN output dropped, in [0, 1].
    Raises:
        NonFiniteError: if logits are not finite.
        RuntimeError: if the adapter's module did not run inside the block.
    """
    model, adapter = subject.model, subject.adapter
    with torch.no_grad():
        full = torch.softmax(model(input_ids=input_ids, use_cache=False).logits[:, -1].float(), dim=-1)
    out = []
    for block in range(len(adapter.block_list(model))):
        row = [hellinger_distance(full, torch.softmax(
            ablated_logits(model, adapter, input_ids, block, drop)[:, -1].to(full.device), dim=-1)).cpu()
            for drop in ("attn", "mlp")]
        out.append(torch.stack(row, dim=1))  # (batch, 2)
    return torch.stack(out, dim=1).double().numpy()


def ablation_distances(subject, captured) -> np.ndarray:
    """Per-prompt mean Hellinger distance of each single-summand ablation to the full model (S4 Appendix IV).

    Args:
        subject: the loaded model (``LoadedModel``).
        captured: its capture with ``logits`` (``Captured``); the ablated passes run on its input_ids.
    Returns:
        (batch, n_blocks, 2) float64: [..., 0] attention output dropped, [..., 1] FFN output dropped;
        H at every position, averaged per prompt, in [0, 1].
    Raises:
        NonFiniteError: if logits are not finite.
        RuntimeError: if the adapter's module did not run inside the block.
    """
    full = torch.softmax(captured.cache.logits, dim=-1)
    out = []
    for block in range(captured.cache.n_blocks):
        row = []
        for drop in ("attn", "mlp"):
            logits = ablated_logits(subject.model, subject.adapter, captured.input_ids, block, drop).to(full.device)
            row.append(hellinger_distance(full, torch.softmax(logits, dim=-1)).mean(dim=1).cpu())  # (batch,)
        out.append(torch.stack(row, dim=1))
    return torch.stack(out, dim=1).numpy()


def ablation_ratio(block: int):
    """Statistic of units (prompts, blocks, 2): H(no FFN) / H(no attention) of one block, a ratio of means over
    prompts (Hellinger distances to the intact prediction; [..., 0] attention removed, [..., 1] FFN removed)."""
    def statistic(units: np.ndarray) -> float:
        mean = units[:, block].mean(axis=0)
        return float(mean[1] / mean[0])
    return statistic


def weakest_attention_ablation(units: np.ndarray) -> float:
    """Control statistic: the smallest block's mean H(no attention) over prompts (units (prompts, blocks, 2)); an
    ablation that silently did nothing gives float rounding, ~1e-7."""
    return float(units.mean(axis=0)[:, 0].min())


def block_one_lead(units: np.ndarray) -> float:
    """Statistic: block 1's difference H(no FFN) − H(no attention) minus the largest later block's, of means over
    prompts (units: (prompts, blocks, 2) as ``last_position_distances`` returns; at least two blocks)."""
    mean = units.mean(axis=0)  # (blocks, 2)
    difference = mean[:, 1] - mean[:, 0]
    return float(difference[0] - difference[1:].max())


def s4_2_estimates(h: np.ndarray, seed: int) -> FeedforwardEstimates:
    """S4.2's estimates from per-prompt ablation distances ``h`` (prompts, blocks, 2): each block's ratio, block 1's
    lead (where there is a later block), and the weakest attention ablation (the control's floor), each
    bootstrapped at ``seed``.

    Raises:
        ValueError: for ``h`` not of shape (prompts, blocks, 2).
    """
    if h.ndim != 3 or h.shape[2] != 2:
        raise ValueError(f"ablation distances must be (prompts, blocks, 2), got {h.shape}")
    return FeedforwardEstimates([bootstrap(h, ablation_ratio(b), seed=seed) for b in range(h.shape[1])],
                                bootstrap(h, block_one_lead, seed=seed) if h.shape[1] > 1 else None,
                                bootstrap(h, weakest_attention_ablation, seed=seed))


def _side_mean(block: int, side: int):
    """Statistic of units (prompts, blocks, 2): one block's mean H with one summand dropped (0 attention, 1 FFN)."""
    return lambda units: float(units[:, block, side].mean())


def measure_ffn_dominance(subject, twin, input_ids: torch.Tensor, captured,
                          claim) -> tuple[FeedforwardEstimates, FeedforwardShown]:
    """S4.2's measurement: the ablations' H at the last position of ``input_ids`` (batch, seq) on the model and its
    untrained twin, and over every position of ``captured``'s full-context prompts (version 3's reading): (the
    checks' estimates, what the record shows beside them).

    Args:
        subject, twin: the loaded model and its untrained twin (``LoadedModel``).
        captured: the model's capture with ``logits`` (see :func:`ablation_distances`).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``), whose ``bootstrap`` gives the intervals.
    Raises:
        as :func:`last_position_distances`, :func:`ablation_distances` and ``ClaimRecorder.bootstrap``.
    """
    h = last_position_distances(subject, input_ids)
    twin_h = last_position_distances(twin, input_ids.to(twin.input_device))
    context_h = ablation_distances(subject, captured)
    blocks = range(h.shape[1])
    return s4_2_estimates(h, claim.seed), FeedforwardShown(
        h=h, twin_h=twin_h, context_h=context_h,
        sides=[[claim.bootstrap(h, _side_mean(b, s)) for s in (0, 1)] for b in blocks],
        twin_ratios=[claim.bootstrap(twin_h, ablation_ratio(b)) for b in blocks],
        context_ratios=[claim.bootstrap(context_h, ablation_ratio(b)) for b in range(context_h.shape[1])])
