"""S3.6's measurements: one a_g per prompt from block 1, decoded over the whole vocabulary, the prompt's continuation's
tokens and the prompt's own, and one decoding's token accuracy minus another's from exact counts. test_vocabulary.py
records what these measure; vocabulary_checks.py decides.
"""

from dataclasses import replace

import numpy as np

from claims.s3_inversion.inversions import DESCENT_SETTINGS
from claims.s3_inversion.vocabulary_checks import VocabularyEstimates, vocabulary_checks
from fixtures.catalogue_text import gate
from latent_instruments.stats import sample_mean
from reports.checks import INCONCLUSIVE

SATURATED = 0.99  # full-vocabulary accuracy from which a restriction has nothing left to improve
DECODINGS = ("whole vocabulary", "prompt + distractors", "prompt only")


def _counts(accuracy: np.ndarray, tokens: int) -> np.ndarray:
    """Tokens right per prompt, exact: token accuracies (prompts, decodings) over ``tokens`` positions, as counts."""
    return np.rint(accuracy.astype(np.float64) * tokens).astype(np.int64)


def accuracy_difference(a: int, b: int, tokens: int):
    """Statistic of units (prompts, decodings) holding counts of tokens right per prompt: the accuracy of decoding
    ``a`` minus that of ``b``, from integer counts (exact: equal accuracies give 0, not a float32 rounding)."""
    return lambda u: float(u[:, a].sum() - u[:, b].sum()) / (len(u) * tokens)


def measure_vocabulary(model_name: str, subject, inversions, claim) -> VocabularyEstimates:
    """S3.6's measurement: block 1's a_g in the headline setting (S3's at source scale, on a CPU the better by S3's
    sentence vocabulary, chosen once on a third of the prompts; the checks read the other two thirds), its three
    gains from narrowing the decoding, the prompt-only decoding above the random start (a control), and for a
    decided gain the gains after the descent continued to 5N (the convergence control).

    Args:
        model_name: the model's zoo name; subject: the loaded model (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where the whole-vocabulary decoding is already
            exact (nothing to improve).
    """
    runs = dict(zip(DESCENT_SETTINGS, inversions.runs_of(model_name, subject, [(0, s) for s in DESCENT_SETTINGS])))
    # the headline setting: S3's at source scale, on a CPU the better by S3's sentence vocabulary
    # (chosen once, on a third of the prompts; the checks read the other two thirds)
    how = DESCENT_SETTINGS[int(inversions.scale.chosen(np.column_stack([runs[s].accuracy for s in DESCENT_SETTINGS])))]
    run = runs[how]
    units = inversions.scale.reported(np.column_stack([run.full_accuracy, run.zero_accuracy, run.zero_prompt_accuracy,
                                                       run.start_zero_prompt_accuracy]))
    tokens = run.hits.shape[1]
    counts = _counts(units, tokens)
    estimates = [claim.bootstrap(units[:, i], sample_mean) for i in range(4)]
    if estimates[0].low >= SATURATED:
        claim.not_informative(
            gate("S3.6/restricting-the-vocabulary-improves-recovery/already-exact", value=estimates[0].value),
            details={"token accuracy by decoding": dict(zip(DECODINGS, (e.value for e in estimates)))})
    pairs = ((2, 0), (1, 0), (2, 1))  # the three gains: prompt-only, distractors, narrowing (columns of counts)
    steps = inversions.scale.steps(model_name)
    source = runs[DESCENT_SETTINGS[0]]  # S3's own setting's gains, beside the headline (issue 77)
    own = () if inversions.scale.source else tuple(claim.bootstrap(_counts(inversions.scale.reported(np.column_stack(
        [source.full_accuracy, source.zero_accuracy, source.zero_prompt_accuracy])), tokens),
        accuracy_difference(*pair, tokens)) for pair in pairs)
    vocabulary = VocabularyEstimates(*(claim.bootstrap(counts, accuracy_difference(*pair, tokens)) for pair in pairs),
                                     above_start=claim.bootstrap(counts, accuracy_difference(2, 3, tokens)),
                                     source_setting=own, run=run,
                                     how=how, steps=steps, by_decoding=estimates, prompts=units.shape[0])
    gains = vocabulary_checks(vocabulary, steps)[:3]
    if any(g.status != INCONCLUSIVE for g in gains):  # the same a_g after a 5N descent, decoded the same three ways
        [more] = inversions.runs_of(model_name, subject, [(0, how)], continued=True)  # the reported prompts
        start = inversions.scale.reported(run.start_zero_prompt_accuracy)  # a₀'s, not the continuation's start
        more_counts = _counts(np.column_stack([more.full_accuracy, more.zero_accuracy, more.zero_prompt_accuracy,
                                               start]), tokens)
        vocabulary = replace(vocabulary, longer=tuple(
            claim.bootstrap(more_counts, accuracy_difference(*pair, tokens)) if g.status != INCONCLUSIVE else None
            for g, pair in zip(gains, pairs)),
            longer_above_start=claim.bootstrap(more_counts, accuracy_difference(2, 3, tokens)))
    return vocabulary
