"""S4.2's measurements: the Hellinger distance of each block's ablations at the last position, and S4.2's estimates from
them. test_feedforward.py measures with these; feedforward_checks.py decides.
"""

import numpy as np
import torch

from claims.s4_ffn.feedforward_checks import FeedforwardEstimates, feedforward_checks
from latent_instruments.distances import hellinger_distance
from latent_instruments.stats import Estimate, bootstrap
from models.forwards import ablated_logits


# S4 Appendix IV, mean Hellinger distance to the full model per block (1..6).
SOURCE_NO_ATTN = [0.11, 0.07, 0.09, 0.06, 0.04, 0.03]


SOURCE_NO_FFN = [0.70, 0.19, 0.15, 0.13, 0.14, 0.17]


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


def s4_2_estimates(h: np.ndarray, seed: int, floor: Estimate | None = None) -> FeedforwardEstimates:
    """S4.2's estimates from per-prompt ablation distances ``h`` (prompts, blocks, 2): each block's ratio, block 1's
    lead (where there is a later block), and ``floor`` (default: the same bootstrap of the weakest attention
    ablation).

    Raises:
        ValueError: for ``h`` not of shape (prompts, blocks, 2).
    """
    if h.ndim != 3 or h.shape[2] != 2:
        raise ValueError(f"ablation distances must be (prompts, blocks, 2), got {h.shape}")
    return FeedforwardEstimates([bootstrap(h, ablation_ratio(b), seed=seed) for b in range(h.shape[1])],
                                bootstrap(h, block_one_lead, seed=seed) if h.shape[1] > 1 else None,
                                floor or bootstrap(h, weakest_attention_ablation, seed=seed))


def s4_2_checks(h: np.ndarray, seed: int) -> list:
    """S4.2's claim checks (``feedforward_checks`` of :func:`s4_2_estimates`, the control left out)."""
    return [c for c in feedforward_checks(s4_2_estimates(h, seed)) if c.role == "claim"]
