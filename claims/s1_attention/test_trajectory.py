"""S1.4: along depth, the hidden state at position t moves towards the embedding of token t+1.

S1: "depth-wise trajectory for estimate at timestep t = {e_t, z⁽¹⁾_t, …, z⁽ᴸ⁾_t = Ŷ_{t+1}}" and "the final
layer of the network is simply optimizing over this trajectory so that z⁽ᴸ⁾_t ≈ e_{t+1}". The source
assumes tied embeddings (one dictionary E for input and output); our models are untied, so the next
token's row is read two ways, each in the space its matrix acts on, and the claim is decided in the space the
model predicts in (version 3):

- the unembedding row W_U[τ_{t+1}], against the final-normed state ln_f(z⁽ℓ⁾_t) at every depth (the logit
  lens): the logits are ⟨ln_f(z⁽ᴸ⁾_t), W_U[τ]⟩, so ln_f(z⁽ᴸ⁾_t) is the source's pre-logit Ŷ_{t+1};
- the input-embedding row E[τ_{t+1}], against the raw residual state z⁽ℓ⁾_t (the space e_t = E[τ_t] starts in),
  reported beside: with untied embeddings the vector a next-token prediction moves toward is the unembedding
  row, and W_E is a reading of where the trajectory starts (versions 1-2 also decided on it, and every expected
  failure failed that reading alone; tiny-bpe-w96: W_U 0.028 [0.024, 0.033], W_E −0.041).

Closeness is cosine similarity: the residual norm grows with depth, and S1 equates inner product and
distance "considering the implicit constraints on feature norm". "Towards token t+1" is measured as
closeness to its row beyond closeness to other tokens' rows (the next tokens of the batch, shuffled): a
state drifting towards a direction all rows share would otherwise approach every token at once.
"""

import copy

import numpy as np
import pytest
import torch

from claims.s1_attention.conftest import per_layer
from claims.s1_attention.trajectory_checks import TrajectoryEstimates, trajectory_checks
from fixtures.catalogue_text import procedure
from latent_instruments.stats import sample_mean
from reports.plots import series
from claims.s1_attention.trajectory_measures import final_gain, over_twin


NEEDS = ("hook_embed", "blocks.*.hook_resid_post")


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


# 3: decided on W_U (the space the model predicts in), W_E beside; 2: more prompts while inconclusive
@pytest.mark.claim("S1.4", version=3, sample="prompts")
@pytest.mark.models("trained", "hf", twin=True)
@pytest.mark.needs(*NEEDS)
def test_final_state_is_closest_to_the_next_token(model_name, subject, pool, activations, twin_activations,
                                                  claim, settings):
    """S1.4: the last block's final-normed state is closer to token t+1's unembedding row (beyond other tokens')
    than any earlier state (the logit lens); the input-embedding row is read beside."""
    if not torch.equal(activations.input_ids.cpu(), twin_activations.input_ids.cpu()):
        raise ValueError(f"{model_name} and its twin saw different prompts: the paired control needs the same ids")
    twin = pool.get(subject.entry.twin)
    trained = _readings(subject, activations, settings.seed)
    untrained = _readings(twin, twin_activations, settings.seed)
    excess = {k: true - other for k, (true, other) in trained.items()}  # each (batch, n_layers)
    twin_excess = {k: true - other for k, (true, other) in untrained.items()}
    labels = ["embed"] + [f"block {i}" for i in range(1, excess["W_U"].shape[1])]
    paired = np.stack([excess["W_U"][:, -1], twin_excess["W_U"][:, -1]], axis=1)  # (batch, 2)

    input_row = claim.bootstrap(excess["W_E"], final_gain)  # a reading beside the claim (version 3)
    claim.record(
        trajectory_checks(TrajectoryEstimates(claim.bootstrap(excess["W_U"], final_gain),
                                              claim.bootstrap(paired, over_twin))),
        procedure=procedure("S1.4/final-state-is-closest-to-the-next-token", prompts=excess['W_U'].shape[0],
                            positions=activations.input_ids.shape[1]),
        details={
            "mean cosine by depth": {
                label: {f"{who}{key} {side}": float(readings[key][k][:, i].mean())
                        for who, readings in (("", trained), ("twin ", untrained)) for key in ("W_U", "W_E")
                        for k, side in ((0, "next"), (1, "other"))}
                for i, label in enumerate(labels)},
            "the input-embedding row W_E[τ_(t+1)], raw state (a reading, not a check)": {
                "final block's excess closeness minus max(earlier layers', 0)": input_row.value,
                "low": input_row.low, "high": input_row.high},
            "best layer by excess closeness": {k: labels[int(v.mean(axis=0).argmax())] for k, v in excess.items()},
            "twin: final gain (not a check)": {k: final_gain(v) for k, v in twin_excess.items()},
        },
        plot={
            "kind": "lines", "title": f"S1.4 on {model_name}: closeness to token t+1 along depth",
            "x": list(range(len(labels))), "xlabel": "depth (0 = embedding, ℓ = block ℓ)",
            "ylabel": "cos(next token's row) − cos(other token's row)",
            "series": {
                "W_U row, final-normed state": series(per_layer(excess["W_U"], sample_mean, settings.seed)),
                "W_E row, raw state": series(per_layer(excess["W_E"], sample_mean, settings.seed)),
                "twin: W_U row": {"value": twin_excess["W_U"].mean(axis=0).tolist()},
                "twin: W_E row": {"value": twin_excess["W_E"].mean(axis=0).tolist()},
            },
        },
    )
