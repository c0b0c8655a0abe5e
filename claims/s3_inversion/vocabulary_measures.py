"""S3.6's measurements: one a_g per prompt from block 1, decoded over the whole vocabulary, the prompt's continuation's
tokens and the prompt's own, and one decoding's token accuracy minus another's from exact counts. test_vocabulary.py
records what these measure; vocabulary_checks.py decides; the numbers both read are in the topic's home,
vocabulary.toml.
"""

from dataclasses import dataclass, field, replace

import numpy as np

from claims.s3_inversion.inversions import DESCENT_SETTINGS
from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.stats import Estimate, sample_mean

SATURATED = numbers(__file__, "SATURATED")  # whole-vocabulary accuracy from which a restriction has nothing to improve
DECODINGS = ("whole vocabulary", "prompt + distractors", "prompt only")
PAIRS = ((2, 0), (1, 0), (2, 1))  # the three gains: prompt-only, distractors, narrowing (columns of the counts)


@dataclass(frozen=True)
class VocabularyEstimates:
    """What S3.6's checks decide on: one a_g per prompt from block 1, decoded three ways (fractions of tokens, paired
    differences over the reported prompts).

    Attributes:
        prompt_only: prompt-only minus whole-vocabulary decoding.
        distractors: prompt + distractors minus whole-vocabulary decoding.
        narrowing: prompt-only minus prompt + distractors decoding.
        above_start: prompt-only decoding, found input minus the random start a₀ (a control).
        longer: the three gains after the descent continued to 5N, in the order above (None where not continued,
            or, in a constructed case, not given); the checks continue only a gain decided at N.
        longer_above_start: ``above_start`` after the same continued descent (the control at the headline's budget,
            issue 77; None where not continued).
        source_setting: the three gains with block 1's descent in S3's own setting (readings beside the headline,
            issue 77); () at source scale, where the headline is S3's setting.
    """

    prompt_only: Estimate
    distractors: Estimate
    narrowing: Estimate
    above_start: Estimate
    longer: tuple[Estimate | None, Estimate | None, Estimate | None] = (None, None, None)
    longer_above_start: Estimate | None = None
    source_setting: tuple = ()


@dataclass(frozen=True)
class VocabularyShown:
    """What S3.6's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates), and what its continuation starts from.

    Attributes:
        run: block 1's ``inversions.Run`` in the headline setting; how: that setting; steps: N.
        by_decoding: token accuracy by decoding (whole vocabulary, prompt + distractors, prompt only) and the random
            start's (prompt only).
        prompts: the prompts reported.
    """

    run: object = None
    how: str = ""
    steps: int = 0
    by_decoding: list[Estimate] = field(default_factory=list)
    prompts: int = 0


def _counts(accuracy: np.ndarray, tokens: int) -> np.ndarray:
    """Tokens right per prompt, exact: token accuracies (prompts, decodings) over ``tokens`` positions, as counts."""
    return np.rint(accuracy.astype(np.float64) * tokens).astype(np.int64)


def accuracy_difference(a: int, b: int, tokens: int):
    """Statistic of units (prompts, decodings) holding counts of tokens right per prompt: the accuracy of decoding
    ``a`` minus that of ``b``, from integer counts (exact: equal accuracies give 0, not a float32 rounding)."""
    return lambda u: float(u[:, a].sum() - u[:, b].sum()) / (len(u) * tokens)


def measure_vocabulary(model_name: str, subject, inversions, claim) -> tuple[VocabularyEstimates, VocabularyShown]:
    """S3.6's measurement: block 1's a_g in the headline setting (S3's at source scale, on a CPU the better by S3's
    sentence vocabulary, chosen once on a third of the prompts; the checks read the other two thirds), its three
    gains from narrowing the decoding and the prompt-only decoding above the random start (a control): (the checks'
    estimates at N, what the record shows beside them). Where a gain is decided the test continues the descent
    (:func:`continue_vocabulary`, through ``convergence.settled``).

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
    source = runs[DESCENT_SETTINGS[0]]  # S3's own setting's gains, beside the headline (issue 77)
    own = () if inversions.scale.source else tuple(claim.bootstrap(_counts(inversions.scale.reported(np.column_stack(
        [source.full_accuracy, source.zero_accuracy, source.zero_prompt_accuracy])), tokens),
        accuracy_difference(*pair, tokens)) for pair in PAIRS)
    return VocabularyEstimates(*(claim.bootstrap(counts, accuracy_difference(*pair, tokens)) for pair in PAIRS),
                               above_start=claim.bootstrap(counts, accuracy_difference(2, 3, tokens)),
                               source_setting=own), VocabularyShown(
        run=run, how=how, steps=inversions.scale.steps(model_name), by_decoding=estimates, prompts=units.shape[0])


def continue_vocabulary(e: VocabularyEstimates, shown: VocabularyShown, model_name: str, subject, inversions,
                        claim) -> VocabularyEstimates:
    """S3.6's convergence control: the same a_g after block 1's headline descent (``shown.how``) continued to 5N on
    the reported prompts, decoded the same three ways: ``e`` with its three gains and the control above the random
    start a₀ (a₀'s, not the continuation's start) after the longer descent in place.

    Args:
        e, shown: :func:`measure_vocabulary`'s; model_name, subject: the model (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    """
    [more] = inversions.runs_of(model_name, subject, [(0, shown.how)], continued=True)  # the reported prompts
    start = inversions.scale.reported(shown.run.start_zero_prompt_accuracy)
    tokens = shown.run.hits.shape[1]
    more_counts = _counts(np.column_stack([more.full_accuracy, more.zero_accuracy, more.zero_prompt_accuracy, start]),
                          tokens)
    return replace(e, longer=tuple(claim.bootstrap(more_counts, accuracy_difference(*pair, tokens)) for pair in PAIRS),
                   longer_above_start=claim.bootstrap(more_counts, accuracy_difference(2, 3, tokens)))
