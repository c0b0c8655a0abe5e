"""S3.11's measurements: block 1 inverted intact and with the attention residual removed, on a trained model and its
untrained twin, and the share of the recovery above chance the removal keeps. test_residual.py records what these
measure; residual_checks.py decides.
"""

from dataclasses import replace

import numpy as np

from claims.s3_inversion.inversions import DESCENT_SETTINGS, first_prompt
from claims.s3_inversion.residual_checks import ResidualEstimates, residual_checks, twin_works_check
from claims.s3_inversion.scale import Scale
from claims.s3_inversion.scope import SMALL_TRAINED
from claims.s3_inversion.source_setting import source_chosen
from fixtures.catalogue_text import gate, procedure
from latent_instruments.stats import proportion
from reports.checks import FAILED, PASSED

REMOVED = "attention residual removed"
VARIANTS = ("", REMOVED)


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


def _continued(name: str, model, inversions, units: np.ndarray, chosen) -> np.ndarray:
    """The reported ``units`` (prompts, variants, settings + chance) with each variant's headline column replaced by
    its descent continued to 5N (S3.11's convergence control)."""
    continued = inversions.scale.reported(units).copy()
    for i, v in enumerate(VARIANTS):
        [run] = inversions.runs_of(name, model, [(0, DESCENT_SETTINGS[int(chosen[i])])], v, continued=True)
        continued[:, i, chosen[i]] = run.accuracy  # the reported prompts
    return continued


def measure_residual(model_name: str, subject, twin, inversions, claim) -> ResidualEstimates:
    """S3.11's measurement: for the model and its untrained twin, the share of block 1's recovery above chance kept
    without the attention residual (each variant its headline setting), the trained model's success test without
    it, the twin's recovery above chance (a control), and where a share decided, the share after that model's
    headline descents continued to 5N (the convergence control).

    Args:
        model_name: the model's zoo name; subject, twin: it and its untrained twin (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    Raises:
        ControlFailed: through ``claim.record`` where the twin's intact block 1 does not beat chance on most prompts.
        pytest.skip.Exception: through ``claim.not_informative`` where the trained model's intact block 1 recovers
            no more than chance.
    """
    scale = inversions.scale
    models = {model_name: subject, twin.name: twin}
    units, shown, success = {}, {}, {}
    for name, m in models.items():
        units[name], success[name], examples = _measure(name, m, inversions)
        shown.update(examples)
    chosen = {name: scale.chosen(u[:, :, :-1]) for name, u in units.items()}  # (variants,) each, chosen once
    kept = {name: claim.bootstrap(scale.reported(u), lambda v, c=chosen[name]: _kept(v, scale, c))
            for name, u in units.items()}
    accuracy = {name: [claim.bootstrap(scale.reported(u[:, i, :-1]), lambda v, c=chosen[name][i]: float(scale.headline(v, c))) for i in range(2)]
                for name, u in units.items()}
    intact = {"token accuracy, intact": {n: a[0].value for n, a in accuracy.items()}}
    works = proportion(scale.reported(units[twin.name][:, 0, chosen[twin.name][0]] > units[twin.name][:, 0, -1]))
    twin_works = twin_works_check(works, twin.name)
    if not twin_works.passed:  # S3 says an untrained block 1 inverts: the descent failed, which must show
        claim.record([twin_works], details=intact, procedure=procedure(
            "S3.11/attention-residual-carries-self-token-identity/the-twin-descent-fails",
            prompts=units[twin.name].shape[0]))
    if accuracy[model_name][0].low <= units[model_name][:, 0, -1].mean():
        claim.not_informative(gate("S3.11/attention-residual-carries-self-token-identity/block-1-at-chance",
                                   model=model_name, value=accuracy[model_name][0].value, SMALL_TRAINED=SMALL_TRAINED),
                              details=intact)
    estimates = ResidualEstimates(kept[model_name], kept[twin.name],
                                  scale.reported_fraction(success[model_name], scale.chosen(success[model_name])), works,
                                  accuracy=accuracy, success_by_setting=success, examples=shown,
                                  prompts=units[model_name].shape[0])
    context = (model_name, twin.name, scale.headline_reading, scale.source, scale.steps(model_name),
               scale.steps(twin.name))
    shares = dict(zip(models, residual_checks(estimates, *context)[:2]))
    longer = {"kept_longer" if name == model_name else "twin_longer": claim.bootstrap(
        _continued(name, models[name], inversions, units[name], chosen[name]), lambda v, c=chosen[name]: _kept(v, scale, c))
        for name, check in shares.items()  # a decided share, held or failed (issue 77: untrained holds too): its
        if check.status in (FAILED, PASSED)}  # headline descents continued
    own = () if scale.source else tuple(  # both shares with every descent in S3's own setting (issue 77)
        claim.bootstrap(scale.reported(u), lambda v, c=source_chosen(chosen[name]): _kept(v, scale, c))
        for name, u in units.items())
    return replace(estimates, **longer, source_setting=own, context=context)
