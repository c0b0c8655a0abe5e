"""S3.9's measurements: block 1 inverted without the first position on a trained model and its twin, and S3's wide
single untrained Llama layers over initialisations. test_between_tokens.py records what these measure;
between_tokens_checks.py decides; the numbers both read are in the topic's home, between_tokens.toml.
"""

from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from claims.s3_inversion.inversions import DESCENT_SETTINGS, layer_output, setting
from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.decoding import pseudo_inverse
from latent_instruments.inversion import invert
from latent_instruments.stats import Estimate, per_unit, proportion, proportion_difference, sample_mean
from models.adapters import adapter_for
from models.forwards import side_by_side
from models.loading import LoadedModel

HALF = numbers(__file__, "HALF")  # a prompt whose unmasked tokens mostly come back: above HALF of them
# S3's rates of untrained layers identifying the masked token, 4096 and 8192 wide (shown beside the wide layers')
SOURCE_NARROW_RATE, SOURCE_WIDE_RATE = numbers(__file__, "SOURCE_NARROW_RATE", "SOURCE_WIDE_RATE")
MASKED = 1  # S3's usual [:, 1:, :]: the first position's output left out
WIDE_PROMPT = "Mario the man versus Mario the idea"  # S3's prompt for the 8192-wide layer
HEADS = 32  # S3's layers': LlamaConfig's default (its config's 'num_heads': 64 is no LlamaConfig field)
SOURCE_WIDTHS, SOURCE_SEEDS = (4096, 8192), 10  # S3's fractions are fifths ("1/5ths ... more than 4/5ths")
CPU_WIDTHS, CPU_SEEDS = (256, 512), 5  # S3's ratio of widths and head size, at widths a CPU inverts in seconds


@dataclass(frozen=True)
class MaskedEstimates:
    """What S3.9's trained checks and gate decide on, on a trained model and its twin, from block 1's output without
    the first position, over the reported prompts (exact intervals).

    Attributes:
        masked: fraction of prompts whose masked first token is recovered.
        twin_works: fraction of the twin's prompts whose unmasked tokens mostly come back.
        longer: ``masked`` after the headline descent continued to 5N (None where not continued).
        source_setting: ``masked`` with the descent in S3's own setting (a reading beside the headline, issue 77;
            None at source scale, where the headline is S3's setting).
        unmasked: the model's unmasked tokens recovered (fraction of tokens; the gate's, None in a constructed case).
    """

    masked: Estimate
    twin_works: Estimate
    longer: Estimate | None = None
    source_setting: Estimate | None = None
    unmasked: Estimate | None = None


@dataclass(frozen=True)
class MaskedShown:
    """What S3.9's trained record shows beside its checks, deciding nothing (issue 79, item 3), and what its
    continuation starts from.

    Attributes:
        setting: the headline setting; run: its ``inversions.Run``.
        twin_masked, twin_unmasked: the twin's masked-token rate and unmasked-token accuracy.
        prompts, reported: the prompts inverted, and those reported.
    """

    setting: str = ""
    run: object = None
    twin_masked: Estimate | None = None
    twin_unmasked: float = float("nan")
    prompts: int = 0
    reported: int = 0


@dataclass(frozen=True)
class WideLayerEstimates:
    """What S3.9's untrained checks decide on, on single untrained Llama layers of two widths, over initialisations.

    Attributes:
        wider_more: fraction finding the masked token, wider minus narrower (Newcombe, independent proportions).
        wider: the wider layers' fraction finding it (exact).
        unmasked: the least unmasked-token accuracy over the wider layers (per unit).
    """

    wider_more: Estimate
    wider: Estimate
    unmasked: Estimate


@dataclass(frozen=True)
class WideLayerShown:
    """What S3.9's untrained record shows beside its checks, deciding nothing (issue 79, item 3).

    Attributes:
        fraction: each width's fraction finding the masked token.
        outcomes: (seeds, widths, [masked found, unmasked accuracy]); chosen: {(width, seed): setting}.
    """

    fraction: list[Estimate] = field(default_factory=list)
    outcomes: np.ndarray | None = None
    chosen: dict = field(default_factory=dict)


def measure_masked(model_name: str, subject, twin, inversions, claim) -> tuple[MaskedEstimates, MaskedShown]:
    """S3.9's trained measurement: S3.2's problem inverted from block 1's output without the first position, on the
    model and its untrained twin under both settings; the fraction of prompts whose masked token comes back in the
    headline setting (exact), the unmasked tokens coming back (the gate's), and the twin's (a control): (the
    checks' estimates at N, what the record shows beside them). Where the claim holds the test continues the
    descent (:func:`continue_masked`, through ``convergence.settled``).

    Args:
        model_name: the model's zoo name; subject, twin: it and its untrained twin (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    """
    scale = inversions.scale
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
    twin_unmasked = float(scale.headline(scale.reported(units[twin.name][:, 1]), twin_best))
    own_setting = None if scale.source else proportion(reported[:, 0, 0])  # S3's own setting beside (issue 77)
    return MaskedEstimates(masked, works, source_setting=own_setting, unmasked=unmasked), MaskedShown(
        setting=DESCENT_SETTINGS[best], run=run, twin_masked=twin_masked, twin_unmasked=twin_unmasked,
        prompts=own.shape[0], reported=reported.shape[0])


def continue_masked(e: MaskedEstimates, shown: MaskedShown, model_name: str, subject, inversions) -> MaskedEstimates:
    """S3.9's convergence control (issue 64: a hold rests on the masked token not coming back at N): ``e`` with the
    fraction of prompts whose masked token comes back after the headline descent (``shown.setting``) continued to
    5N on the reported prompts (exact).

    Args:
        model_name: the model's zoo name; subject: the model (``LoadedModel``); inversions: the S3 family's runner.
    """
    [continued] = inversions.runs_of(model_name, subject, [(0, shown.setting)], masked=MASKED, continued=True)
    return replace(e, longer=proportion(continued.hits[:, :MASKED].mean(1)))


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


def measure_wide_layers(subject, scale: str, inversions, claim) -> tuple[WideLayerEstimates, WideLayerShown]:
    """S3.9's untrained measurement: single untrained Llama layers (the reference's config at one block) at two
    widths over initialisation seeds, S3's prompt inverted from each one's output without the first position; the
    fraction of seeds finding the masked token, wider minus narrower and of the wider, and the wider layers' least
    unmasked-token accuracy (a control): (the checks' estimates, what the record shows beside them).

    Args:
        subject: the Llama reference (``LoadedModel``) whose config the layers take.
        scale: "source-widths" (S3's 4096 and 8192 over 10 seeds) or "cpu-widths" (256 and 512 over 5).
        inversions: the S3 family's inversion runner (its N); claim: the claim's recorder (its ``seed``).
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` on a reference that is not a Llama.
    """
    if subject.model.config.model_type != "llama":
        claim.not_informative(gate("S3.9/wide-untrained-layers-identify-a-masked-token/not-llama"))
    widths, seeds = (SOURCE_WIDTHS, SOURCE_SEEDS) if scale == "source-widths" else (CPU_WIDTHS, CPU_SEEDS)
    ids = torch.tensor([subject.tokenizer.encode(WIDE_PROMPT)], device=subject.input_device)
    vocab = subject.model.get_input_embeddings().weight.shape[0]  # Llama's 32000, as S3's LlamaConfig: vocab ≫ width
    steps = inversions.scale.trained_steps  # S3 gives no N for these layers: its trained blocks' (200 on a CPU)
    outcomes = np.zeros((seeds, len(widths), 2))  # (seeds, widths, [masked found, unmasked accuracy])
    chosen = {}
    for i, width in enumerate(widths):
        for s in range(seeds):
            layer = _single_layer(subject, width, vocab, claim.seed * 1000 + s, subject.input_device)
            found, unmasked, how = _found_masked(layer, ids, steps, claim.seed)
            outcomes[s, i] = found, unmasked
            chosen[width, s] = how
            del layer
    found = outcomes[..., 0].astype(bool)  # (seeds, widths): one 0/1 unit per initialisation
    fraction = [proportion(found[:, i]) for i in range(len(widths))]  # exact binomial over the seeds
    return WideLayerEstimates(proportion_difference(found[:, 1], found[:, 0], paired=False),  # apart
                              fraction[1], per_unit(outcomes[:, 1, 1], "min")), WideLayerShown(fraction, outcomes,
                                                                                              chosen)
