"""S3.11's measurements: block 1 inverted intact and with the attention residual removed, on a trained model and its
untrained twin, and the share of the recovery above chance the removal keeps, with its convergence control
(:func:`continue_residual`, which the test runs through ``convergence.settled``). test_residual.py records what these
measure; residual_checks.py decides; the numbers both read are in the topic's home, residual.toml.
"""

from dataclasses import dataclass, field, replace

import numpy as np

from claims.s3_inversion.inversions import DESCENT_SETTINGS, first_prompt
from claims.s3_inversion.scale import Scale
from claims.s3_inversion.scope import SMALL_TRAINED
from claims.s3_inversion.source_setting import source_chosen
from fixtures.catalogue_text import gate
from latent_instruments.stats import Estimate, proportion

REMOVED = "attention residual removed"
VARIANTS = ("", REMOVED)


@dataclass(frozen=True)
class ResidualEstimates:
    """What S3.11's checks decide on, measured on a trained model and its untrained twin, block 1, over the reported
    prompts.

    Attributes:
        kept: the share of the trained model's recovery above chance kept without the attention residual,
            (removed − chance) / (intact − chance) (fraction).
        twin_kept: the same of its untrained twin.
        success: fraction of the trained model's prompts passing S3's success test without the residual (exact).
        twin_works: fraction of prompts on which the twin's intact block 1 beats chance (exact).
        kept_longer, twin_longer: the shares after the headline descents continued to 5N (None where not
            continued: a share is continued where decided).
        source_setting: (kept, twin_kept) with every descent in S3's own setting (readings beside the headline,
            issue 77); () at source scale, where the headline is S3's setting.
    """

    kept: Estimate
    twin_kept: Estimate
    success: Estimate
    twin_works: Estimate
    kept_longer: Estimate | None = None
    twin_longer: Estimate | None = None
    source_setting: tuple = ()


@dataclass(frozen=True)
class ResidualContext:
    """What S3.11's checks are told beside the estimates (issue 79, item 3: a typed context, not a tuple).

    Attributes:
        model, twin: the two models' names.
        headline_reading: ``Scale``'s words for the headline setting.
        source: whether S3's own setting is the headline (``Scale.source``).
        steps, twin_steps: their N.
    """

    model: str
    twin: str
    headline_reading: str
    source: bool
    steps: int
    twin_steps: int


@dataclass(frozen=True)
class ResidualShown:
    """What S3.11's record shows beside its checks, deciding nothing, and what its convergence control continues from.

    Attributes:
        accuracy: {model: [headline token accuracy intact, removed]}.
        success_by_setting: {model: (prompts, settings) S3's success test without the residual}.
        examples: {report title: decoded examples}; prompts: the prompts inverted.
        units: {model: (prompts, variants, settings + chance) token accuracy, the random start's last}.
        chosen: {model: (variants,) each variant's headline setting, an index into ``DESCENT_SETTINGS``}.
    """

    accuracy: dict[str, list[Estimate]] = field(default_factory=dict)
    success_by_setting: dict[str, np.ndarray] = field(default_factory=dict)
    examples: dict = field(default_factory=dict)
    prompts: int = 0
    units: dict[str, np.ndarray] = field(default_factory=dict)
    chosen: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def intact(self) -> dict:
        """{title: {model: intact headline token accuracy}}: the details of a record made before the shares."""
        return {"token accuracy, intact": {n: a[0].value for n, a in self.accuracy.items()}}


def _kept(u: np.ndarray, scale: Scale, chosen: np.ndarray) -> float:
    """units (prompts, variants, settings + 1): the share of intact accuracy above chance that survives removal,
    each variant its headline setting (chosen (variants,), ``Scale.chosen``); the last column of the settings axis
    holds the random start's accuracy (chance)."""
    chance = u[:, 0, -1].mean()
    intact, removed = scale.headline(u[:, :, :-1], chosen)
    gain = intact - chance
    return float((removed - chance) / gain) if gain > 0 else 0.0


def _measure(name: str, model, inversions) -> tuple[np.ndarray, np.ndarray, dict]:
    """One model's block-1 inversions, intact and without the attention residual, in both settings: (units (prompts,
    variants, settings + chance), S3's success test without the residual (prompts, settings), the report's decoded
    examples in each variant's better setting)."""
    scale = inversions.scale
    runs = {(v, s): run for v in VARIANTS
            for s, run in zip(DESCENT_SETTINGS, inversions.runs_of(name, model, [(0, s) for s in DESCENT_SETTINGS], v))}
    shown = {}
    for v in VARIANTS:
        how = DESCENT_SETTINGS[int(scale.chosen(np.column_stack([runs[v, s].accuracy for s in DESCENT_SETTINGS])))]
        label = f"examples, {name}, {v or 'intact'} ({how} setting; top-5 per position, as S3 shows them)"
        shown[label] = first_prompt(runs[v, how].examples)
    chance = runs["", DESCENT_SETTINGS[0]].start_accuracy
    success = np.column_stack([runs[REMOVED, s].success for s in DESCENT_SETTINGS])
    units = np.stack([np.column_stack([*(runs[v, s].accuracy for s in DESCENT_SETTINGS), chance]) for v in VARIANTS], 1)
    return units, success, shown


def measure_residual(model_name: str, subject, twin, inversions, claim
                     ) -> tuple[ResidualEstimates, ResidualContext, ResidualShown]:
    """S3.11's measurement: for the model and its untrained twin, the share of block 1's recovery above chance kept
    without the attention residual (each variant its headline setting), the trained model's success test without
    it, and the twin's recovery above chance (a control the test records first where it fails): (the checks'
    estimates, their context, what the record shows). The scope gate is :func:`within_scope`'s, the convergence
    control :func:`continue_residual`'s.

    Args:
        model_name: the model's zoo name; subject, twin: it and its untrained twin (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    Raises:
        ValueError: as ``ClaimRecorder.bootstrap``.
    """
    scale = inversions.scale
    models = {model_name: subject, twin.name: twin}
    units, examples, success = {}, {}, {}
    for name, m in models.items():
        units[name], success[name], shown = _measure(name, m, inversions)
        examples.update(shown)
    chosen = {name: scale.chosen(u[:, :, :-1]) for name, u in units.items()}  # (variants,) each, chosen once
    kept = {name: claim.bootstrap(scale.reported(u), lambda v, c=chosen[name]: _kept(v, scale, c))
            for name, u in units.items()}
    accuracy = {name: [claim.bootstrap(scale.reported(u[:, i, :-1]), lambda v, c=chosen[name][i]: float(scale.headline(v, c))) for i in range(2)]
                for name, u in units.items()}
    works = proportion(scale.reported(units[twin.name][:, 0, chosen[twin.name][0]] > units[twin.name][:, 0, -1]))
    own = () if scale.source else tuple(  # both shares with every descent in S3's own setting (issue 77)
        claim.bootstrap(scale.reported(u), lambda v, c=source_chosen(chosen[name]): _kept(v, scale, c))
        for name, u in units.items())
    estimates = ResidualEstimates(kept[model_name], kept[twin.name],
                                  scale.reported_fraction(success[model_name], scale.chosen(success[model_name])), works,
                                  source_setting=own)
    context = ResidualContext(model_name, twin.name, scale.headline_reading, scale.source, scale.steps(model_name),
                              scale.steps(twin.name))
    return estimates, context, ResidualShown(accuracy=accuracy, success_by_setting=success, examples=examples,
                                             prompts=units[model_name].shape[0], units=units, chosen=chosen)


def within_scope(shown: ResidualShown, model_name: str, claim) -> None:
    """S3.11's scope gate, after the twin's control: the trained model's intact block 1 must recover more than
    chance (the random start's accuracy), by its interval's low end, or there is nothing for the removal to destroy.

    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where it does not (S3 puts small trained blocks out
            of scope, ``scope.SMALL_TRAINED``).
    """
    intact = shown.accuracy[model_name][0]
    if intact.low <= shown.units[model_name][:, 0, -1].mean():
        claim.not_informative(gate("S3.11/attention-residual-carries-self-token-identity/block-1-at-chance",
                                   model=model_name, value=intact.value, SMALL_TRAINED=SMALL_TRAINED),
                              details=shown.intact)


def continue_residual(e: ResidualEstimates, shown: ResidualShown, name: str, model, inversions, claim,
                      twin: bool = False) -> ResidualEstimates:
    """S3.11's convergence control of one model's share, where its checks decided it (held or failed, issue 77:
    untrained holds too; the test's ``convergence.settled``): that model's headline descents (intact and removed)
    continued to 5N on the reported prompts, and its share measured again.

    Args:
        e, shown: :func:`measure_residual`'s estimates and what it shows.
        name, model: the model whose share is continued (the trained model or its twin) and its ``LoadedModel``.
        inversions, claim: as :func:`measure_residual`.
        twin: whether ``name`` is the untrained twin.
    Returns:
        ``e`` with ``kept_longer`` (the trained model) or ``twin_longer`` (the twin).
    """
    scale, chosen = inversions.scale, shown.chosen[name]
    continued = scale.reported(shown.units[name]).copy()
    for i, v in enumerate(VARIANTS):
        [run] = inversions.runs_of(name, model, [(0, DESCENT_SETTINGS[int(chosen[i])])], v, continued=True)
        continued[:, i, chosen[i]] = run.accuracy  # the reported prompts
    longer = claim.bootstrap(continued, lambda v: _kept(v, scale, chosen))
    return replace(e, twin_longer=longer) if twin else replace(e, kept_longer=longer)
