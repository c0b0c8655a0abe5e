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

import numpy as np
import pytest

from claims.s3_inversion.convergence import continues, settled
from claims.s3_inversion.inversions import ADAPTED_DESCRIPTION, DESCENT_SETTINGS, SOURCE_DESCRIPTION, SOURCE_PROMPT
from claims.s3_inversion.untrained_checks import continuing_gap, gap_checks, recovery_checks
from claims.s3_inversion.untrained_measures import continue_gap, measure_gap, measure_recovery
from fixtures.catalogue_text import procedure
from reports.checks import FAILED, PASSED


@pytest.mark.claim("S3.2", version=6, sample="prompts")  # 6: S3's own setting beside; 5: exact binomial intervals; 24 CPU prompts, a third choose
@pytest.mark.models("untrained", "reference")
def test_an_untrained_block_recovers_its_input(model_name, subject, inversions, claim):
    """S3.2: exact recovery of the prompt from block 1's output of a random-init model (the headline setting)."""
    problem, scale = inversions.problem(model_name, subject), inversions.scale
    e, context, shown = measure_recovery(model_name, subject, inversions, claim)
    runs, best = shown.runs, context.best
    claim.record(
        recovery_checks(e, context),
        procedure=procedure("S3.2/an-untrained-block-recovers-its-input", prompts=shown.prompts,
                            tokens=problem.tokens, SOURCE_PROMPT=SOURCE_PROMPT,
                            sentence_tokens=problem.sentence_tokens, steps=runs['source'].steps,
                            SOURCE_DESCRIPTION=SOURCE_DESCRIPTION, ADAPTED_DESCRIPTION=ADAPTED_DESCRIPTION,
                            headline_label=scale.headline_label),
        scaled=" ".join(filter(None, [
            "S3 inverts one 5-token prompt through block 1 of an untrained GPT-2 (768 wide, vocabulary 50257); "
            f"here {shown.prompts} prompts through block 1 of {model_name} ({subject.d_model} wide, "
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
@pytest.mark.claim("S3.3", version=7, sample="prompts")  # 7: plateau rule; 5: paired score and exact intervals; 24 CPU prompts
@pytest.mark.models("trained", "hf", twin=True)
def test_training_makes_inversion_worse(model_name, subject, group_twins, inversions, claim):
    """S3.3: the untrained twin recovers more prompts exactly, and more tokens, than the trained model (block 1)."""
    twin, scale = group_twins[0], inversions.scale
    e, context, shown = measure_gap(model_name, subject, twin, inversions, claim)
    e = settled(e, lambda e: continuing_gap(e, context), lambda e: continue_gap(  # a decided gap: the descents continued
        e, shown, tuple(g.status for g in gap_checks(e, context)[:2]), model_name, subject, twin, inversions, claim),
        when=(FAILED, PASSED))
    names, runs, problem = [model_name, twin.name], shown.runs, inversions.problem(model_name, subject)
    claim.record(
        gap_checks(e, context),
        procedure=procedure("S3.3/training-makes-inversion-worse", prompts=shown.prompts,
                            tokens=problem.tokens, steps=runs[model_name, 'source'].steps,
                            twin_steps=runs[twin.name, 'source'].steps, SOURCE_DESCRIPTION=SOURCE_DESCRIPTION,
                            ADAPTED_DESCRIPTION=ADAPTED_DESCRIPTION, headline_label=scale.headline_label,
                            convergence=continues("a gap", "the trained model's headline descent (the twin's stays at S3's N = 200, except where "
                                         "a gap fails: more trained steps can only deepen a failure, the twin's may end it)", holds=True)),
        scaled=" ".join(filter(None, [
            "S3 compares trained and untrained GPT-2 (768 wide) on one prompt, trained N = 20000; here "
            f"{model_name} ({subject.d_model} wide) and its untrained twin on {shown.prompts} prompts.",
            inversions.scale.note()])),
        details={
            "by model and setting": {f"{n} ({s})": _summary(runs[n, s]) for n in names for s in DESCENT_SETTINGS},
            **{f"examples, {n} ({b} setting; top-5 per position, as S3 shows them)": runs[n, b].examples
               for n, b in zip(names, shown.best)},
        },
    )
