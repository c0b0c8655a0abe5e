"""S3.2 and S3.3's measurements: block 1 inverted on a random-init model, and on a trained model beside its untrained
twin, with S3.3's convergence control (:func:`continue_gap`, which the test runs through ``convergence.settled``).
test_untrained.py records what these measure; untrained_checks.py decides; the numbers both read are in the topic's
home, untrained.toml.
"""

from dataclasses import dataclass, field, replace

import numpy as np

from claims.s3_inversion.inversions import DESCENT_SETTINGS
from claims.s3_inversion.source_setting import source_chosen
from latent_instruments.stats import Estimate, proportion, proportion_difference
from reports.checks import FAILED, INCONCLUSIVE


@dataclass(frozen=True)
class RecoveryEstimates:
    """What S3.2's checks decide on, measured on a random-init model's block 1, over the reported prompts.

    Attributes:
        exact: fraction of prompts recovered exactly (the headline setting; an exact interval).
        start: token accuracy of the random start a₀, the higher of the two settings (fraction of tokens).
        success: fraction of prompts passing S3's success test (an exact interval).
        source_setting: ``exact`` with S3's own setting (a reading beside the headline, issue 77; None at source
            scale, where the headline is S3's setting).
    """

    exact: Estimate
    start: Estimate
    success: Estimate
    source_setting: Estimate | None = None


@dataclass(frozen=True)
class RecoveryContext:
    """What S3.2's checks are told beside the estimates (issue 79, item 3: a typed context, not a tuple).

    Attributes:
        headline_label, headline_reading: ``Scale``'s words for the headline setting (check name, derivation).
        best: the headline setting ("source" or "adapted").
    """

    headline_label: str
    headline_reading: str
    best: str


@dataclass(frozen=True)
class RecoveryShown:
    """What S3.2's record shows beside its checks, deciding nothing.

    Attributes:
        runs: {setting: ``inversions.Run``} of block 1.
        prompts: the prompts inverted.
    """

    runs: dict = field(default_factory=dict)
    prompts: int = 0


def measure_recovery(model_name: str, subject, inversions, claim
                     ) -> tuple[RecoveryEstimates, RecoveryContext, RecoveryShown]:
    """S3.2's measurement on a random-init model's block 1, under both settings: the fraction of prompts recovered
    exactly in the headline setting (an exact interval), the random start's token accuracy, and S3's success test on
    the prompts that did not choose the setting: (the checks' estimates, their context, what the record shows).

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
    return (RecoveryEstimates(exact, start, success, own),
            RecoveryContext(scale.headline_label, scale.headline_reading, best),
            RecoveryShown(runs=runs, prompts=exact_units.shape[0]))


@dataclass(frozen=True)
class GapEstimates:
    """What S3.3's checks decide on, measured on a trained model and its untrained twin, block 1, the same reported
    prompts.

    Attributes:
        exact_gap: exact-recovery rate, twin minus trained (Newcombe's paired score interval).
        token_gap: token accuracy, twin minus trained (bootstrap over prompts).
        success: fraction of the trained model's prompts passing S3's success test (an exact interval).
        exact_longer, token_longer: the gaps after the descents continued to 5N, for a decided gap (None for an
            undecided one, or where not continued).
        longer_success: ``success`` after the trained descent continued to 5N (the control at the headline's
            budget, issue 77; None where not continued).
        source_setting: (exact gap, token gap) with both models in S3's own setting (readings beside the
            headline, issue 77); () at source scale, where the headline is S3's setting.
    """

    exact_gap: Estimate
    token_gap: Estimate
    success: Estimate
    exact_longer: Estimate | None = None
    token_longer: Estimate | None = None
    longer_success: Estimate | None = None
    source_setting: tuple = ()


@dataclass(frozen=True)
class GapContext:
    """What S3.3's checks are told beside the estimates (issue 79, item 3: a typed context, not a tuple).

    Attributes:
        headline_label, headline_reading: ``Scale``'s words for the headline setting.
        best: the trained model's headline setting.
        steps: the trained model's N.
    """

    headline_label: str
    headline_reading: str
    best: str
    steps: int


@dataclass(frozen=True)
class GapShown:
    """What S3.3's record shows beside its checks, deciding nothing, and what its convergence control continues from.

    Attributes:
        runs: {(model, setting): ``inversions.Run``} of block 1.
        best: each model's headline setting, trained first.
        prompts: the prompts inverted.
        chosen: (2,) each model's headline setting, an index into ``DESCENT_SETTINGS`` (``Scale.chosen``).
        accuracy: token accuracy, (prompts, models, settings), trained first.
        twin_exact: the twin's exact recovery on the reported prompts in its headline setting, (reported,) 0/1.
    """

    runs: dict = field(default_factory=dict)
    best: list[str] = field(default_factory=list)
    prompts: int = 0
    chosen: np.ndarray | None = None
    accuracy: np.ndarray | None = None
    twin_exact: np.ndarray | None = None


def _gap(u: np.ndarray, scale, chosen: np.ndarray) -> float:
    """S3.3's token gap: units (prompts, models, settings) → the twin's headline mean minus the trained model's."""
    twin_minus_trained = scale.headline(u, chosen)
    return float(twin_minus_trained[1] - twin_minus_trained[0])


def measure_gap(model_name: str, subject, twin, inversions, claim) -> tuple[GapEstimates, GapContext, GapShown]:
    """S3.3's measurement on block 1 of a trained model and its untrained twin, on the same prompts, each its
    headline setting: the twin's exact-recovery rate minus the trained model's (paired score interval) and the same
    of token accuracy, and S3's success test on the trained model: (the checks' estimates, their context, what the
    record shows). The convergence control is :func:`continue_gap`'s.

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

    trained_exact, twin_exact = (scale.reported(exact[:, i, c]) for i, c in enumerate(chosen))  # (reported,) 0/1
    exact_gap = proportion_difference(twin_exact, trained_exact, paired=True)  # the same prompts
    token_gap = claim.bootstrap(scale.reported(accuracy), lambda u: _gap(u, scale, chosen))
    success = scale.reported_fraction(runs[model_name, best[0]].success)
    own = () if scale.source else (  # both gaps with both models in S3's own setting, beside (issue 77)
        proportion_difference(scale.reported(exact[:, 1, 0]), scale.reported(exact[:, 0, 0]), paired=True),
        claim.bootstrap(scale.reported(accuracy), lambda u: _gap(u, scale, source_chosen(chosen))))
    return (GapEstimates(exact_gap, token_gap, success, source_setting=own),
            GapContext(scale.headline_label, scale.headline_reading, best[0], scale.steps(model_name)),
            GapShown(runs=runs, best=best, prompts=exact.shape[0], chosen=chosen, accuracy=accuracy,
                     twin_exact=twin_exact))


def continue_gap(e: GapEstimates, shown: GapShown, statuses: tuple[str, str], model_name: str, subject, twin,
                 inversions, claim) -> GapEstimates:
    """S3.3's convergence control, where its checks decided a gap (the test's ``convergence.settled``): the trained
    model's headline descent continued to 5N on the reported prompts, and the twin's too where a gap failed (more
    trained steps only deepen a failure; the twin's may end it); the decided gaps measured again, and the trained
    model's success test at 5N.

    Args:
        e, shown: :func:`measure_gap`'s estimates and what it shows.
        statuses: the two gaps' statuses as S3.3's checks decide them (exact gap, token gap: ``reports.checks``
            PASSED, FAILED or INCONCLUSIVE); an undecided gap is not measured again.
        model_name, subject, twin, inversions, claim: as :func:`measure_gap`.
    Returns:
        ``e`` with ``exact_longer``/``token_longer`` for each decided gap and ``longer_success``.
    """
    scale, chosen, best = inversions.scale, shown.chosen, shown.best
    [run] = inversions.runs_of(model_name, subject, [(0, best[0])], continued=True)  # the reported prompts
    continued = scale.reported(shown.accuracy).copy()
    continued[:, 0, chosen[0]] = run.accuracy
    twin_longer = shown.twin_exact
    if FAILED in statuses:  # more trained steps only deepen a failure: the twin's may end it
        [twin_run] = inversions.runs_of(twin.name, twin, [(0, best[1])], continued=True)
        continued[:, 1, chosen[1]], twin_longer = twin_run.accuracy, twin_run.exact
    at_longer = [proportion_difference(twin_longer, run.exact, paired=True),
                 claim.bootstrap(continued, lambda u: _gap(u, scale, chosen))]
    return replace(e, **{name: more for name, more, status in zip(("exact_longer", "token_longer"), at_longer, statuses)
                         if status != INCONCLUSIVE}, longer_success=proportion(run.success))
