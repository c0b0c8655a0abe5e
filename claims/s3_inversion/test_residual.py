"""S3.11 — removing the residual connection across self-attention destroys self-token identification in a
trained model, not in an untrained one.

S3 ("Information between tokens"): in a trained Llama-7B, "the removal of the residual connection across the
self-attention layer is alone capable of preventing even a single input token from being correctly
identified (given complete outputs) regardless of what modules follow"; in an untrained Llama-7B "removal of
the residual connection across the first transformer block's self-attention layer results in little change
in input representation ability" ('Mario man the the versus man idea' without it, 'Mario man the the Mario
man idea' with it: 6 of 7 tokens alike).

Measured: restricted-vocabulary token accuracy (S3.2's problem) from block 1's whole output, intact and with
the attention residual removed at inference (``latent_instruments.ablation.attention_residual_removed``:
h = attn(norm(x)) in place of x + attn(norm(x))), for the trained model and its untrained twin, each
each its headline setting as S3.2-S3.4 (``Scale.headline``). The statistic is the share of the intact accuracy above chance that survives the
removal. "Destroys" and "little change" are read on either side of one half: the trained model keeps less
than half, the twin more than half, each by its interval's far end.

Control (version 3): the removal could also "destroy" recovery by breaking the descent rather than the
information: an ablated block may be harder to optimise. So without the residual the trained model's found
input must still pass S3's success test, ‖O(a_g) − O(a)‖₁ < ‖O(a′) − O(a)‖₁, on most prompts: the output is
then matched and the tokens are lost for want of information, not of optimisation.

Gate and control (version 7): block 1 must invert above chance intact. On the trained model, where it does not,
the claim is not informative and the record quotes S3's sentences on small trained blocks
(``scope.SMALL_TRAINED``); on the untrained twin it is a control (most prompts above the random start's accuracy,
exact interval), since S3 says an untrained block inverts: a failed descent there is red.

Convergence control (version 8): where a share fails, that model's headline descents (intact and removed) continue to
5N steps on the same prompts and the share is measured again; a failure that does not stay is the step budget's, and
the record is inconclusive (``claims.s3_inversion.convergence``).
"""

from dataclasses import replace

import numpy as np
import pytest

from claims.s3_inversion.convergence import UNTRAINED_PAST_N, continues
from claims.s3_inversion.inversions import DESCENT_SETTINGS, first_prompt
from claims.s3_inversion.scale import Scale
from claims.s3_inversion.residual_checks import ResidualEstimates, residual_checks, twin_works_check
from claims.s3_inversion.scope import SMALL_TRAINED
from fixtures.catalogue_text import procedure
from latent_instruments.stats import proportion
from reports.plots import series
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


# 9: the trained model's held share continued too (a hold rests on its ablated block's failure to recover)
@pytest.mark.claim("S3.11", version=9, sample="prompts")  # 8: convergence control; 7: twin above chance a control
@pytest.mark.models("trained", "hf", twin=True)
def test_attention_residual_carries_self_token_identity(model_name, subject, group_twins, inversions, claim,
                                                        settings):
    """S3.11: without the residual across attention, the trained model keeps less than half of its block-1
    recovery above chance, its untrained twin more than half."""
    twin, scale = group_twins[0], inversions.scale
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
        claim.not_informative(f"{model_name} recovers no more than chance from block 1 even intact "
                              f"({accuracy[model_name][0].value:.3f}); there is nothing for the removal to destroy. "
                              f"{SMALL_TRAINED}", details=intact)
    estimates = ResidualEstimates(kept[model_name], kept[twin.name],
                                  scale.reported_fraction(success[model_name], scale.chosen(success[model_name])), works)
    context = (model_name, twin.name, scale.headline_reading, scale.source, scale.steps(model_name),
               scale.steps(twin.name))
    shares = dict(zip(models, residual_checks(estimates, *context)[:2]))
    longer = {"kept_longer" if name == model_name else "twin_longer": claim.bootstrap(
        _continued(name, models[name], inversions, units[name], chosen[name]), lambda v, c=chosen[name]: _kept(v, scale, c))
        for name, check in shares.items()  # a failed share, or the trained one's hold: its headline descents continued
        if check.status == FAILED or (name == model_name and check.status == PASSED)}
    claim.record(
        residual_checks(replace(estimates, **longer), *context),
        procedure=procedure("S3.11/attention-residual-carries-self-token-identity", prompts=units[model_name].shape[0],
                            headline_label=scale.headline_label,
                            convergence=continues("a share (the trained model's also where it holds)",
                                         "that model's headline descents, intact and removed"),
                            UNTRAINED_PAST_N=UNTRAINED_PAST_N),
        scaled=" ".join(filter(None, [
            f"S3: trained and untrained Llama-7B (4096 wide), one prompt each; here {model_name} "
            f"({subject.d_model} wide) and its untrained twin.", inversions.scale.note()])),
        details={"S3's success test without the residual, fraction of prompts by setting": {
            name: dict(zip(DESCENT_SETTINGS, map(float, u.mean(0)))) for name, u in success.items()},
            f"token accuracy ({scale.headline_label})": {
            f"{name}, {'intact' if not v else v}": accuracy[name][i].value
            for name in models for i, v in enumerate(VARIANTS)}, **shown},
        plot={"kind": "bars", "title": f"S3.11 on {model_name}: block 1, attention residual removed",
              "categories": list(models), "ylabel": "token accuracy (restricted)",
              "series": {"intact": series([accuracy[n][0] for n in models]),
                         REMOVED: series([accuracy[n][1] for n in models])}},
    )
