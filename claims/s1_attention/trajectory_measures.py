"""S1.4's measurements: the depth-wise trajectory's closeness to the next token's row beyond other tokens', its
final block's gain and the trained model's over its twin's. test_trajectory.py records what these measure;
trajectory_checks.py decides; its rows are in the topic's home, trajectory.toml.
"""

import copy
from dataclasses import dataclass, field

import numpy as np
import torch

from claims.s1_attention.heads import per_layer
from latent_instruments.stats import Estimate, paired_difference, sample_mean

NEEDS = ("hook_embed", "blocks.*.hook_resid_post")


@dataclass(frozen=True)
class TrajectoryEstimates:
    """What S1.4's checks decide on, measured over prompts (cosine units). Excess closeness is cos(state, row of
    τ_(t+1)) minus cos(state, row of a shuffled next token).

    Attributes:
        gain: the final block's excess closeness to the unembedding row W_U[τ_(t+1)] (final norm applied at every
            depth, the logit lens) minus max(earlier layers', 0).
        over_twin: the final layer's excess closeness, the model's minus its untrained twin's (paired).
    """

    gain: Estimate
    over_twin: Estimate


@dataclass(frozen=True)
class TrajectoryShown:
    """What S1.4's record shows beside its checks, deciding nothing (issue 79: report-only, out of the estimates).

    Attributes:
        readings, twin_readings: {"W_U", "W_E"}: (true, other), each (prompts, n_layers) mean cosines with the next
            token's row and another token's, model and twin.
        input_row: the final gain read on the input-embedding row W_E (a reading since version 3).
        by_layer: {"W_U", "W_E"}: each layer's mean excess closeness.
    """

    readings: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    twin_readings: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    input_row: Estimate | None = None
    by_layer: dict[str, list[Estimate]] = field(default_factory=dict)


def final_gain(units: np.ndarray) -> float:
    """Statistic of units (prompts, layers): the final layer's mean excess closeness minus the larger of every
    earlier layer's and 0 (other tokens'), in the units' own unit."""
    mean = units.mean(axis=0)
    return float(mean[-1] - max(mean[:-1].max(), 0.0))


def _depth_states(captured) -> list[torch.Tensor]:
    """[e_t, z⁽¹⁾, …, z⁽ᴸ⁾]: token embeddings (before positions, as S1's e) and each block's output, (batch, seq, d)."""
    cache = captured.cache
    return [cache["hook_embed"]] + [cache[f"blocks.{i}.hook_resid_post"] for i in range(cache.n_blocks)]


def _compared_positions(ids: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Next tokens, other tokens, and the positions where comparing them says something.

    Other tokens are the batch's next tokens permuted at random (the same frequencies). A position t is
    compared where the next token differs from the current one and the other token differs from both: the
    trajectory starts at e_t = W_E[τ_t], so a target equal to τ_t is near from the start, on either side.

    Args:
        ids: (batch, seq) token ids.
        seed: seeds the permutation.
    Returns:
        targets, others: (batch, seq − 1) ids; keep: (batch, seq − 1) bool.
    """
    current, targets = ids[:, :-1], ids[:, 1:]
    order = torch.randperm(targets.numel(), generator=torch.Generator().manual_seed(seed)).to(targets.device)
    others = targets.flatten()[order].view_as(targets)
    keep = (targets != current) & (others != current) & (others != targets)
    return targets, others, keep


def excess_closeness(states: list[torch.Tensor], rows: torch.Tensor, ids: torch.Tensor, seed: int,
                     transform=None) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt and depth: mean cosine of the state at t with the next token's row, and with another token's row.

    Args:
        states: n_layers tensors (batch, seq, d_model), the depth-wise trajectory.
        rows: (vocab, d_model) the target dictionary (W_E or W_U).
        ids: (batch, seq) the prompts' token ids; position t's target is ids[:, t + 1].
        seed: seeds the other tokens (:func:`_compared_positions`).
        transform: applied to each state first (the final norm, for W_U), or None.
    Returns:
        true, other: (batch, n_layers) float64 mean cosines over the compared positions.
    Raises:
        ValueError: if the rows and the states differ in width.
    """
    if rows.shape[1] != states[0].shape[-1]:
        raise ValueError(f"the rows are {rows.shape[1]}-dimensional and the states {states[0].shape[-1]}-dimensional "
                         "(a projection between the final norm and the head, as OPT-350m's project_out?)")
    targets, others, keep = (x.to(rows.device) for x in _compared_positions(ids, seed))
    rows, keep = rows.float(), keep.double()
    true_rows, other_rows = rows[targets], rows[others]
    true_cos, other_cos = [], []
    with torch.no_grad():
        for state in states:
            x = state[:, :-1].float().to(rows.device)
            x = transform(x) if transform is not None else x
            for rows_, out in ((true_rows, true_cos), (other_rows, other_cos)):
                cos = torch.cosine_similarity(x, rows_, dim=-1).double()
                out.append((cos * keep).sum(dim=1) / keep.sum(dim=1))
    return torch.stack(true_cos, dim=1).cpu().numpy(), torch.stack(other_cos, dim=1).cpu().numpy()


def _readings(subject, captured, seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"W_U": (true, other), "W_E": (true, other)} of :func:`excess_closeness` for one model."""
    model, states = subject.model, _depth_states(captured)
    norm = copy.deepcopy(model.get_submodule(subject.adapter.final_norm)).float()
    unembedding = model.get_output_embeddings().weight.detach()
    embedding = model.get_input_embeddings().weight.detach()
    return {
        "W_U": excess_closeness(states, unembedding, captured.input_ids, seed, transform=norm.to(unembedding.device)),
        "W_E": excess_closeness(states, embedding, captured.input_ids, seed),
    }


def measure_trajectory(subject, twin, captured, twin_captured, claim) -> tuple[TrajectoryEstimates, TrajectoryShown]:
    """S1.4's measurement over prompts: the final block's excess closeness to the next token's unembedding row (the
    logit lens) beyond every earlier layer's, the model's over its untrained twin's on the same prompts (the
    control), and the same gain on the input-embedding row (a reading): (the checks' estimates, what the record
    shows beside them).

    Args:
        subject, twin: the loaded model and its untrained twin (``LoadedModel``).
        captured, twin_captured: their captures with ``NEEDS`` on the same token ids.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap`` and ``seed``.
    Raises:
        ValueError: if the two captures saw different prompts (the paired control needs the same ids), or as
            :func:`excess_closeness`.
    """
    if not torch.equal(captured.input_ids.cpu(), twin_captured.input_ids.cpu()):
        raise ValueError(f"{subject.name} and its twin saw different prompts: the paired control needs the same ids")
    trained, untrained = _readings(subject, captured, claim.seed), _readings(twin, twin_captured, claim.seed)
    excess = {k: true - other for k, (true, other) in trained.items()}  # each (batch, n_layers)
    twin_excess = {k: true - other for k, (true, other) in untrained.items()}
    paired = np.stack([excess["W_U"][:, -1], twin_excess["W_U"][:, -1]], axis=1)  # (batch, 2)
    return (TrajectoryEstimates(claim.bootstrap(excess["W_U"], final_gain), claim.bootstrap(paired, paired_difference)),
            TrajectoryShown(trained, untrained, claim.bootstrap(excess["W_E"], final_gain),
                            {k: per_layer(v, sample_mean, claim.seed) for k, v in excess.items()}))
