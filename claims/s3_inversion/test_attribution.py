"""S3.8 — gradient×input and occlusion attributions give useful, agreeing token importances.

S3 ("Model Interpretability"): the importance of each earlier token for the predicted next token, by
gradient×input, v = |∇_a O(a, θ)| * a summed per token, and by occlusion, v = ‖O(a_c, θ) − O(a, θ)‖₁ with the
token at position c replaced by "an informationless substitute (perhaps a <|PAD|> token)"; "for small input
sequences, we can form a linear combination of occlusion and gradientxinput", i.e. the two are taken to
agree. Its example: 'The wipers on the bus go swish swish' on trained GPT-2 predicts 'sw', and the earlier
'swish' is highlighted. "It is clear that the gradient of a model's output with respect to its input does
indeed give useful information."

Measured with captum (``InputXGradient``, ``FeatureAblation``): per prompt, the Spearman rank correlation over
positions between the two attributions of the predicted next token at the last position. Gradient×input per
token is ‖∇ ⊙ a‖₁ over the embedding (captum's signed product, its magnitude summed; S3 sums |∇| ⊙ a, whose
sign cancels across features). Occlusion replaces a token's embedding with the mean row of W_E (the
corpus models have no PAD token; it is no token, so never the one it replaces) and takes the L1 distance of the
last position's logits.

Version 2 (issue 20): the agreement decides, at ρ > ½, where version 1 asked only ρ > 0. The control is a broken
instrument: gradient×input of the untrained twin (the same method on weights that learned nothing) against the
model's occlusion must fail that check; version 1's random attribution could not fail whatever the instrument
did. A prompt whose rank correlation is undefined (an attribution constant over its positions) is left out of the
statistic, counted and explained, not an error. The occlusion by a token, shown in the details beside the mean
embedding's, puts the batch's most frequent token in each position's place, or the second most frequent where the
position holds the first, so a substitute never equals the token it replaces.
"""

import numpy as np
import pytest
import torch
from captum.attr import FeatureAblation, InputXGradient

from claims.s3_inversion.attribution_checks import agreement_checks
from fixtures.catalogue_text import procedure
from models.forwards import frozen
from claims.s3_inversion.attribution_measures import agreement_estimates, other_frequent_token, rank_agreement


SOURCE_PROMPT = "The wipers on the bus go swish swish"  # S3.8's example


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


@pytest.mark.claim("S3.8", version=3)  # 3: 24 CPU prompts; 2: agreement ρ > ½ decides; the twin's gradients as control
@pytest.mark.models("trained", "hf", twin=True)
def test_gradient_times_input_agrees_with_occlusion(model_name, subject, pool, inversions, claim, settings):
    """S3.8: per prompt, gradient×input ranks the tokens as occlusion does; the untrained twin's gradients do not."""
    tokenizer, model, twin = subject.tokenizer, subject.model, pool.get(subject.entry.twin)
    tokens = min(len(tokenizer.encode(SOURCE_PROMPT)), subject.context)
    n = inversions.scale.prompts_for(subject.d_model)
    ids = pool.text_windows(model_name, n, tokens)
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
        claim.not_informative(why_undefined + ": fewer than two prompts remain to measure agreement on",
                              details={"prompts left out": undefined, "prompts left out of the control": twin_undefined})
    example = torch.tensor([tokenizer.encode(SOURCE_PROMPT)[:subject.context]], device=subject.input_device)
    example_target = predicted(model, example)
    ex_saliency, ex_occlusion = saliency(model, example, example_target), occlusion(model, example, weight.float().mean(0))
    pieces = [tokenizer.decode([t]) for t in example[0].tolist()]
    random = np.random.default_rng(settings.seed).random(grad_input.shape)
    claim.record(
        agreement_checks(agreement_estimates(rho[defined], twin_rho[twin_defined], settings.seed)),
        procedure=procedure("S3.8/gradient-times-input-agrees-with-occlusion", n=n, tokens=tokens,
                            SOURCE_PROMPT=SOURCE_PROMPT,
                            undefined=why_undefined if undefined or twin_undefined else 'every prompt has a defined rank correlation'),
        scaled=f"S3: trained GPT-2, one prompt shown; here {model_name} on {n} prompts",
        details={
            "mean ρ over the prompts with a defined correlation": {
                "gradient×input vs occlusion": float(rho[defined].mean()),
                "untrained twin's gradient×input vs occlusion": float(twin_rho[twin_defined].mean()),
                "random attribution vs occlusion": float(np.nanmean(rank_agreement(random, occluded)[defined])),
                "occlusion, mean embedding vs another frequent token": float(
                    np.nanmean(rank_agreement(occluded, by_token)[defined])),
                "gradient×input vs occlusion by another frequent token": float(
                    np.nanmean(rank_agreement(grad_input, by_token)[defined]))},
            "prompts left out (undefined rank correlation)": {"claim": undefined, "control": twin_undefined},
            f"S3's example {SOURCE_PROMPT!r}, predicted next: {tokenizer.decode([example_target.item()])!r}": {
                f"{i + 1}: {piece!r}": {"gradient×input": round(float(ex_saliency[0, i] / ex_saliency[0].max()), 3),
                                       "occlusion": round(float(ex_occlusion[0, i] / max(ex_occlusion[0].max(), 1e-12)),
                                                          3)}
                for i, piece in enumerate(pieces)},
        },
    )
