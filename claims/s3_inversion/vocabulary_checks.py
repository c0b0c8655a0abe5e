"""S3.6's checks as a pure function of its estimates: ``vocabulary_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s3.py``) drive the same function to hold and to fail each check. The decision to continue
block 1's descent is this module's too (:func:`decided_gain`, for ``convergence.settled``).
"""

from claims.s3_inversion.convergence import at_headline_budget, convergence_checks
from claims.s3_inversion.source_setting import source_setting_reading
from claims.s3_inversion.vocabulary_measures import VocabularyEstimates
from fixtures.catalogue_text import catalogued
from reports.checks import INCONCLUSIVE, Check


def vocabulary_checks(e: VocabularyEstimates, steps: int) -> list[Check]:
    """S3.6's three claim checks (a strict gain at each narrowing), the convergence controls of each decided gain
    where a longer value is given, and the control that the narrowest vocabulary does not make the recovery by
    itself; ``steps``: N."""
    gains = [
        Check.of("token accuracy, prompt-only minus whole-vocabulary decoding",
                 e.prompt_only, "fraction of tokens", ">", 0.0,
                 **catalogued("S3.6/prompt-only-gain")),
        Check.of("token accuracy, prompt + distractors minus whole-vocabulary decoding",
                 e.distractors, "fraction of tokens", ">", 0.0,
                 **catalogued("S3.6/distractors-gain")),
        Check.of("token accuracy, prompt-only minus prompt + distractors decoding",
                 e.narrowing, "fraction of tokens", ">", 0.0,
                 **catalogued("S3.6/narrowing-gain")),
    ]
    longer = [c for g, more in zip(gains, e.longer) if more is not None and g.status != INCONCLUSIVE
              for c in convergence_checks(g, more, steps)]  # a convergence control continues a decided gain
    above = Check.of("token accuracy over the prompt's own tokens, found input minus random start a₀",
                     e.above_start, "fraction of tokens", ">", 0.0,
                     role="control",
                     **catalogued("S3.6/above-random-start"))
    return [
        *gains, *longer, *(source_setting_reading(g, own) for g, own in zip(gains, e.source_setting)),
        above, *([] if e.longer_above_start is None else [at_headline_budget(above, e.longer_above_start, steps)]),
    ]


def decided_gain(e: VocabularyEstimates, steps: int) -> Check:
    """The first of S3.6's three gains that is decided at N (passed or failed), else the first: the check whose
    status tells ``convergence.settled`` whether block 1's descent continues (it does where any gain is decided, a
    hold as a failure: each rests on the whole vocabulary's failure to recover the prompt); ``steps``: N."""
    gains = vocabulary_checks(e, steps)[:3]
    return next((g for g in gains if g.status != INCONCLUSIVE), gains[0])
