"""S3.6's checks as a pure function of its estimates: ``vocabulary_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s3.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass, field

from claims.s3_inversion.convergence import at_headline_budget, convergence_checks
from claims.s3_inversion.source_setting import source_setting_reading
from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check


@dataclass(frozen=True)
class VocabularyEstimates:
    """What S3.6's test measures on one a_g per prompt from block 1, decoded three ways (fractions of tokens,
    paired differences over the reported prompts).

    Attributes:
        prompt_only: prompt-only minus whole-vocabulary decoding.
        distractors: prompt + distractors minus whole-vocabulary decoding.
        narrowing: prompt-only minus prompt + distractors decoding.
        above_start: prompt-only decoding, found input minus the random start a₀ (a control).
        longer: the three gains after the descent continued to 5N, each None where its gain is undecided (or not
            continued), in the order above.
        longer_above_start: ``above_start`` after the same continued descent (the control at the headline's budget,
            issue 77; None where not continued).
        source_setting: the three gains with block 1's descent in S3's own setting (readings beside the headline,
            issue 77); () at source scale, where the headline is S3's setting.
        run: shown beside the checks, deciding nothing: block 1's ``inversions.Run`` in the headline setting.
        how: shown: that setting; steps: shown: N.
        by_decoding: shown: token accuracy by decoding (whole vocabulary, prompt + distractors, prompt only) and
            the random start's (prompt only).
        prompts: shown: the prompts reported.
    """

    prompt_only: Estimate
    distractors: Estimate
    narrowing: Estimate
    above_start: Estimate
    longer: tuple[Estimate | None, Estimate | None, Estimate | None] = (None, None, None)
    longer_above_start: Estimate | None = None
    source_setting: tuple = ()
    run: object = field(default=None, compare=False)
    how: str = field(default="", compare=False)
    steps: int = field(default=0, compare=False)
    by_decoding: list[Estimate] = field(default_factory=list, compare=False)
    prompts: int = field(default=0, compare=False)


def vocabulary_checks(e: VocabularyEstimates, steps: int) -> list[Check]:
    """S3.6's three claim checks (a strict gain at each narrowing), their convergence controls where a longer value
    is given, and the control that the narrowest vocabulary does not make the recovery by itself; ``steps``: N."""
    gains = [
        Check.of("token accuracy, prompt-only minus whole-vocabulary decoding",
                 e.prompt_only, "fraction of tokens", ">", 0.0,
                 **catalogued("S3.6/token-accuracy-prompt-only-minus-whole-vocabulary-decoding")),
        Check.of("token accuracy, prompt + distractors minus whole-vocabulary decoding",
                 e.distractors, "fraction of tokens", ">", 0.0,
                 **catalogued("S3.6/token-accuracy-prompt-distractors-minus-whole-vocabulary-decoding")),
        Check.of("token accuracy, prompt-only minus prompt + distractors decoding",
                 e.narrowing, "fraction of tokens", ">", 0.0,
                 **catalogued("S3.6/token-accuracy-prompt-only-minus-prompt-distractors-decoding")),
    ]
    longer = [c for g, more in zip(gains, e.longer) if more is not None for c in convergence_checks(g, more, steps)]
    above = Check.of("token accuracy over the prompt's own tokens, found input minus random start a₀",
                     e.above_start, "fraction of tokens", ">", 0.0,
                     role="control",
                     **catalogued("S3.6/token-accuracy-over-the-prompt-s-own-tokens-found-input-minus-random"))
    return [
        *gains, *longer, *(source_setting_reading(g, own) for g, own in zip(gains, e.source_setting)),
        above, *([] if e.longer_above_start is None else [at_headline_budget(above, e.longer_above_start, steps)]),
    ]
