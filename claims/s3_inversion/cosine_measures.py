"""S3.7 and S3.13's measurements: inversions of block 1's output under the cosine loss, direct and indirect, at S3's
rates and with the layer norms removed, and the cosine distance reached over its start. test_cosine.py records what
these measure; cosine_checks.py decides; the numbers both read are in the topic's home, cosine.toml.
"""

from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable

import numpy as np
import torch

from claims.s3_inversion.convergence import further_steps
from claims.s3_inversion.inversions import TOP_K, layer_output, setting
from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.ablation import norms_removed
from latent_instruments.decoding import direct_fit_decode, pseudo_inverse
from latent_instruments.inversion import invert
from latent_instruments.stats import Estimate, paired_difference, per_unit, sample_mean
from models.forwards import frozen, side_by_side

# S3.7's gate: an exact fit decoding no more than SUCCEEDS leaves no inversion able to succeed as S3's long inputs do;
# S3.13's "minimised": below MINIMISED of the start's distance (the budget ladder's stop)
SUCCEEDS, MINIMISED = numbers(__file__, "SUCCEEDS", "MINIMISED")
SHORT_TOKENS = 5  # S3.13's inputs: "as long as the input is not too long (>5 tokens)"
BUDGETS = (1, 5, 25)  # S3.13: N, 5N, 25N steps, the first at which the descent minimises without norms
CODE_RATE = (0.01, 0.001)  # η of S3's published direct-inversion code (GPT2_direct_representation.py: 0.01 → /10)
CONTROL_SETTING = {True: "S3's setting", False: "better of S3's setting and the adapted one"}  # by Scale.source


@dataclass(frozen=True)
class CosineEstimates:
    """What S3.7's checks decide on, over prompts (fractions of tokens recovered from block 1's output).

    Attributes:
        ordering: token accuracy of the long inputs minus the one-token inputs (direct, cosine loss), paired.
        indirect: token accuracy of the control's one-token inputs in embedding space (an exact interval).
        descent: the least token accuracy of the long inputs under the L2 loss (per input).
        longer: ``ordering`` after the descents continued to 5N steps (None where not continued).
    """

    ordering: Estimate
    indirect: Estimate
    descent: Estimate
    longer: Estimate | None = None


@dataclass(frozen=True)
class CosineContext:
    """What S3.7's checks take beside the estimates, not a measurement.

    Attributes:
        long_tokens: tokens of the long inputs; control_setting: the control's setting, in words.
        control_inputs: the control's one-token inputs; steps: N of the first descent.
    """

    long_tokens: int
    control_setting: str
    control_inputs: int
    steps: int


@dataclass(frozen=True)
class CosineShown:
    """What S3.7's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates), and what its continuation starts from.

    Attributes:
        found: {label: (found, start) inversions} of every descent ("long", "one", "l2", "code, long", "code, one",
            "indirect", "indirect, adapted").
        code_units: (prompts, [long, one-token]) token accuracy at the rate of S3's published code.
        code_ordering: ``ordering`` at the rate of S3's published code.
        control: (control inputs, [S3's setting, adapted]) token accuracy of the indirect one-token inputs.
        per: token accuracy of the long, one-token and (the control's setting) indirect inputs.
        exact_fit: token accuracy of an exact fit of the direct representation from S3's start.
        continued: (prompts, [long, one-token]) token accuracy after the convergence control's longer descents (None
            where not continued).
        singles: (control inputs, 1) the control's one-token inputs.
    """

    found: dict = field(default_factory=dict)
    code_units: np.ndarray | None = None
    code_ordering: Estimate | None = None
    control: np.ndarray | None = None
    per: list[Estimate] = field(default_factory=list)
    exact_fit: Estimate | None = None
    continued: np.ndarray | None = None
    singles: object = None


@dataclass(frozen=True)
class LayerNormEstimates:
    """What S3.13's checks decide on, over prompts on a random-init model's block 1 (cosine distances reached by the
    direct inversion, as ratios to their start where so named).

    Attributes:
        with_norms: distance reached with the layer norms over its start (``SHORT_TOKENS``-token inputs).
        gap: distance reached with the norms minus without (1 − cos), paired.
        minimised: distance reached without the norms over its start.
        one: distance reached by one-token inputs with the norms over its start.
    """

    with_norms: Estimate
    gap: Estimate
    minimised: Estimate
    one: Estimate


@dataclass(frozen=True)
class LayerNormShown:
    """What S3.13's record shows beside its checks, deciding nothing (issue 79, item 3).

    Attributes:
        units: (prompts, 6) cosine distances: with norms, without, their starts, one token with norms, its start.
        tried: {N: the distance reached without norms over its start}; steps: the N the comparison ran.
        removed: how many norms were removed; inversions: {"with norms", "without norms"}: the found inputs.
    """

    units: np.ndarray | None = None
    tried: dict[str, float] = field(default_factory=dict)
    steps: int = 0
    removed: int = 0
    inversions: dict = field(default_factory=dict)


def reached_over_start(units: np.ndarray, reached: int, start: int) -> float:
    """Mean cosine distance reached over the mean at the start: columns of (prompts, …) units."""
    return float(units[:, reached].mean() / units[:, start].mean())


def _cosine_inversion(subject, ids: torch.Tensor, representation: str, steps: int, seed: int,
                      adapted: bool = False, loss: str = "cosine", rate: tuple[float, float] | None = None,
                      start: torch.Tensor | None = None):
    """(found, start) inversions of ``ids`` (batch, T) from block 1's output under the cosine loss (or ``loss``):
    S3's setting, or (``adapted``, embedding space only) the normalised step from the embeddings' scale of
    S3.2-S3.4; ``rate`` (η at step 0, η at step N) replaces the setting's; ``start`` continues an earlier found
    input for ``steps`` more (the convergence control)."""
    weight = subject.model.get_input_embeddings().weight.detach()
    layer = layer_output(subject, 0, ids.shape[1])
    config = replace(setting("adapted" if adapted else "source", steps, weight), representation=representation,
                     loss=loss)
    if rate is not None:
        config = replace(config, lr=rate[0], lr_end=rate[1])
    with frozen(subject.model):
        found = invert(layer, ids, weight, torch.Generator().manual_seed(seed), config, k=TOP_K, start=start)
        start = invert(layer, ids, weight, torch.Generator().manual_seed(seed), replace(config, steps=0), k=1)
    return found, start


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.double().cpu().numpy()


def _cannot_identify(exact_fit, vocabulary: int, d_model: int, target: float) -> str:
    """S3.7's not-informative reason: an exact fit of the direct representation decodes too few tokens."""
    return gate("S3.7/cosine-direct-inversion-fails-on-one-token/cannot-identify", value=exact_fit.value,
                low=exact_fit.low, high=exact_fit.high, vocabulary=vocabulary, d_model=d_model,
                ratio=vocabulary / d_model, target=target)


def outside_direct_scope(weight: torch.Tensor) -> str:
    """S3.7's scope gate (version 7): why the claim says nothing where W_E's vocabulary is no larger than its width,
    or "" where it is larger (S3's direct representation maps a larger space onto a smaller one).

    Args:
        weight: W_E, (vocab, d_model), any float dtype.
    Returns:
        the catalogue's reason, filled with the vocabulary, the width and W_E's rank (float64); "" where vocab >
        d_model.
    """
    vocab, d_model = weight.shape
    if vocab > d_model:
        return ""
    rank = int(torch.linalg.matrix_rank(weight.detach().double().T @ weight.detach().double(), hermitian=True))
    return gate("S3.7/cosine-direct-inversion-fails-on-one-token/vocabulary-within-width", vocab=vocab,
                d_model=d_model, rank=rank)


def _other_descents(subject, ids: torch.Tensor, singles: torch.Tensor, steps: int, seed: int) -> dict:
    """S3.7's descents besides the long cosine one, independent of one another, side by side (the numbers of one by
    one): {label: (found, start)}. One-token inputs; the long ones under the L2 loss; both at the rate of S3's
    published direct-inversion code, which starts 100 times lower than its text's η 1 → 1/100; the control's
    one-token inputs ``singles`` (CONTROL_INPUTS, 1) in embedding space, under S3's setting and the adapted one."""
    jobs = {"one": (ids[:, :1], "direct", {}), "l2": (ids, "direct", {"loss": "l2"}),
            "code, long": (ids, "direct", {"rate": CODE_RATE}), "code, one": (ids[:, :1], "direct", {"rate": CODE_RATE}),
            "indirect": (singles, "indirect", {}), "indirect, adapted": (singles, "indirect", {"adapted": True})}
    return dict(zip(jobs, side_by_side(subject.model, [
        partial(_cosine_inversion, subject, x, representation, steps, seed, **options)
        for x, representation, options in jobs.values()])))


def _continued(subject, ids: torch.Tensor, found: tuple, steps: int, seed: int) -> np.ndarray:
    """S3.7's convergence control: the long and one-token direct descents ``found`` continued from where they
    stopped by ``further_steps(steps)``; token accuracy (prompts, 2)."""
    more = side_by_side(subject.model, [
        partial(_cosine_inversion, subject, x, "direct", further_steps(steps), seed, start=r.inputs)
        for x, r in zip((ids, ids[:, :1]), found)])
    return np.column_stack([_numpy(r.token_accuracy) for r, _ in more])


def measure_cosine(model_name: str, subject, ids: torch.Tensor, draw_singles: Callable[[], torch.Tensor], inversions,
                   claim) -> tuple[CosineEstimates, CosineShown, CosineContext]:
    """S3.7's measurement on block 1's output: the long inputs ``ids`` (prompts, T) against their first tokens under
    the cosine loss (direct representation, S3's setting), gated on an exact fit of the direct representation
    decoding the tokens; the control's one-token inputs in embedding space and the long inputs under the L2 loss
    (controls); the same at the rate of S3's published code (shown): (the checks' estimates at N, what the record
    shows beside them, the checks' context). Where the ordering fails the test continues the two descents
    (:func:`continue_cosine`, through ``convergence.settled``).

    Args:
        model_name: the model's zoo name; subject: the loaded model (``LoadedModel``).
        draw_singles: () -> (control inputs, 1) the control's one-token inputs, drawn only where informative.
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``, ``seed``).
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where the vocabulary is no larger than the width
            (outside S3's direct representation: ``outside_direct_scope``), before any descent; and where an exact
            fit of the direct representation decodes at most half the tokens by the interval's low end (not above
            ``SUCCEEDS``: no inversion could succeed as S3's long inputs do).
    """
    scale, seed = inversions.scale, claim.seed
    steps, long_tokens = scale.steps(model_name), ids.shape[1]
    weight = subject.model.get_input_embeddings().weight.detach()
    if reason := outside_direct_scope(weight):  # vocab ≤ d_model: no descent is run
        claim.not_informative(reason, details={"vocab": weight.shape[0], "d_model": subject.d_model})
    long, start = _cosine_inversion(subject, ids, "direct", steps, seed)
    reached = direct_fit_decode(ids, start.inputs, pseudo_inverse(weight), start.config.direct_target)
    exact_fit = claim.bootstrap(_numpy((reached == ids).double().mean(1)), sample_mean)
    if exact_fit.low <= SUCCEEDS:
        claim.not_informative(
            _cannot_identify(exact_fit, weight.shape[0], subject.d_model, start.config.direct_target),
            details={"token accuracy of an exact fit (direct, S3's start)": exact_fit.value,
                     "token accuracy reached, long input, cosine loss": float(long.token_accuracy.mean())})
    singles = draw_singles()
    found = {"long": (long, start), **_other_descents(subject, ids, singles, steps, seed)}
    l2 = found["l2"][0]
    # token accuracies, (prompts, 2): long and one-token at S3's text's rate and at its code's; the control's
    # (CONTROL_INPUTS, 2 settings)
    units, code_units, control = (np.column_stack([_numpy(found[k][0].token_accuracy) for k in pair]) for pair in (
        ("long", "one"), ("code, long", "code, one"), ("indirect", "indirect, adapted")))
    per = [claim.bootstrap(units[:, i], sample_mean) for i in range(2)]
    better = scale.chosen(control)  # the control's setting, chosen once (on a CPU on a third of the inputs)
    per.append(scale.reported_fraction(control, better))  # one token per input: 0/1, an exact interval

    descent = per_unit(_numpy(l2.token_accuracy), "min")  # the optimiser works: asserted of every input
    return CosineEstimates(claim.bootstrap(units, paired_difference), per[2], descent), CosineShown(
        found=found, code_units=code_units, code_ordering=claim.bootstrap(code_units, paired_difference),
        control=control, per=per, exact_fit=exact_fit, singles=singles,
    ), CosineContext(long_tokens, CONTROL_SETTING[scale.source], len(singles), steps)


def continue_cosine(e: CosineEstimates, shown: CosineShown, context: CosineContext, subject, ids: torch.Tensor,
                    claim) -> tuple[CosineEstimates, CosineShown]:
    """S3.7's convergence control: the long and one-token direct descents (``shown.found``) continued from where
    their N = ``context.steps`` ended to 5N, on the same prompts ``ids`` (prompts, T): ``e`` with the ordering after
    the longer descents in place, and ``shown`` with their token accuracy (prompts, [long, one-token]).

    Args:
        subject: the loaded model (``LoadedModel``); claim: the claim's recorder (its ``bootstrap``, ``seed``).
    """
    continued = _continued(subject, ids, (shown.found["long"][0], shown.found["one"][0]), context.steps, claim.seed)
    return replace(e, longer=claim.bootstrap(continued, paired_difference)), replace(shown, continued=continued)


def measure_layer_norm(model_name: str, subject, ids: torch.Tensor, inversions,
                       claim) -> tuple[LayerNormEstimates, LayerNormShown]:
    """S3.13's measurement on a random-init model's block 1, direct representation, inputs ``ids`` (prompts,
    ``SHORT_TOKENS``): the budget is the first of N, 5N, 25N at which the descent without norms minimises (its
    control); at it, the distance reached with the norms over its start, with minus without (paired), and one-token
    inputs with the norms (S3's premise, a control): (the checks' estimates, what the record shows beside them).

    Args:
        model_name: the model's zoo name; subject: the loaded model (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``, ``seed``).
    Raises:
        ValueError: as ``ClaimRecorder.bootstrap``, and where block 1 holds no norm to remove.
    """
    scale, seed = inversions.scale, claim.seed
    block = subject.adapter.block_list(subject.model)[0]
    tried = {}
    for factor in BUDGETS:  # the descent's budget: the first at which it minimises without norms (the control)
        steps = scale.steps(model_name) * factor
        with norms_removed(block) as removed:
            without_norm, start_without = _cosine_inversion(subject, ids, "direct", steps, seed)
        without = np.column_stack([_numpy(without_norm.loss), _numpy(start_without.loss)])
        minimised = claim.bootstrap(without, lambda u: reached_over_start(u, 0, 1))
        tried[str(steps)] = round(minimised.value, 4)
        if minimised.high < MINIMISED:
            break
    (with_norm, start), (one_token, one_start) = side_by_side(subject.model, [
        partial(_cosine_inversion, subject, x, "direct", steps, seed) for x in (ids, ids[:, :1])])
    units = np.column_stack([_numpy(with_norm.loss), without[:, 0], _numpy(start.loss), without[:, 1],
                             _numpy(one_token.loss), _numpy(one_start.loss)])
    one = claim.bootstrap(units, lambda u: reached_over_start(u, 4, 5))
    return LayerNormEstimates(claim.bootstrap(units, lambda u: reached_over_start(u, 0, 2)),
                              claim.bootstrap(units, paired_difference), minimised, one), LayerNormShown(
        units=units, tried=tried, steps=steps, removed=removed,
        inversions={"with norms": with_norm, "without norms": without_norm})
