"""S4.3's measurements: per block the attention and FFN outputs' norms and cosines, and their statistics.
test_ffn_output.py records what these measure; ffn_output_checks.py decides; S4's notebook figures are in the topic's
home, ffn_output.toml.
"""

from dataclasses import dataclass

import numpy as np
import torch

from claims.s4_ffn.block_vectors import mean_cosine, mean_norm
from fixtures.homes import numbers
from latent_instruments.stats import Estimate

# S4's companion notebook (70_embedding_adjustments.ipynb), 20,000 prompts, last position, blocks 1..6: mean norm of
# the self-attention and FFN outputs, and mean cos(sa_out, ffwd_out)
SOURCE_ATTN_NORM = list(numbers(__file__, *(f"SOURCE_ATTN_NORM_{b}" for b in range(1, 7))))
SOURCE_FFN_NORM = list(numbers(__file__, *(f"SOURCE_FFN_NORM_{b}" for b in range(1, 7))))
SOURCE_COSINE = list(numbers(__file__, *(f"SOURCE_COSINE_{b}" for b in range(1, 7))))
SOURCE_RATIO = [f / a for f, a in zip(SOURCE_FFN_NORM, SOURCE_ATTN_NORM)]  # S4's FFN / attention norm per block


@dataclass(frozen=True)
class FfnOutputEstimates:
    """What S4.3's checks decide on, measured on the attention and FFN outputs of every block, each over prompts (the
    bootstrap unit), one estimate per block where a list.

    Attributes:
        ratios: mean FFN output norm / mean attention output norm (a ratio of means).
        cosines: mean cos(attention output, FFN output) of the same token (cosine units).
        excess: that cosine minus the cross-token baseline (the FFN output of another prompt's token at the same
            position).
        above_twin: least over blocks of the mean cosine minus the untrained twin's, on the same token ids.
    """

    ratios: list[Estimate]
    cosines: list[Estimate]
    excess: list[Estimate]
    above_twin: Estimate


@dataclass(frozen=True)
class FfnOutputShown:
    """What S4.3's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        units, twin_units: the model's and its twin's per-prompt readings (prompts, n_blocks, 4) of
            :func:`block_readings`.
        twin_ratios: the twin's norm ratio per block.
    """

    units: np.ndarray
    twin_units: np.ndarray
    twin_ratios: list[Estimate]


def block_readings(captured) -> np.ndarray:
    """Per-prompt readings of every block's attention and FFN outputs (S4.3).

    Args:
        captured: a capture with ``blocks.*.hook_attn_out`` and ``blocks.*.hook_mlp_out``, each (batch, seq, d_model).
    Returns:
        (batch, n_blocks, 4) float64, means over positions from ``FIRST_POSITION``: [..., 0] attention output
        norm, [..., 1] FFN output norm (activation units), [..., 2] cos(attn_out, mlp_out) of the same token,
        [..., 3] the cross-token baseline, cos with the FFN output of the next prompt's token at the same position.
    Raises:
        ValueError: for fewer than 2 prompts (the baseline needs another prompt).
        NonFiniteError: if an output holds NaN or inf.
    """
    cache = captured.cache
    if captured.input_ids.shape[0] < 2:
        raise ValueError("S4.3's cross-token baseline needs at least 2 prompts")
    rows = []
    for i in range(cache.n_blocks):
        attn, mlp = cache[f"blocks.{i}.hook_attn_out"], cache[f"blocks.{i}.hook_mlp_out"]
        rows.append(torch.stack([
            mean_norm(attn, f"block {i + 1} attention output"), mean_norm(mlp, f"block {i + 1} FFN output"),
            mean_cosine(attn, mlp), mean_cosine(attn, mlp, shift=1),
        ], dim=1))
    return torch.stack(rows, dim=1).numpy()


def output_norm_ratio(block: int):
    """Statistic of :func:`block_readings`' units (prompts, blocks, 4): mean FFN output norm / mean attention output
    norm of one block (a ratio of means over prompts, unitless)."""
    return lambda u: float(u[:, block, 1].mean() / u[:, block, 0].mean())


def block_cosine(block: int):
    """Statistic of :func:`block_readings`' units (prompts, blocks, 4): mean cos(attention output, FFN output) of
    the same token in one block (cosine)."""
    return lambda u: float(u[:, block, 2].mean())


def cosine_excess(block: int, over: int = 3, of: int = 2):
    """Statistic of :func:`block_readings`' units (prompts, blocks, 4): mean cosine ``of`` minus mean cosine
    ``over`` of one block (cosine; by default the same-token cosine minus the cross-token baseline)."""
    return lambda u: float(u[:, block, of].mean() - u[:, block, over].mean())


def least_above_twin(paired: np.ndarray) -> float:
    """Statistic: least over blocks of the mean same-token cosine minus the untrained twin's (cosine units).

    Args:
        paired: (batch, n_blocks, 2): [..., 0] the model's same-token cosine, [..., 1] its twin's, per prompt.
    """
    return float((paired[:, :, 0].mean(axis=0) - paired[:, :, 1].mean(axis=0)).min())


def measure_ffn_outputs(captured, twin_captured, claim) -> tuple[FfnOutputEstimates, FfnOutputShown]:
    """S4.3's measurement: every block's norm ratio, cosine and cross-token excess over prompts, and the least
    excess of the cosine over the untrained twin's, on the same token ids: (the checks' estimates, what the record
    shows beside them).

    Args:
        captured, twin_captured: the model's and its twin's captures (see :func:`block_readings`).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``), whose ``bootstrap`` gives the intervals.
    Raises:
        as :func:`block_readings` and ``ClaimRecorder.bootstrap``.
    """
    units, twin = block_readings(captured), block_readings(twin_captured)
    blocks = range(units.shape[1])
    return FfnOutputEstimates(
        ratios=[claim.bootstrap(units, output_norm_ratio(b)) for b in blocks],
        cosines=[claim.bootstrap(units, block_cosine(b)) for b in blocks],
        excess=[claim.bootstrap(units, cosine_excess(b)) for b in blocks],
        above_twin=claim.bootstrap(np.stack([units[:, :, 2], twin[:, :, 2]], axis=-1), least_above_twin),
    ), FfnOutputShown(units=units, twin_units=twin, twin_ratios=[claim.bootstrap(twin, output_norm_ratio(b))
                                                                 for b in blocks])
