"""S3.2 and S3.3's measurements: block 1 inverted on a random-init model, and on a trained model beside its untrained
twin, with S3.3's convergence control. test_untrained.py records what these measure; untrained_checks.py decides.
"""

from dataclasses import replace

import numpy as np

from claims.s3_inversion.inversions import DESCENT_SETTINGS
from claims.s3_inversion.source_setting import source_chosen
from claims.s3_inversion.untrained_checks import GapEstimates, RecoveryEstimates, gap_checks
from latent_instruments.stats import proportion, proportion_difference
from reports.checks import FAILED, INCONCLUSIVE


def measure_recovery(model_name: str, subject, inversions, claim) -> RecoveryEstimates:
    """S3.2's measurement on a random-init model's block 1, under both settings: the fraction of prompts recovered
    exactly in the headline setting (an exact interval), the random start's token accuracy, and S3's success test on
    the prompts that did not choose the setting.

    Args:
        model_name: the model's zoo name; subject: the loaded model (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    Raises:
        ValueError: as ``ClaimRecorder.bootstrap`` (fewer than 2 prompts, a statistic not finite).
    """
    scale = inversions.scale
    runs = dict(zip(DESCENT_SETTINGS, inversions.runs_of(model_name, subject, [(0, s) for s in DESCENT_SETTINGS])))
    exact_units = np.stack([runs[s].exact for s in DESCENT_SETTINGS], -1)  # (prompts, settings)
    chosen = scale.chosen(exact_units)
    best = DESCENT_SETTINGS[int(chosen)]

    exact = scale.reported_fraction(exact_units, chosen)  # exact binomial: 0/1 per prompt
    start = claim.bootstrap(np.stack([runs[s].start_accuracy for s in DESCENT_SETTINGS], -1), lambda u: float(u.mean(0).max()))
    success = scale.reported_fraction(runs[best].success)  # the prompts that did not choose it
    own = None if scale.source else scale.reported_fraction(exact_units, source_chosen(chosen))  # beside (issue 77)
    return RecoveryEstimates(exact, start, success, own, runs=runs, best=best, prompts=exact_units.shape[0])


def measure_gap(model_name: str, subject, twin, inversions, claim) -> GapEstimates:
    """S3.3's measurement on block 1 of a trained model and its untrained twin, on the same prompts, each its
    headline setting: the twin's exact-recovery rate minus the trained model's (paired score interval) and the same
    of token accuracy, S3's success test on the trained model, and for a decided gap the gaps after the trained
    descent (and for a failed one the twin's too) continued to 5N (the convergence control).

    Args:
        model_name: the model's zoo name; subject, twin: it and its untrained twin (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    Raises:
        ValueError: as ``ClaimRecorder.bootstrap`` (fewer than 2 prompts, a statistic not finite).
    """
    scale = inversions.scale
    names = [model_name, twin.name]
    runs = {(n, s): run for n, m in zip(names, (subject, twin))
            for s, run in zip(DESCENT_SETTINGS, inversions.runs_of(n, m, [(0, s) for s in DESCENT_SETTINGS]))}
    exact = np.stack([np.stack([runs[n, s].exact for s in DESCENT_SETTINGS], -1) for n in names], 1)  # (prompts, 2, 2)
    accuracy = np.stack([np.stack([runs[n, s].accuracy for s in DESCENT_SETTINGS], -1) for n in names], 1)
    chosen = scale.chosen(accuracy)  # each model's headline setting, by token accuracy, for both statistics
    best = [DESCENT_SETTINGS[i] for i in chosen]

    def gap(u: np.ndarray, chosen: np.ndarray = chosen) -> float:
        twin_minus_trained = scale.headline(u, chosen)
        return float(twin_minus_trained[1] - twin_minus_trained[0])

    trained_exact, twin_exact = (scale.reported(exact[:, i, c]) for i, c in enumerate(chosen))  # (reported,) 0/1
    exact_gap = proportion_difference(twin_exact, trained_exact, paired=True)  # the same prompts
    token_gap = claim.bootstrap(scale.reported(accuracy), gap)
    success = scale.reported_fraction(runs[model_name, best[0]].success)
    context = (scale.headline_label, scale.headline_reading, best[0], scale.steps(model_name))
    own = () if scale.source else (  # both gaps with both models in S3's own setting, beside (issue 77)
        proportion_difference(scale.reported(exact[:, 1, 0]), scale.reported(exact[:, 0, 0]), paired=True),
        claim.bootstrap(scale.reported(accuracy), lambda u: gap(u, source_chosen(chosen))))
    estimates = GapEstimates(exact_gap, token_gap, success, source_setting=own, context=context, runs=runs, best=best,
                             prompts=exact.shape[0])
    gaps = gap_checks(estimates, *context)[:2]
    if any(g.status != INCONCLUSIVE for g in gaps):  # the trained descent continued; the twin's only for a failure
        [run] = inversions.runs_of(model_name, subject, [(0, best[0])], continued=True)  # the reported prompts
        continued = scale.reported(accuracy).copy()
        continued[:, 0, chosen[0]] = run.accuracy
        twin_longer = twin_exact
        if any(g.status == FAILED for g in gaps):  # more trained steps only deepen a failure: the twin's may end it
            [twin_run] = inversions.runs_of(twin.name, twin, [(0, best[1])], continued=True)
            continued[:, 1, chosen[1]], twin_longer = twin_run.accuracy, twin_run.exact
        at_longer = [proportion_difference(twin_longer, run.exact, paired=True), claim.bootstrap(continued, gap)]
        estimates = replace(estimates, **{name: more for name, more, g in zip(("exact_longer", "token_longer"),
                                                                               at_longer, gaps)
                                          if g.status != INCONCLUSIVE}, longer_success=proportion(run.success))
    return estimates
