"""S3.2 and S3.3: one block, before and after training.

S3.2 — one untrained block: gradient descent recovers the input exactly (N≈200, restricted vocabulary).
S3.3 — training makes inversion worse: the trained model fails where its untrained twin succeeds.

S3 ("Restricted Vocabulary Input Representation"): with the allowed tokens the words of 'The sky is blue
or red depending on the time of day.', a trained GPT-2 block gives 'day or day blue or' for 'The sky is
blue.' after N = 20000 steps; "in contrast, the same model before training is capable of recovering the
target input after N = 200 steps". The prompts, allowed vocabularies and settings are those of
``claims/s3_inversion/conftest.py``: each prompt is as long as S3's in the model's tokens, its allowed
vocabulary is the distinct tokens of the held-out text that continues it to the length of S3's sentence.
"""

from dataclasses import replace

import numpy as np
import pytest

from claims.s3_inversion.convergence import continues
from claims.s3_inversion.inversions import ADAPTED_DESCRIPTION, DESCENT_SETTINGS, SOURCE_DESCRIPTION, SOURCE_PROMPT
from claims.s3_inversion.untrained_checks import GapEstimates, RecoveryEstimates, gap_checks, recovery_checks
from fixtures.catalogue_text import procedure
from latent_instruments.stats import proportion_difference
from reports.checks import FAILED, INCONCLUSIVE


@pytest.mark.claim("S3.2", version=5, sample="prompts")  # 5: exact binomial intervals; 24 CPU prompts, a third choose
@pytest.mark.models("untrained", "reference")
def test_an_untrained_block_recovers_its_input(model_name, subject, inversions, claim, settings):
    """S3.2: exact recovery of the prompt from block 1's output of a random-init model (the headline setting)."""
    problem, scale = inversions.problem(model_name, subject), inversions.scale
    runs = dict(zip(DESCENT_SETTINGS, inversions.runs_of(model_name, subject, [(0, s) for s in DESCENT_SETTINGS])))
    exact_units = np.stack([runs[s].exact for s in DESCENT_SETTINGS], -1)  # (prompts, settings)
    chosen = scale.chosen(exact_units)
    best = DESCENT_SETTINGS[int(chosen)]

    exact = scale.reported_fraction(exact_units, chosen)  # exact binomial: 0/1 per prompt
    start = claim.bootstrap(np.stack([runs[s].start_accuracy for s in DESCENT_SETTINGS], -1), lambda u: float(u.mean(0).max()))
    success = scale.reported_fraction(runs[best].success)  # the prompts that did not choose it
    claim.record(
        recovery_checks(RecoveryEstimates(exact, start, success), scale.headline_label, scale.headline_reading, best),
        procedure=procedure("S3.2/an-untrained-block-recovers-its-input", prompts=exact_units.shape[0],
                            tokens=problem.tokens, SOURCE_PROMPT=SOURCE_PROMPT,
                            sentence_tokens=problem.sentence_tokens, steps=runs['source'].steps,
                            SOURCE_DESCRIPTION=SOURCE_DESCRIPTION, ADAPTED_DESCRIPTION=ADAPTED_DESCRIPTION,
                            headline_label=scale.headline_label),
        scaled=" ".join(filter(None, [
            "S3 inverts one 5-token prompt through block 1 of an untrained GPT-2 (768 wide, vocabulary 50257); "
            f"here {exact_units.shape[0]} prompts through block 1 of {model_name} ({subject.d_model} wide, "
            f"vocabulary {problem.weight.shape[0]}).", inversions.scale.note()])),
        details={
            "by setting": {s: _summary(runs[s]) for s in DESCENT_SETTINGS},
            f"examples (block 1, {best} setting; top-5 per position, as S3 shows them)": runs[best].examples,
            **({} if best == "source" else
               {"examples (block 1, S3's own setting)": {k: v for k, v in runs["source"].examples.items()
                                                        if k.startswith("prompt 1:")}}),
        },
    )


def _summary(run) -> dict:
    """One run's numbers for a details table."""
    return {"exact": float(run.exact.mean()), "token accuracy": float(run.accuracy.mean()),
            "token accuracy, full vocabulary": float(run.full_accuracy.mean()),
            "success test": float(run.success.mean()),
            "‖O(a_g) − O(a)‖ / ‖O(a′) − O(a)‖, median": float(np.median(run.distance_ratio)),
            "random start": float(run.start_accuracy.mean()),
            "steps": run.steps, "seconds": round(run.seconds, 2), "deviations from S3": run.deviations or "none"}


# 6: a decided gap's convergence control (the trained descent continued to 5N: a hold rests on its failure to recover)
@pytest.mark.claim("S3.3", version=6, sample="prompts")  # 5: paired score and exact intervals; 24 CPU prompts
@pytest.mark.models("trained", "hf", twin=True)
def test_training_makes_inversion_worse(model_name, subject, group_twins, inversions, claim, settings):
    """S3.3: the untrained twin recovers more prompts exactly, and more tokens, than the trained model (block 1)."""
    twin, scale = group_twins[0], inversions.scale
    names = [model_name, twin.name]
    runs = {(n, s): run for n, m in zip(names, (subject, twin))
            for s, run in zip(DESCENT_SETTINGS, inversions.runs_of(n, m, [(0, s) for s in DESCENT_SETTINGS]))}
    exact = np.stack([np.stack([runs[n, s].exact for s in DESCENT_SETTINGS], -1) for n in names], 1)  # (prompts, 2, 2)
    accuracy = np.stack([np.stack([runs[n, s].accuracy for s in DESCENT_SETTINGS], -1) for n in names], 1)
    chosen = scale.chosen(accuracy)  # each model's headline setting, by token accuracy, for both statistics
    best = [DESCENT_SETTINGS[i] for i in chosen]

    def gap(u: np.ndarray) -> float:
        twin_minus_trained = scale.headline(u, chosen)
        return float(twin_minus_trained[1] - twin_minus_trained[0])

    trained_exact, twin_exact = (scale.reported(exact[:, i, c]) for i, c in enumerate(chosen))  # (reported,) 0/1
    exact_gap = proportion_difference(twin_exact, trained_exact, paired=True)  # the same prompts
    token_gap = claim.bootstrap(scale.reported(accuracy), gap)
    success = scale.reported_fraction(runs[model_name, best[0]].success)
    problem = inversions.problem(model_name, subject)
    estimates = GapEstimates(exact_gap, token_gap, success)
    context = (scale.headline_label, scale.headline_reading, best[0], scale.steps(model_name))
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
                                          if g.status != INCONCLUSIVE})
    claim.record(
        gap_checks(estimates, *context),
        procedure=procedure("S3.3/training-makes-inversion-worse", prompts=exact.shape[0],
                            tokens=problem.tokens, steps=runs[model_name, 'source'].steps,
                            twin_steps=runs[twin.name, 'source'].steps, SOURCE_DESCRIPTION=SOURCE_DESCRIPTION,
                            ADAPTED_DESCRIPTION=ADAPTED_DESCRIPTION, headline_label=scale.headline_label,
                            convergence=continues("a gap", "the trained model's headline descent (the twin's stays at S3's N = 200, except where "
                                         "a gap fails: more trained steps can only deepen a failure, the twin's may end it)", holds=True)),
        scaled=" ".join(filter(None, [
            "S3 compares trained and untrained GPT-2 (768 wide) on one prompt, trained N = 20000; here "
            f"{model_name} ({subject.d_model} wide) and its untrained twin on {exact.shape[0]} prompts.",
            inversions.scale.note()])),
        details={
            "by model and setting": {f"{n} ({s})": _summary(runs[n, s]) for n in names for s in DESCENT_SETTINGS},
            **{f"examples, {n} ({b} setting; top-5 per position, as S3 shows them)": runs[n, b].examples
               for n, b in zip(names, best)},
        },
    )
