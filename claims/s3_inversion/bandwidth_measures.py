"""S3.10's measurements: token accuracy against the number of output features kept, the crossing k* where it reaches
half the full output's, and the jump at it, with the convergence controls (:func:`continue_jump`,
:func:`continue_crossing`, which the test runs through ``convergence.settled``). test_bandwidth.py records what these
measure; bandwidth_checks.py decides; the numbers both read are in the topic's home, bandwidth.toml.
"""

from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import torch

from claims.s3_inversion.convergence import further_steps
from claims.s3_inversion.inversions import DESCENT_SETTINGS, TOP_K, layer_output, setting
from claims.s3_inversion.scope import SMALL_TRAINED
from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.inversion import invert
from latent_instruments.stats import Estimate, paired_difference, proportion, sample_mean
from models.forwards import descents_at_once, frozen, side_by_side


GRID = 4  # first pass: k at quarters of d_model
# bandwidth.toml: S3's Llama-7B width and its attention-only crossing (shown beside the record), and the full output's
# token accuracy from which a model "recovers every token"
SOURCE_WIDTH, SOURCE_ATTENTION_FEATURES, EVERY = numbers(__file__, "SOURCE_WIDTH", "SOURCE_ATTENTION_FEATURES",
                                                         "EVERY")


@dataclass(frozen=True)
class CrossingEstimates:
    """S3.10 where the crossing is the first feature: ``k_star`` an exact count (features); ``full_works`` as in
    :class:`BandwidthEstimates` (None on a trained model)."""

    k_star: Estimate
    full_works: Estimate | None = None


@dataclass(frozen=True)
class BandwidthEstimates:
    """What S3.10's checks decide on, measured on block 1's output cut to its first k features, over the reported
    prompts.

    Attributes:
        jump: token accuracy from the first k* features minus the first k* − 1, paired.
        fraction: the crossing k* as a fraction of d_model, recomputed on resampled prompts (a reading).
        matched: fraction of prompts passing S3's success test on the first k* − 1 features (exact).
        crossing: the crossing k* in features, an exact count (a deterministic Estimate).
        full_works: on an untrained block, the fraction of prompts the full output gives back (exact); else None.
        longer: ``jump`` after the descents at k* and k* − 1 continued to 5N (None where not continued).
        longer_crossing: ``crossing`` after the same continued descents, where the crossing failed at the width
            (:func:`longer_crossing`; None where not continued).
    """

    jump: Estimate
    fraction: Estimate
    matched: Estimate
    crossing: Estimate
    full_works: Estimate | None = None
    longer: Estimate | None = None
    longer_crossing: Estimate | None = None


@dataclass(frozen=True)
class BandwidthContext:
    """What S3.10's checks are told beside the estimates (issue 79, item 3: a typed context, not positional).

    Attributes:
        k_star: the crossing (features); d_model: the width; steps: N.
    """

    k_star: int
    d_model: int
    steps: int


@dataclass(frozen=True)
class FullOutput:
    """S3.10's first measurement, before any feature is removed: the recovery curves and the full output's recovery.

    Attributes:
        curves: {setting: :class:`Curve`}; how: the headline setting.
        full: the full output's token accuracy (headline setting, a bootstrap over the reported prompts).
        works: the fraction of prompts of which the full output gives back at least EVERY of the tokens (exact): on
            an untrained block the control the test records first where it fails; None on a trained model.
        steps: N; d_model: the width.
    """

    curves: dict
    how: str
    full: Estimate
    works: Estimate | None
    steps: int
    d_model: int

    @property
    def curve(self) -> "Curve":
        """The headline setting's curve."""
        return self.curves[self.how]


@dataclass(frozen=True)
class BandwidthShown:
    """What S3.10's record shows beside its checks, deciding nothing, and what its convergence controls continue.

    Attributes:
        full_output: :func:`measure_full_output`'s curves, setting and full-output recovery.
        k_star: the crossing (features).
        per_k: token accuracy at each k evaluated, in increasing k.
    """

    full_output: FullOutput
    k_star: int
    per_k: list[Estimate] = field(default_factory=list)


class Curve:
    """Per-prompt accuracy, S3's success test and top-5 decoding at each k evaluated, inverting once per k (cached).

    Attributes:
        points: k -> (prompts,) token accuracy (whole-vocabulary decoding), every prompt.
        success: k -> (prompts,) 1.0 where S3's success test holds on the first k features, every prompt.
        top_k: k -> (prompts, T, 5) decoded token ids, best first.
        rows: the prompts the curve reports (``__call__``, ``mean``, ``passed``): all of them until the headline
            setting has been chosen, then the half that did not choose it (``Scale.reported``).
    """

    def __init__(self, subject, ids: torch.Tensor, problem, config, seed: int):
        self.subject, self.ids, self.pinv, self.config, self.seed = subject, ids, problem.pinv, config, seed
        self.layer = layer_output(subject, 0, ids.shape[1])
        self.points: dict[int, np.ndarray] = {}
        self.success: dict[int, np.ndarray] = {}
        self.top_k: dict[int, torch.Tensor] = {}
        self.found: dict[int, torch.Tensor] = {}  # k -> found inputs, where a convergence control continues them
        self.rows: slice | np.ndarray = slice(None)
        self._ahead: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # k -> a descent run ahead (:meth:`ahead`)
        self._continued: dict[tuple[int, ...], np.ndarray] = {}  # ks -> :meth:`continued`'s accuracies, run once

    def _descent(self, k: int, start: torch.Tensor | None = None, rows=slice(None)) -> tuple[torch.Tensor, ...]:
        """(prompts, T, TOP_K) decoded token ids over the whole vocabulary, (prompts,) S3's success test and the found
        inputs (prompts, T, d_model), from the first k features (one descent, on one thread); with ``start`` (found
        inputs of the prompts ``rows``), the descent that ended there continued for ``convergence.further_steps``
        more, on those prompts."""
        weight = self.subject.model.get_input_embeddings().weight.detach()
        config = self.config if start is None else replace(self.config, steps=further_steps(self.config.steps))
        with frozen(self.subject.model):
            found = invert(self.layer, self.ids[rows], weight, torch.Generator().manual_seed(self.seed), config,
                           features=slice(0, k), k=TOP_K, pinv=self.pinv, start=start)
        return found.top_k, found.success, found.inputs

    def __call__(self, k: int) -> np.ndarray:
        """(reported prompts,) token accuracy from the first k features of block 1's output, whole-vocabulary
        decoding."""
        if k not in self.points:
            self.top_k[k], success, self.found[k] = self._ahead.pop(k) if k in self._ahead else self._descent(k)
            self.points[k] = (self.top_k[k][..., 0] == self.ids).double().mean(1).cpu().numpy()
            self.success[k] = success.double().cpu().numpy()
        return self.points[k][self.rows]

    def continued(self, *ks: int) -> np.ndarray:
        """(reported prompts, len(ks)) token accuracy from the first k features after the descents of ``ks`` (already
        evaluated) continue side by side to ``convergence.LONGER`` × N steps on the reported prompts (S3.10's
        convergence controls), run once for the same ``ks`` (both controls read the same continued descents)."""
        if ks not in self._continued:
            rows = torch.as_tensor(np.arange(self.ids.shape[0])[self.rows], device=self.ids.device)  # the reported
            more = side_by_side(self.subject.model, [partial(self._descent, k, self.found[k][rows], rows) for k in ks])
            self._continued[ks] = np.column_stack([(top[..., 0] == self.ids[rows]).double().mean(1).cpu().numpy()
                                                   for top, _, _ in more])
        return self._continued[ks]

    def ahead(self, *ks: int) -> None:
        """Run the descents of ``ks`` not yet run side by side (``models.forwards.side_by_side``; on a GPU, where they
        would run one by one, nothing) and keep them aside: a k counts as evaluated (``points``, the record's k's) only
        once it is asked for, so a search that runs its likely next k beside the current one records what the
        one-by-one search does, in the time of one descent where the guess was right."""
        missing = [k for k in dict.fromkeys(ks) if k not in self.points and k not in self._ahead]
        if len(missing) > 1 and descents_at_once(self.subject.model) > 1:
            self._ahead.update(zip(missing, side_by_side(self.subject.model, [partial(self._descent, k) for k in missing])))

    def mean(self, k: int) -> float:
        """Mean token accuracy from the first k features, over the reported prompts."""
        return float(self(k).mean())

    def passed(self, k: int) -> np.ndarray:
        """(reported prompts,) 1.0 where S3's success test holds on the first k features."""
        self(k)
        return self.success[k][self.rows]


def crossing(curve: Curve, d_model: int, level: float) -> int:
    """Fewest features k with mean accuracy ≥ level: a grid of ``GRID`` steps over d_model, then bisection. Each k is
    run beside the k the search asks for next should this one fall short of the level (grid) or reach it (bisection)
    (:meth:`Curve.ahead`), which changes the time, not what is evaluated."""
    grid = sorted({max(1, round(d_model * i / GRID)) for i in range(1, GRID + 1)})
    for i, k in enumerate(grid):
        curve.ahead(k, *grid[i + 1 : i + 2])
        if curve.mean(k) >= level:
            high = k
            break
    else:
        raise ValueError(f"no k up to d_model = {d_model} reaches {level}: the level must be at most the full output's")
    low = max([k for k in grid if k < high], default=0)
    while high - low > 1:
        middle = (low + high) // 2
        curve.ahead(middle, (low + middle) // 2)
        if curve.mean(middle) >= level:
            high = middle
        else:
            low = middle
    return high


def crossing_fraction(units: np.ndarray, ks: list[int], d_model: int) -> float:
    """k*/d_model from accuracies at the evaluated k: the fewest features whose mean accuracy reaches half the full
    output's (S3.10's crossing), as a fraction of the width.

    Args:
        units: (prompts, len(ks)) token accuracy per prompt at each k, columns in the order of ``ks``.
        ks: the feature counts evaluated, ascending, the last one d_model (the full output).
        d_model: the width.
    Raises:
        ValueError: if ``ks`` does not end at d_model.
    """
    if ks[-1] != d_model:
        raise ValueError(f"the evaluated feature counts must end at d_model = {d_model}; got {ks[-1]}")
    means = units.mean(axis=0)
    return next(k for k, m in zip(ks, means) if m >= means[-1] / 2) / d_model


def _curves(subject, ids: torch.Tensor, problem, steps: int, scale, seed: int) -> tuple[dict, str]:
    """S3.10's recovery curves ({setting: Curve}) and the headline setting: S3's at source scale, on a CPU the better
    on the full output, chosen once on the first third of the prompts; the headline curve reads the other two
    thirds from then on, the crossing's search included. ids (prompts, tokens)."""
    d = subject.d_model
    curves = {how: Curve(subject, ids, problem, setting(how, steps, problem.weight), seed) for how in DESCENT_SETTINGS}
    side_by_side(subject.model, [partial(curve, d) for curve in curves.values()])  # both full outputs at once
    how = DESCENT_SETTINGS[int(scale.chosen(np.stack([curves[h](d) for h in DESCENT_SETTINGS], -1)))]
    curves[how].rows = scale.reported(np.arange(ids.shape[0]))
    return curves, how


def full_output_by_setting(curves: dict, d_model: int) -> dict:
    """S3.10's details on the headline choice: {title: {setting: the full output's token accuracy (a fraction of
    tokens)}}, of the curves {setting: ``Curve``} at all ``d_model`` features."""
    return {"token accuracy, full output, by setting": {h: c.mean(d_model) for h, c in curves.items()}}


def longer_crossing(continued: np.ndarray, k_star: int) -> Estimate:
    """S3.10's crossing after the convergence control, where it failed at the width (k* = d_model): ``k_star`` where
    the first k* − 1 features, continued, still recover less than half the continued full output's token accuracy,
    else k* − 1 (the crossing has moved below the width: at most k* − 1).

    Args:
        continued: (prompts, 2) token accuracy from the first k* and k* − 1 features after the descents continued to
            5N (``Curve.continued(k_star, k_star - 1)``).
        k_star: the crossing at N, in features.
    Returns:
        an exact count (a deterministic Estimate, features) over the prompts.
    Raises:
        ValueError: if ``continued`` is not (prompts, 2).
    """
    if continued.ndim != 2 or continued.shape[1] != 2:
        raise ValueError(f"continued must be (prompts, 2) accuracies at k* and k* − 1, got shape {continued.shape}")
    full, below = continued.mean(axis=0)
    k = float(k_star if below < full / 2 else k_star - 1)
    return Estimate(k, k, k, 1.0, continued.shape[0])


def measure_full_output(model_name: str, subject, ids: torch.Tensor, inversions, claim) -> FullOutput:
    """S3.10's first measurement on block 1's output of ``ids`` (prompts, tokens): the recovery curves in both settings
    at the full output, the headline setting, and the full output's recovery (on an untrained block a control).

    Args:
        model_name: the model's zoo name; subject: the loaded model (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``, ``seed``).
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where a trained model's full output does not
            recover every token (below EVERY by the interval's low end: no level to fall from).
    """
    d, problem, steps = subject.d_model, inversions.problem(model_name, subject), inversions.scale.steps(model_name)
    curves, how = _curves(subject, ids, problem, steps, inversions.scale, claim.seed)
    full = claim.bootstrap(curves[how](d), sample_mean)
    untrained = subject.entry.random_init
    if full.low < EVERY and not untrained:  # an untrained block's full output is a control instead, the checks'
        claim.not_informative(
            gate("S3.10/recovery-falls-sharply-with-output-features/not-every-token", d=d, value=full.value,
                 low=full.low, high=full.high, SMALL_TRAINED=SMALL_TRAINED), details=full_output_by_setting(curves, d))
    works = proportion(curves[how](d) >= EVERY) if untrained else None
    return FullOutput(curves, how, full, works, steps, d)


def measure_bandwidth(full_output: FullOutput, claim
                      ) -> tuple[BandwidthEstimates | CrossingEstimates, BandwidthContext, BandwidthShown]:
    """S3.10's measurement from :func:`measure_full_output`'s curves: the crossing k* (the fewest features with half
    the full output's token accuracy), the jump in token accuracy from k* − 1 to k* features, k* / d_model on
    resampled prompts, and S3's success test at k* − 1 (a control): (the checks' estimates, their context, what the
    record shows). Where k* = 1 there is no jump below the first feature: the estimates are the crossing's alone
    (:class:`CrossingEstimates`), which the test records by themselves. The convergence controls are
    :func:`continue_jump`'s and :func:`continue_crossing`'s.

    Raises:
        ValueError: as ``ClaimRecorder.bootstrap``.
    """
    curve, d, works = full_output.curve, full_output.d_model, full_output.works
    k_star = crossing(curve, d, full_output.full.value / 2)
    context, count = BandwidthContext(k_star, d, full_output.steps), Estimate(
        float(k_star), float(k_star), float(k_star), 1.0, len(curve(d)))  # exact: the crossing itself
    if k_star == 1:  # no one-feature jump to measure below the first feature: the crossing check decides alone
        return CrossingEstimates(count, works), context, BandwidthShown(full_output, k_star)
    jump = claim.bootstrap(np.column_stack([curve(k_star), curve(k_star - 1)]), paired_difference)
    matched = proportion(curve.passed(k_star - 1))  # 0/1 per prompt: an exact interval
    ks = sorted(curve.points)
    per_k = [claim.bootstrap(curve(k), sample_mean) for k in ks]
    fraction = claim.bootstrap(np.column_stack([curve(k) for k in ks]), lambda u: crossing_fraction(u, ks, d))
    return (BandwidthEstimates(jump, fraction, matched, count, works), context,
            BandwidthShown(full_output, k_star, per_k))


def continue_jump(e: BandwidthEstimates, shown: BandwidthShown, claim) -> BandwidthEstimates:
    """S3.10's convergence control of a decided jump (held or failed, issue 77; the test's ``convergence.settled``):
    the descents at k* and k* − 1 continued to 5N on the reported prompts (``Curve.continued``), the jump measured
    again. Returns ``e`` with ``longer``."""
    k_star = shown.k_star
    return replace(e, longer=claim.bootstrap(shown.full_output.curve.continued(k_star, k_star - 1), paired_difference))


def continue_crossing(e: BandwidthEstimates, shown: BandwidthShown) -> BandwidthEstimates:
    """S3.10's convergence control of a crossing that failed at the width (k* = d_model; a crossing below it can only
    move lower): the same two continued descents as :func:`continue_jump`'s (run once, ``Curve.continued``'s cache),
    the crossing read again (:func:`longer_crossing`). Returns ``e`` with ``longer_crossing``."""
    k_star = shown.k_star
    return replace(e, longer_crossing=longer_crossing(shown.full_output.curve.continued(k_star, k_star - 1), k_star))
