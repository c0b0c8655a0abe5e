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

from claims.s3_inversion.attribution_checks import agreement_checks
from claims.s3_inversion.attribution_measures import measure_agreement, occlusion, predicted, saliency
from fixtures.catalogue_text import procedure


SOURCE_PROMPT = "The wipers on the bus go swish swish"  # S3.8's example


def _example(subject) -> dict:
    """S3.8's details on S3's own example prompt: per token, gradient×input and occlusion, each over its largest."""
    tokenizer, model = subject.tokenizer, subject.model
    example = torch.tensor([tokenizer.encode(SOURCE_PROMPT)[:subject.context]], device=subject.input_device)
    target = predicted(model, example)
    ex_saliency = saliency(model, example, target)
    ex_occlusion = occlusion(model, example, model.get_input_embeddings().weight.detach().float().mean(0))
    pieces = [tokenizer.decode([t]) for t in example[0].tolist()]
    return {f"S3's example {SOURCE_PROMPT!r}, predicted next: {tokenizer.decode([target.item()])!r}": {
        f"{i + 1}: {piece!r}": {"gradient×input": round(float(ex_saliency[0, i] / ex_saliency[0].max()), 3),
                               "occlusion": round(float(ex_occlusion[0, i] / max(ex_occlusion[0].max(), 1e-12)), 3)}
        for i, piece in enumerate(pieces)}}


@pytest.mark.claim("S3.8", version=3)  # 3: 24 CPU prompts; 2: agreement ρ > ½ decides; the twin's gradients as control
@pytest.mark.models("trained", "hf", twin=True)
def test_gradient_times_input_agrees_with_occlusion(model_name, subject, pool, inversions, claim):
    """S3.8: per prompt, gradient×input ranks the tokens as occlusion does; the untrained twin's gradients do not."""
    tokens = min(len(subject.tokenizer.encode(SOURCE_PROMPT)), subject.context)
    n = inversions.scale.prompts_for(subject.d_model)
    e, shown = measure_agreement(subject, pool.get(subject.entry.twin), pool.text_windows(model_name, n, tokens), claim)
    defined, twin_defined = ~np.isnan(shown.rho), ~np.isnan(shown.twin_rho)
    claim.record(
        agreement_checks(e),
        procedure=procedure("S3.8/gradient-times-input-agrees-with-occlusion", n=n, tokens=tokens,
                            SOURCE_PROMPT=SOURCE_PROMPT,
                            undefined=shown.undefined or 'every prompt has a defined rank correlation'),
        scaled=f"S3: trained GPT-2, one prompt shown; here {model_name} on {n} prompts",
        details={
            "mean ρ over the prompts with a defined correlation": shown.readings,
            "prompts left out (undefined rank correlation)": {"claim": int((~defined).sum()),
                                                              "control": int((~twin_defined).sum())},
            **_example(subject),
        },
    )
