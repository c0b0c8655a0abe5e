"""S4.5: the final LayerNorm removes the scale of the last block's output, and its output norm varies only a
little with the input's direction.

Appendix III: scaling final-block outputs by 10 (22.89 -> 228.9) leaves the LayerNorm output norm at 23.1262 vs
23.1263; a direction change to cosine 0.52 moves it a little (23.1496 vs 23.0546, 0.41 %). The checks and their
bounds are in ``final_norm_checks`` (a pure function of this test's estimates; version 8 decides "a little" with a
bound read off S4's own 0.41 %). The output norm of g ⊙ z + b (z the standardised input) depends on direction only
through an uneven gain g or the bias b: the change is measured again with the gain evened out and with the bias
removed, to say which causes it. On an untrained norm (unit gain, zero bias) the claim is an identity. The scale
part is an identity of any affine normalisation: an implementation check (hypothesis searches scales 0.5-1000).
"""

import copy

import numpy as np
import pytest
import torch

from fixtures.catalogue_text import procedure
from latent_instruments.normalization import (
    gain_unevenness, relative_norm_change, rotate_to_cosine, with_concentrated_gain, with_even_gain, without_bias,
)
from claims.s4_ffn.final_norm_checks import (CLOSE, COSINE, SCALE, SOURCE_TURNED_CHANGE, FinalNormEstimates,
                                             final_norm_checks)
from latent_instruments.stats import Estimate, per_unit, sample_mean
from claims.s4_ffn.final_norm_measures import paired_excess, worst_scale_change


N_VECTORS = 256  # S4 uses 1000 prompts' last positions; we sample positions of the held-out batch, evenly per prompt
UNDER = 0.01  # a reading in the details: "under 1 %" is the catalogue's paraphrase of S4's one vector, not S4's words


def _final_norm(subject) -> torch.nn.Module:
    """A float32 copy of the model's final norm (the model itself stays in its dtype)."""
    return copy.deepcopy(subject.model.get_submodule(subject.adapter.final_norm)).float()


def _final_block_outputs(activations, seed: int) -> torch.Tensor:
    """(batch, k, d_model) final-norm inputs, float32: k = N_VECTORS // batch seeded random positions per prompt
    (the first position excluded), so that the prompt stays the bootstrap unit."""
    x = activations.cache["ln_final.hook_in"][:, 1:, :]
    k = max(1, min(N_VECTORS // x.shape[0], x.shape[1]))
    generator = torch.Generator().manual_seed(seed)
    pick = torch.stack([torch.randperm(x.shape[1], generator=generator)[:k] for _ in range(x.shape[0])])
    return torch.take_along_dim(x, pick.to(x.device)[:, :, None], dim=1).float()


def _identity_parameters(norm: torch.nn.Module) -> bool:
    """Whether a norm has unit gain and zero bias (an untrained norm), where S4.5 holds by construction."""
    weight, bias = getattr(norm, "weight", None), getattr(norm, "bias", None)
    return (weight is None or bool((weight == 1).all())) and (bias is None or bool((bias == 0).all()))


def _changes(norm: torch.nn.Module, x: torch.Tensor, other: torch.Tensor) -> np.ndarray:
    """(batch, k) relative output-norm changes of :func:`relative_norm_change` for x, other (batch, k, d_model)."""
    return relative_norm_change(norm, x.flatten(0, 1), other.flatten(0, 1)).reshape(x.shape[:2]).cpu().numpy()


def _median(u: np.ndarray) -> float:
    return float(np.median(u))


def _under(u: np.ndarray) -> float:
    return float((u < UNDER).mean())


def _row(e: Estimate) -> dict:
    return {"value": e.value, "low": e.low, "high": e.high}


IDENTITY_REASON = (  # S4.5's not-informative reason on a norm with unit gain and zero bias
    "the final norm has unit gain and zero bias (random init), so its output is the standardised input, "
    "whose norm is sqrt(d_model) whatever the input's scale or direction (RMSNorm: up to its eps): both "
    "parts of S4.5 hold as an identity (measured: ×10 moves the output norm by {scaled:.1e}, the "
    "turn to cosine 0.52 by {rotated:.1e}) and say nothing about a learned norm. S4's claim is "
    "about a trained model's final LayerNorm, whose gain and bias are learned")


def _direction_dependence(norm, x: torch.Tensor, turned: torch.Tensor, rotated: np.ndarray, est) -> dict:
    """S4.5's details on what makes the output norm depend on direction: the gain's unevenness, the bias's size, and
    the mean change as measured (``rotated``), with the gain evened and with the bias removed; x, turned (batch,
    positions, d_model); ``est`` the test's bootstrap of a mean."""
    gain, bias = norm.weight.detach().double(), getattr(norm, "bias", None)
    evened, unbiased = _changes(with_even_gain(norm), x, turned), _changes(without_bias(norm), x, turned)
    return {
        "gain unevenness, std(g²) / mean(g²)": {"value": gain_unevenness(norm)},
        "‖bias‖ / ‖gain‖": {"value": 0.0 if bias is None else float(bias.detach().double().norm() / gain.norm())},
        "mean change, as measured": _row(est(rotated)),
        "mean change, gain evened (bias kept)": _row(est(evened)),
        "mean change, bias removed (gain kept)": _row(est(unbiased)),
    }


# 8: 'a little' decided, under 10 × S4's 0.41 % (source's numbers); 7: S4's ordering decided, 'a little' a reading
@pytest.mark.claim("S4.5", version=8, sample="prompts")
@pytest.mark.models("trained", "hf", "reference")
@pytest.mark.needs("ln_final.hook_in")
def test_final_norm_removes_scale(model_name, subject, activations, claim, settings):
    """S4.5: turned to cosine 0.52 and × 10, the final norm's output norm moves by under 10 × S4's 0.41 % ('a
    little'), and more than turned to 0.9967; the checks are ``final_norm_checks``."""
    seed = settings.seed
    x = _final_block_outputs(activations, seed)
    norm = _final_norm(subject).to(x.device)
    turned = rotate_to_cosine(x.flatten(0, 1), COSINE, torch.Generator().manual_seed(seed)).reshape(x.shape) * SCALE
    close = rotate_to_cosine(x.flatten(0, 1), CLOSE, torch.Generator().manual_seed(seed + 1)).reshape(x.shape) * SCALE
    scaled, rotated, nearly = _changes(norm, x, x * SCALE), _changes(norm, x, turned), _changes(norm, x, close)
    if _identity_parameters(norm):
        claim.not_informative(IDENTITY_REASON.format(scaled=scaled.mean(), rotated=rotated.mean()),
                              details={"identity": {"mean change, ×10": float(scaled.mean()),
                                                    "mean change, turned to cosine 0.52 and ×10": float(rotated.mean()),
                                                    "d_model": x.shape[-1]}})
    unnormalised = _changes(torch.nn.Identity(), x, x * SCALE)
    concentrated = _changes(with_concentrated_gain(norm), x, turned)
    worst, examples = worst_scale_change(norm, x.flatten(0, 1))

    def est(u, statistic=sample_mean):
        return claim.bootstrap(u, statistic)

    estimates = FinalNormEstimates(
        turned=est(rotated), turned_excess=est(np.stack([rotated, nearly], axis=-1), paired_excess),
        worst_scale=Estimate(worst, worst, worst, 1.0, examples), examples=examples,
        unnormalised=per_unit(unnormalised, "min"), concentrated=est(concentrated))
    claim.record(
        final_norm_checks(estimates),
        procedure=procedure("S4.5/final-norm-removes-scale", states=x.shape[0] * x.shape[1], positions=x.shape[1],
                            prompts=x.shape[0]),
        details={
            "turned to cosine 0.52 and × 10: relative output-norm change over vectors": {
                "mean": _row(est(rotated)), "median": _row(est(rotated, _median)),
                "fraction of vectors under 1 % (a reading: the catalogue's 'under 1 %')": _row(est(rotated, _under)),
                "largest": {"value": float(rotated.max())}, "S4 (one vector)": {"value": SOURCE_TURNED_CHANGE},
                "mean, turned to cosine 0.9967 instead": _row(est(nearly)),
            },
            "what makes the output norm depend on direction": _direction_dependence(norm, x, turned, rotated, est),
            "mean_input_norm": float(x.norm(dim=-1).mean()), "largest change, × 10": float(scaled.max()),
            "mean change, × 10 (an identity of the norm)": _row(est(scaled)),
            "mean change, gain concentrated on 1/16 of the coordinates": _row(est(concentrated)),
        },
        beside_source={"relative output-norm change, turned to cosine 0.52 and × 10": float(rotated.mean()),
                       "relative output-norm change, turned to cosine 0.9967 and × 10": float(nearly.mean()),
                       "relative output-norm change, × 10": float(scaled.mean())},
    )
