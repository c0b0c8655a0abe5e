"""S3.2 and S3.3's checks as pure functions of their estimates: ``untrained_measures.py`` measures, these decide, and
the self-tests (``tests/cases_s3.py``) drive the same functions to hold and to fail each check. Every number they
decide with is in the topic's home, ``untrained.toml``, with its derivation.

S3.2: S3's one prompt is recovered exactly at N = 200; one success fixes no rate, so "recovers" is read as "exact
recovery is the typical outcome": most prompts, by the interval's low end (``EXACT_MAJORITY``).
"""

from claims.s3_inversion.convergence import at_headline_budget, convergence_checks
from claims.s3_inversion.source_setting import source_setting_reading
from claims.s3_inversion.untrained_measures import GapContext, GapEstimates, RecoveryContext, RecoveryEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import FAILED, PASSED, Check

# untrained.toml: exact recovery on most prompts, the random start's ceiling, the success test's floor
EXACT_MAJORITY, START_CEILING, SUCCESS_MAJORITY = numbers(__file__, "EXACT_MAJORITY", "START_CEILING",
                                                          "SUCCESS_MAJORITY")


def recovery_checks(e: RecoveryEstimates, context: RecoveryContext) -> list[Check]:
    """S3.2's claim check (exact recovery on more than EXACT_MAJORITY of the prompts), S3's own setting beside it (a
    reading, on a CPU) and its two controls (the start near chance, the success test); ``context.best`` names the
    headline setting. Pure: the same estimates give the same checks."""
    recovered = Check.of(f"fraction of prompts recovered exactly (restricted vocabulary, {context.headline_label})",
                         e.exact, "fraction of prompts", ">", EXACT_MAJORITY,
                         **catalogued("S3.2/exact", headline_reading=context.headline_reading))
    return [
        recovered, *([] if e.source_setting is None else [source_setting_reading(recovered, e.source_setting)]),
        Check.of("token accuracy of the random start a₀ (restricted vocabulary, the higher of the two settings)", e.start,
                 "fraction of tokens", "<", START_CEILING, role="control",
                 **catalogued("S3.2/random-start")),
        Check.of(f"fraction of prompts passing S3's success test ({context.best} setting)", e.success,
                 "fraction of prompts", ">", SUCCESS_MAJORITY, role="control",
                 **catalogued("S3.2/success-test")),
    ]


def gap_checks(e: GapEstimates, context: GapContext) -> list[Check]:
    """S3.3's two claim checks (the gaps above 0), the convergence controls of each gap given a longer value, S3's
    own setting beside each (readings, on a CPU), and the success-test control (again at 5N where continued);
    ``context.best`` names the trained model's headline setting, ``context.steps`` its N. Pure."""
    gaps = [
        Check.of(f"exact-recovery rate, untrained twin minus trained (each its {context.headline_label})", e.exact_gap,
                 "fraction of prompts", ">", 0.0,
                 **catalogued("S3.3/exact-gap", headline_reading=context.headline_reading)),
        Check.of(f"token accuracy, untrained twin minus trained (each its {context.headline_label})", e.token_gap,
                 "fraction of tokens", ">", 0.0,
                 **catalogued("S3.3/token-gap")),
    ]
    longer = [c for g, more in zip(gaps, (e.exact_longer, e.token_longer)) if more is not None
              for c in convergence_checks(g, more, context.steps)]
    success = Check.of(f"fraction of the trained model's prompts passing S3's success test ({context.best} setting)",
                       e.success, "fraction of prompts", ">", SUCCESS_MAJORITY, role="control",
                       **catalogued("S3.3/success-test"))
    return [
        *gaps, *longer, *(source_setting_reading(g, own) for g, own in zip(gaps, e.source_setting)),
        success, *([] if e.longer_success is None else [at_headline_budget(success, e.longer_success, context.steps)]),
    ]


def continuing_gap(e: GapEstimates, context: GapContext) -> Check:
    """The gap whose decision continues S3.3's descents (``convergence.settled``, issue 79: the test owns the loop,
    the checks decide): a failed gap (more trained steps only deepen it, the twin's may end it), else a held one (a
    hold rests on the trained model's failure to recover), else the first (undecided: nothing continues)."""
    gaps = gap_checks(e, context)[:2]
    return next((g for status in (FAILED, PASSED) for g in gaps if g.status == status), gaps[0])
