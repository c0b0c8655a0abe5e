"""S3.8's measurements: gradient×input and occlusion attributions over a prompt's positions, their rank agreement and
S3.8's estimates from it. test_attribution.py records what these measure; attribution_checks.py decides; the number
it decides with is in the topic's home, attribution.toml.
"""

from dataclasses import dataclass, field

import numpy as np
import torch
from captum.attr import FeatureAblation, InputXGradient
from scipy.stats import spearmanr

from fixtures.catalogue_text import gate
from latent_instruments.stats import Estimate, bootstrap, sample_mean
from models.forwards import frozen


@dataclass(frozen=True)
class AgreementEstimates:
    """What S3.8's checks decide on, over the prompts whose rank correlation is defined (rank correlation units).

    Attributes:
        agreement: mean Spearman ρ over positions of gradient×input and occlusion.
        twin: the same with the untrained twin's gradient×input (a broken-instrument control).
    """

    agreement: Estimate
    twin: Estimate


@dataclass(frozen=True)
class AgreementShown:
    """What S3.8's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        rho, twin_rho: per-prompt ρ, (prompts,), NaN where undefined.
        undefined: why prompts were left out (the sentence of the procedure), "" where none was.
        readings: {what: mean ρ over the prompts with a defined correlation}, the claim's and the control's beside
            the readings that locate them (a random attribution, occlusion by another frequent token).
    """

    rho: np.ndarray | None = None
    twin_rho: np.ndarray | None = None
    undefined: str = ""
    readings: dict[str, float] = field(default_factory=dict)


def other_frequent_token(ids: torch.Tensor) -> torch.Tensor:
    """Per position, the batch's most frequent token, or its second most frequent where the position holds the
    first: a substitute that always differs from the token it replaces, (batch, T) of (batch, T) ids.

    Raises:
        ValueError: if the batch holds one distinct token (nothing else can occlude it).
    """
    values, counts = torch.unique(ids, return_counts=True)
    order = values[counts.argsort(descending=True, stable=True)]
    if order.numel() < 2:
        raise ValueError("the prompts hold one distinct token: no other token can occlude it")
    return torch.where(ids == order[0], order[1], order[0])


def rank_agreement(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman ρ over positions per prompt of two (batch, T) attributions; NaN where either is constant."""
    return np.array([np.nan if np.ptp(x) == 0 or np.ptp(y) == 0 else spearmanr(x, y).statistic
                     for x, y in zip(a, b)])


def agreement_estimates(rho: np.ndarray, twin_rho: np.ndarray, seed: int) -> AgreementEstimates:
    """S3.8's estimates from per-prompt ρ of defined prompts, (prompts,) each: the means, bootstrapped."""
    return AgreementEstimates(bootstrap(rho, sample_mean, seed=seed),
                              bootstrap(twin_rho, sample_mean, seed=seed))


def _logits_fn(model):
    """inputs_embeds (batch, T, d_model) -> last position's logits (batch, vocab), float."""
    dtype = model.get_input_embeddings().weight.dtype
    return lambda e: model(inputs_embeds=e.to(dtype), use_cache=False).logits[:, -1, :].float()


def _embeds(model, ids: torch.Tensor) -> torch.Tensor:
    return model.get_input_embeddings()(ids).detach().float()  # (batch, T, d_model)


def predicted(model, ids: torch.Tensor) -> torch.Tensor:
    """The predicted next token at the last position, (batch,), of (batch, T) token ids."""
    with torch.no_grad():
        return _logits_fn(model)(_embeds(model, ids)).argmax(-1)


def saliency(model, ids: torch.Tensor, target: torch.Tensor) -> np.ndarray:
    """Gradient×input per token, ‖∇ ⊙ a‖₁ over the embedding, of ``target``'s last-position logit: (batch, T).

    Args:
        ids: (batch, T) token ids. target: (batch,) token ids whose logit is attributed.
    """
    logits = _logits_fn(model)
    with frozen(model):
        attributed = InputXGradient(lambda e: logits(e).gather(1, target[:, None])[:, 0]).attribute(
            _embeds(model, ids).clone().requires_grad_(True))
    return attributed.abs().sum(-1).detach().cpu().double().numpy()


def occlusion(model, ids: torch.Tensor, substitutes: torch.Tensor) -> np.ndarray:
    """L1 change of the last position's logits when one token's embedding is replaced: (batch, T).

    Args:
        ids: (batch, T) token ids.
        substitutes: the embedding put in each token's place, (d_model,) for every position or (batch, T, d_model).
    """
    logits, embeds = _logits_fn(model), _embeds(model, ids)
    with torch.no_grad():
        reference = logits(embeds)
    mask = torch.arange(ids.shape[1], device=ids.device)[None, :, None].expand_as(embeds[:1])

    def distance(e: torch.Tensor) -> torch.Tensor:  # captum stacks perturbations along the batch: (k·batch, ...)
        return -(logits(e) - reference.repeat(e.shape[0] // reference.shape[0], 1)).abs().sum(-1)

    with frozen(model):
        occluded = FeatureAblation(distance).attribute(
            embeds, baselines=substitutes.float().expand_as(embeds), feature_mask=mask,
            perturbations_per_eval=ids.shape[1])
    return occluded[..., 0].detach().cpu().double().numpy()  # each position's value repeats over features


def _constant(attribution: np.ndarray) -> int:
    """How many prompts of a (batch, T) attribution give every position the same value."""
    return int((np.ptp(attribution, axis=1) == 0).sum())


def measure_agreement(subject, twin, ids: torch.Tensor, claim) -> tuple[AgreementEstimates, AgreementShown]:
    """S3.8's measurement on ``ids`` (prompts, T): per prompt, Spearman's ρ over positions between gradient×input of
    the predicted token's logit and occlusion by the mean embedding, on the model and (the control) with its
    untrained twin's gradients; a prompt whose ρ is undefined (a constant attribution) is left out and counted:
    (the checks' estimates, what the record shows beside them).

    Args:
        subject, twin: the loaded model and its untrained twin (``LoadedModel``).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``seed``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where fewer than two prompts have a defined ρ.
    """
    model, n = subject.model, ids.shape[0]
    weight = model.get_input_embeddings().weight.detach()
    target = predicted(model, ids)
    grad_input = saliency(model, ids, target)
    occluded = occlusion(model, ids, weight.float().mean(0))
    twin_grad_input = saliency(twin.model, ids.to(twin.input_device), target.to(twin.input_device))
    by_token = occlusion(model, ids, weight[other_frequent_token(ids)])
    rho, twin_rho = rank_agreement(grad_input, occluded), rank_agreement(twin_grad_input, occluded)
    defined, twin_defined = ~np.isnan(rho), ~np.isnan(twin_rho)  # each statistic over its own defined prompts
    undefined, twin_undefined = int((~defined).sum()), int((~twin_defined).sum())
    why_undefined = (f"{undefined} of {n} prompts left out of the claim's statistic and {twin_undefined} of the "
                     "control's: a rank correlation is undefined where an attribution is constant over the prompt's "
                     f"positions (occlusion constant on {_constant(occluded)}, gradient×input on "
                     f"{_constant(grad_input)}, the twin's on {_constant(twin_grad_input)})")
    if min(defined.sum(), twin_defined.sum()) < 2:
        claim.not_informative(gate("S3.8/gradient-times-input-agrees-with-occlusion/too-few-defined",
                                   undefined=why_undefined),
                              details={"prompts left out": undefined, "prompts left out of the control": twin_undefined})
    random = np.random.default_rng(claim.seed).random(grad_input.shape)
    readings = {
        "gradient×input vs occlusion": float(rho[defined].mean()),
        "untrained twin's gradient×input vs occlusion": float(twin_rho[twin_defined].mean()),
        "random attribution vs occlusion": float(np.nanmean(rank_agreement(random, occluded)[defined])),
        "occlusion, mean embedding vs another frequent token": float(
            np.nanmean(rank_agreement(occluded, by_token)[defined])),
        "gradient×input vs occlusion by another frequent token": float(
            np.nanmean(rank_agreement(grad_input, by_token)[defined]))}
    return agreement_estimates(rho[defined], twin_rho[twin_defined], claim.seed), AgreementShown(
        rho=rho, twin_rho=twin_rho, undefined=why_undefined if undefined or twin_undefined else "", readings=readings)
