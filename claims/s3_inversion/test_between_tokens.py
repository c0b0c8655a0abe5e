"""S3.9 — in trained models the outputs of later positions do not identify a masked earlier token; wide
untrained models often do (hidden 8192 > 4096: about 4/5 against 1/5).

S3 ("Information between tokens"): the target is the block's output with the first positions left out
([:, 1:, :], [:, 2:, :], [:, 3:, :]); a causal model's earlier tokens can reach only later positions, so the
question is whether the later positions' outputs identify the masked tokens. Trained Llama 7B/13B/30B/65B,
Llama-2 70B and Mistral 7B never find the masked first token ('absorF man versus Mario The idea'; none of
the top-5), while the other tokens come back. One untrained Llama layer 8192 wide (FFN 4 × 8192, indirect, L2 loss;
its config's ``'num_heads': 64`` is not a LlamaConfig field, so the layer ran with LlamaConfig's default of 32
heads, 256 wide) finds the masked tokens "even if they are not in the correct token index"; "the chance of
accurate masked token representation depends on parameter initialization but increases with model size:
perhaps 1/5ths of models with a hidden dimension of 4096 ... but more than 4/5ths ... of 8192".

Two tests:

* ``test_later_positions_do_not_identify_a_masked_token`` (trained models, untrained twin beside): S3.2's
  problem inverted from block 1's output without the first position; the masked token must come back in
  fewer than a fifth of the prompts: S3's trained models find it in none of its six, where its untrained
  4096-wide layers find it in about 1 of 5 initialisations, the rarest rate S3 reports for any layer. Gate: the
  unmasked tokens must come back in the same inversion (S3's examples recover them), else a missed masked token
  says nothing and the claim is not informative, quoting S3's sentences on small trained models
  (``scope.SMALL_TRAINED``). Control (version 7): the same descent gives back the untrained twin's unmasked tokens on
  most prompts (exact interval), as S3 says an untrained block does; a descent that fails there is red, never a
  not-informative gate.
* ``test_wide_untrained_layers_identify_a_masked_token``: single untrained Llama layers (the Llama reference's
  config at one block) at S3's widths 4096 and 8192 over initialisation seeds (``--source-scale on``, the
  default with CUDA) over 10 seeds each, and at 256 and 512 over 5 on a CPU (the same ratio of widths, the same
  32 heads): the fraction of seeds whose inversion of S3's prompt finds the masked
  first token, at its place or anywhere it does not also stand in the prompt (S3: "correctly found, even if
  not in the correct token index"; its prompt repeats 'Mario', which must not count), wider above narrower
  and above one half. N = 2000 at source scale (S3 gives none for these layers; its trained blocks' N).
"""

from dataclasses import replace
from functools import partial

import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from claims.s3_inversion.between_tokens_checks import (
    HALF, MaskedEstimates, WideLayerEstimates, masked_checks, twin_works_check, wide_layer_checks,
)
from claims.s3_inversion.convergence import LONGER, SCHEDULE, deepens
from claims.s3_inversion.inversions import DESCENT_SETTINGS, first_prompt, layer_output, setting
from claims.s3_inversion.scope import SMALL_TRAINED
from fixtures.catalogue_text import procedure
from latent_instruments.inversion import invert
from latent_instruments.decoding import pseudo_inverse
from latent_instruments.stats import per_unit, proportion, proportion_difference, sample_mean
from models.adapters import adapter_for
from models.forwards import side_by_side
from models.loading import LoadedModel
from reports.plots import series
from reports.checks import PASSED


MASKED = 1  # S3's usual [:, 1:, :]: the first position's output left out
WIDE_PROMPT = "Mario the man versus Mario the idea"  # S3's prompt for the 8192-wide layer
HEADS = 32  # S3's layers': LlamaConfig's default (its config's 'num_heads': 64 is no LlamaConfig field)
SOURCE_WIDTHS, SOURCE_SEEDS = (4096, 8192), 10  # S3's fractions are fifths ("1/5ths ... more than 4/5ths")
CPU_WIDTHS, CPU_SEEDS = (256, 512), 5  # S3's ratio of widths and head size, at widths a CPU inverts in seconds


@pytest.mark.claim("S3.9", version=8, sample="prompts")  # 8: a hold continued to 5N; 7: twin control; 6: exact rates
@pytest.mark.models("trained", "hf", twin=True)
def test_later_positions_do_not_identify_a_masked_token(model_name, subject, group_twins, inversions, claim,
                                                        settings):
    """S3.9 (trained): from block 1's output without the first position, the first token comes back in fewer
    than a fifth of the prompts; the other tokens come back."""
    twin, scale = group_twins[0], inversions.scale
    problem = inversions.problem(model_name, subject)
    units = {}
    for name, m in ((model_name, subject), (twin.name, twin)):
        runs = inversions.runs_of(name, m, [(0, s) for s in DESCENT_SETTINGS], masked=MASKED)
        units[name] = np.stack([np.column_stack([r.hits[:, :MASKED].mean(1), r.hits[:, MASKED:].mean(1)])
                                for r in runs], -1)  # (prompts, [masked, unmasked], settings)
    own = units[model_name]
    best = int(scale.chosen(own[:, 1]))  # the headline setting, by the unmasked tokens on a CPU (chosen once)
    reported = scale.reported(own)
    masked = proportion(reported[:, 0, best])  # MASKED = 1 position: 0/1 per prompt, an exact interval
    unmasked = claim.bootstrap(reported[:, 1, best], sample_mean)
    twin_best = scale.chosen(units[twin.name][:, 1])
    twin_masked = scale.reported_fraction(units[twin.name][:, 0], twin_best)
    run = inversions.run(model_name, subject, 0, DESCENT_SETTINGS[best], masked=MASKED)
    works = proportion(scale.reported(units[twin.name][:, 1, int(twin_best)]) > HALF)
    twin_works = twin_works_check(works, twin.name)
    if unmasked.low <= HALF and twin_works.passed:
        claim.not_informative(
            f"the inversion recovers {unmasked.value:.3f} [{unmasked.low:.3f}, {unmasked.high:.3f}] of the unmasked "
            f"tokens, not most (> {HALF}), where it recovers those of the untrained twin ({twin_works.value:.3f} of "
            f"its prompts, the control): a missed masked token would say nothing about the information between "
            f"positions. {SMALL_TRAINED}", details={"masked first token recovered": masked.value})
    estimates = MaskedEstimates(masked, works)
    if masked_checks(estimates, twin.name, scale.steps(model_name))[0].status == PASSED:  # a hold rests on the
        # masked token not coming back at N: continued (issue 64)
        [continued] = inversions.runs_of(model_name, subject, [(0, DESCENT_SETTINGS[best])], masked=MASKED,
                                         continued=True)
        estimates = replace(estimates, longer=proportion(continued.hits[:, :MASKED].mean(1)))
    claim.record(
        masked_checks(estimates, twin.name, scale.steps(model_name)),
        procedure=procedure("S3.9/later-positions-do-not-identify-a-masked-token", own_prompts=own.shape[0],
                            reported_prompts=reported.shape[0], tokens=problem.tokens,
                            setting=DESCENT_SETTINGS[best], headline_label=scale.headline_label,
                            steps=run.steps,
                            convergence=deepens("it fails where the masked token comes back on too many prompts; a longer descent fits the "
                                         "later positions' outputs closer and can only find it more often"),
                            LONGER=LONGER, SCHEDULE=SCHEDULE),
        scaled=" ".join(filter(None, [f"S3: trained Llama 7B-65B (4096-8192 wide), a few prompts; here {model_name} "
                                      f"({subject.d_model} wide).", inversions.scale.note()])),
        details={"masked first token recovered": {model_name: masked.value, f"{twin.name} ({scale.headline_label})":
                                                 twin_masked.value},
                 "unmasked tokens recovered": {model_name: unmasked.value,
                                               twin.name: float(scale.headline(scale.reported(units[twin.name][:, 1]),
                                                                               twin_best))},
                 f"examples ({DESCENT_SETTINGS[best]} setting; top-5 per position)":
                     first_prompt(run.examples)},
    )


def _single_layer(reference: LoadedModel, width: int, vocab: int, seed: int, device: torch.device) -> LoadedModel:
    """One untrained Llama layer of ``width`` (32 heads, FFN 4 × width, S3's config), on ``device``."""
    config = LlamaConfig(**{**reference.model.config.to_dict(), "hidden_size": width, "intermediate_size": 4 * width,
                            "num_hidden_layers": 1, "num_attention_heads": HEADS,
                            "num_key_value_heads": HEADS, "head_dim": width // HEADS, "vocab_size": vocab})
    torch.manual_seed(seed)
    with torch.device(device):
        model = LlamaForCausalLM(config).eval()
    return replace(reference, model=model, adapter=adapter_for(model))


def _found_masked(layer: LoadedModel, ids: torch.Tensor, steps: int, seed: int) -> tuple[bool, float, str]:
    """Invert ``ids`` (1, T) from the layer's output at [:, 1:, :] (L2, indirect) under both settings, side by side;
    the one recovering more unmasked tokens decides. Returns (masked tokens found (``_found``), unmasked accuracy,
    setting)."""
    weight = layer.model.get_input_embeddings().weight.detach()
    pinv = pseudo_inverse(weight)

    def descent(how: str):
        return invert(layer_output(layer, 0, ids.shape[1]), ids, weight, torch.Generator().manual_seed(seed),
                      replace(setting(how, steps, weight), loss="l2"), positions=slice(MASKED, None), k=1, pinv=pinv)

    best = (False, -1.0, "")
    found_by = side_by_side(layer.model, [partial(descent, how) for how in DESCENT_SETTINGS])
    for how, found in zip(DESCENT_SETTINGS, found_by):
        decoded = found.decoded[0]
        unmasked = float((decoded[MASKED:] == ids[0, MASKED:]).double().mean())
        if unmasked > best[1]:
            best = (all(_found(t, ids[0], decoded) for t in range(MASKED)), unmasked, how)
    return best


def _found(position: int, ids: torch.Tensor, decoded: torch.Tensor) -> bool:
    """Whether the token at ``position`` is decoded at its place, or at a place where the prompt has another token
    (a repeat of it elsewhere in the prompt, recovered there as a self token, does not count). ids, decoded: (T,)."""
    token = ids[position]
    return bool(decoded[position] == token) or bool(((decoded == token) & (ids != token)).any())


@pytest.mark.claim("S3.9", version=3)  # 3: exact and score intervals over seeds; 2: S3's 32 heads of width/32
@pytest.mark.models("reference")
@pytest.mark.parametrize("scale", [pytest.param("source-widths", marks=pytest.mark.source_scale), "cpu-widths"])
def test_wide_untrained_layers_identify_a_masked_token(model_name, subject, scale, inversions, claim, settings):
    """S3.9 (untrained): more of the wider single layers' initialisations find the masked first token, and more
    than half of them."""
    if subject.model.config.model_type != "llama":
        claim.not_informative("S3.9's wide single layers are Llama layers, as S3's (LlamaConfig, one layer); they "
                              "are built from the Llama reference's config, on ref-llama-small")
    widths, seeds = (SOURCE_WIDTHS, SOURCE_SEEDS) if scale == "source-widths" else (CPU_WIDTHS, CPU_SEEDS)
    ids = torch.tensor([subject.tokenizer.encode(WIDE_PROMPT)], device=subject.input_device)
    vocab = subject.model.get_input_embeddings().weight.shape[0]  # Llama's 32000, as S3's LlamaConfig: vocab ≫ width
    steps = inversions.scale.trained_steps  # S3 gives no N for these layers: its trained blocks' (200 on a CPU)
    outcomes = np.zeros((seeds, len(widths), 2))  # (seeds, widths, [masked found, unmasked accuracy])
    chosen = {}
    for i, width in enumerate(widths):
        for s in range(seeds):
            layer = _single_layer(subject, width, vocab, settings.seed * 1000 + s, subject.input_device)
            found, unmasked, how = _found_masked(layer, ids, steps, settings.seed)
            outcomes[s, i] = found, unmasked
            chosen[width, s] = how
            del layer
    found = outcomes[..., 0].astype(bool)  # (seeds, widths): one 0/1 unit per initialisation
    fraction = [proportion(found[:, i]) for i in range(len(widths))]  # exact binomial over the seeds
    claim.record(
        wide_layer_checks(WideLayerEstimates(proportion_difference(found[:, 1], found[:, 0], paired=False),  # apart
                                             fraction[1], per_unit(outcomes[:, 1, 1], "min")), widths, seeds),
        procedure=procedure("S3.9/wide-untrained-layers-identify-a-masked-token",
                            widths=', '.join(map(str, widths)), HEADS=HEADS, vocab=vocab, seeds=seeds,
                            WIDE_PROMPT=WIDE_PROMPT, tokens=ids.shape[1], steps=steps),
        scaled="" if scale == "source-widths" else (
            f"CPU widths {CPU_WIDTHS[0]} and {CPU_WIDTHS[1]}, {CPU_SEEDS} seeds each: S3's ratio of widths and its "
            f"{HEADS} heads, 16x narrower; S3's widths 4096 and 8192 over {SOURCE_SEEDS} seeds run with --source-scale on "
            "(the default with CUDA)"),
        details={"masked token found, by width": {str(w): f.value for w, f in zip(widths, fraction)},
                 "outcome by width and seed (found, unmasked accuracy, setting)": {
                     f"{w}, seed {s}": f"{bool(outcomes[s, i, 0])}, {outcomes[s, i, 1]:.2f}, {chosen[w, s]}"
                     for i, w in enumerate(widths) for s in range(seeds)}},
        plot={"kind": "bars", "title": f"S3.9: masked first token found by untrained single layers ({scale})",
              "categories": [str(w) for w in widths], "ylabel": "fraction of initialisations",
              "series": {"found": series(fraction)}, "source": {"S3": [0.2, 0.8]}},
    )

