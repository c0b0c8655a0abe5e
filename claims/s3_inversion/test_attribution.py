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
corpus models have no PAD token) and takes the L1 distance of the last position's logits. The claim's
statistic is the mean correlation above that of a random attribution (seeded uniform scores), paired over
prompts; the control asks that occlusion itself does not hinge on its substitute: the occlusion ranks with
the mean embedding and with the most frequent token's embedding agree (ρ > ½).
"""

import numpy as np
import pytest
import torch
from captum.attr import FeatureAblation, InputXGradient
from scipy.stats import spearmanr

from claims.s3_inversion.conftest import frozen
from fixtures.prompts import prompt_batch
from latent_instruments.stats import bootstrap
from reports.records import Check

pytestmark = pytest.mark.gpu

SOURCE_PROMPT = "The wipers on the bus go swish swish"  # S3.8's example
CHANCE = 0.2  # control: a random attribution's mean |ρ| with occlusion stays below a fifth of ρ's range


def _attributions(subject, ids: torch.Tensor, substitute: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(gradient×input, occlusion) per token, each (batch, T), for the predicted next token at the last position.

    Args:
        ids: (batch, T) token ids. substitute: (d_model,) embedding that replaces an occluded token.
    """
    model = subject.model
    embeds = model.get_input_embeddings()(ids).detach().float()  # (batch, T, d_model)
    dtype = model.get_input_embeddings().weight.dtype

    def logits(e: torch.Tensor) -> torch.Tensor:  # (batch, T, d_model) -> (batch, vocab), last position
        return model(inputs_embeds=e.to(dtype), use_cache=False).logits[:, -1, :].float()

    with torch.no_grad():
        reference = logits(embeds)
    target = reference.argmax(-1)  # the predicted next token, (batch,)
    with frozen(model):
        saliency = InputXGradient(lambda e: logits(e).gather(1, target[:, None])[:, 0]).attribute(
            embeds.clone().requires_grad_(True))
        mask = torch.arange(ids.shape[1], device=ids.device)[None, :, None].expand_as(embeds[:1])
        def distance(e: torch.Tensor) -> torch.Tensor:  # captum stacks perturbations along the batch: (k·batch, ...)
            return -(logits(e) - reference.repeat(e.shape[0] // reference.shape[0], 1)).abs().sum(-1)

        occlusion = FeatureAblation(distance).attribute(
            embeds, baselines=substitute.float().expand_as(embeds), feature_mask=mask,
            perturbations_per_eval=ids.shape[1])
    return (saliency.abs().sum(-1).detach().cpu().double().numpy(),
            occlusion[..., 0].detach().cpu().double().numpy())  # each position's value repeats over features


def _rho(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman correlation per row of two (batch, T) arrays."""
    return np.array([spearmanr(x, y).statistic for x, y in zip(a, b)])


@pytest.mark.claim("S3.8", version=1)
@pytest.mark.models("trained", "hf")
def test_gradient_times_input_agrees_with_occlusion(model_name, subject, corpus, inversions, claim, settings):
    """S3.8: per prompt, gradient×input ranks the tokens as occlusion does; a random attribution does not."""
    tokenizer = subject.tokenizer
    tokens = min(len(tokenizer.encode(SOURCE_PROMPT)), subject.context)
    n = inversions.scale.prompts_for(subject.d_model)
    ids = prompt_batch(corpus, tokenizer, n, tokens, settings.seed).to(subject.input_device)
    weight = subject.model.get_input_embeddings().weight.detach()
    frequent = torch.bincount(ids.flatten(), minlength=weight.shape[0]).argmax()
    saliency, occlusion = _attributions(subject, ids, weight.float().mean(0))
    _, occlusion_frequent = _attributions(subject, ids, weight[frequent])
    random = np.random.default_rng(settings.seed).random(saliency.shape)
    units = np.column_stack([_rho(saliency, occlusion), _rho(random, occlusion),
                             _rho(occlusion, occlusion_frequent), _rho(saliency, occlusion_frequent)])
    if np.isnan(units).any():
        raise ValueError(f"a rank correlation is undefined (constant attributions) on {np.isnan(units).any(1).sum()} "
                         "prompts: the model's last-position logits do not depend on its input")
    example = torch.tensor([tokenizer.encode(SOURCE_PROMPT)[:subject.context]], device=subject.input_device)
    ex_saliency, ex_occlusion = _attributions(subject, example, weight.float().mean(0))
    with torch.no_grad():
        predicted = subject.model(example).logits[0, -1].argmax().item()
    pieces = [tokenizer.decode([t]) for t in example[0].tolist()]
    claim.record(
        [
            Check.of("mean Spearman ρ(gradient×input, occlusion) over positions",
                     bootstrap(units[:, 0], lambda u: float(u.mean()), seed=settings.seed), "rank correlation", ">",
                     0.0,
                     "S3 uses gradient×input and occlusion as two measures of the same token importance (it "
                     "combines them linearly for short inputs) and shows them highlighting the earlier 'swish' for "
                     "'sw'; it gives no figure of agreement. The threshold is agreement itself: the mean per-prompt "
                     "rank correlation above 0, by the low end of the 95 % interval over prompts"),
            Check.of("|mean Spearman ρ(random attribution, occlusion)|",
                     bootstrap(units[:, 1], lambda u: abs(float(u.mean())), seed=settings.seed), "rank correlation",
                     "<", CHANCE,
                     "control: a random attribution measured the same way must not agree with occlusion: its mean "
                     f"|ρ| stays below {CHANCE} (a fifth of ρ's range; its standard error here is about "
                     "1/√(prompts × positions), under 0.05), by the high end. Occlusion ranks that chance also "
                     "follows would make the claim's agreement vacuous", role="control"),
        ],
        procedure=(
            f"{n} held-out prompts of {tokens} tokens (S3's {SOURCE_PROMPT!r} in this tokenizer). Target: the "
            "predicted next token's logit at the last position (gradient×input, captum InputXGradient on the token "
            "embeddings, ‖∇ ⊙ a‖₁ per token) and the L1 distance of the last position's logits (occlusion, captum "
            "FeatureAblation, one token's embedding at a time replaced by the mean row of W_E). Spearman ρ over "
            "positions per prompt; a seeded uniform random attribution gives the chance correlation."
        ),
        scaled=f"S3: trained GPT-2, one prompt shown; here {model_name} on {n} prompts",
        details={
            "mean ρ": {"gradient×input vs occlusion": float(units[:, 0].mean()),
                       "random vs occlusion": float(units[:, 1].mean()),
                       "occlusion, mean embedding vs most frequent token": float(units[:, 2].mean()),
                       "gradient×input vs occlusion by the most frequent token": float(units[:, 3].mean())},
            f"S3's example {SOURCE_PROMPT!r}, predicted next: {tokenizer.decode([predicted])!r}": {
                f"{i + 1}: {piece!r}": {"gradient×input": round(float(ex_saliency[0, i] / ex_saliency[0].max()), 3),
                                       "occlusion": round(float(ex_occlusion[0, i] / max(ex_occlusion[0].max(), 1e-12)),
                                                          3)}
                for i, piece in enumerate(pieces)},
        },
    )
