"""S3.2 and S3.3's checks as pure functions of their estimates: ``untrained_measures.py`` measures, these decide, and
the self-tests (``tests/cases_s3.py``) drive the same functions to hold and to fail each check.

S3.2: S3's one prompt is recovered exactly at N = 200; one success fixes no rate, so "recovers" is read as "exact
recovery is the typical outcome": most prompts, by the interval's low end (``EXACT_MAJORITY``).
"""

from dataclasses import dataclass, field

from claims.s3_inversion.convergence import at_headline_budget, convergence_checks
from claims.s3_inversion.source_setting import source_setting_reading
from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

EXACT_MAJORITY = 0.5
START_CEILING = 0.5  # control: the random start decoded with the same vocabulary is near chance, far below this
SUCCESS_MAJORITY = 0.5  # control: S3 decodes once ‖O(a_g) − O(a)‖ < ‖O(a′) − O(a)‖; most prompts must reach it


@dataclass(frozen=True)
class RecoveryEstimates:
    """What S3.2's test measures on a random-init model's block 1, over the reported prompts.

    Attributes:
        exact: fraction of prompts recovered exactly (the headline setting; an exact interval).
        start: token accuracy of the random start a₀, the higher of the two settings (fraction of tokens).
        success: fraction of prompts passing S3's success test (an exact interval).
        source_setting: ``exact`` with S3's own setting (a reading beside the headline, issue 77; None at source
            scale, where the headline is S3's setting).
        runs: shown beside the checks, deciding nothing: {setting: ``inversions.Run``} of block 1.
        best: shown: the headline setting; prompts: shown: the prompts inverted.
    """

    exact: Estimate
    start: Estimate
    success: Estimate
    source_setting: Estimate | None = None
    runs: dict = field(default_factory=dict, compare=False)
    best: str = field(default="", compare=False)
    prompts: int = field(default=0, compare=False)


def recovery_checks(e: RecoveryEstimates, headline_label: str, headline_reading: str, best: str) -> list[Check]:
    """S3.2's claim check and its two controls (the start near chance, the success test); ``best`` names the
    headline setting."""
    recovered = Check.of(f"fraction of prompts recovered exactly (restricted vocabulary, {headline_label})", e.exact,
                         "fraction of prompts", ">", EXACT_MAJORITY,
                         **catalogued("S3.2/fraction-of-prompts-recovered-exactly-restricted-vocabulary",
                                      EXACT_MAJORITY=EXACT_MAJORITY, headline_reading=headline_reading))
    return [
        recovered, *([] if e.source_setting is None else [source_setting_reading(recovered, e.source_setting)]),
        Check.of("token accuracy of the random start a₀ (restricted vocabulary, the higher of the two settings)", e.start,
                 "fraction of tokens", "<", START_CEILING, role="control",
                 **catalogued("S3.2/token-accuracy-of-the-random-start-a-restricted-vocabulary-the-higher",
                              START_CEILING=START_CEILING)),
        Check.of(f"fraction of prompts passing S3's success test ({best} setting)", e.success,
                 "fraction of prompts", ">", SUCCESS_MAJORITY, role="control",
                 **catalogued("S3.2/fraction-of-prompts-passing-s3-s-success-test-setting",
                              SUCCESS_MAJORITY=SUCCESS_MAJORITY)),
    ]


@dataclass(frozen=True)
class GapEstimates:
    """What S3.3's test measures on a trained model and its untrained twin, block 1, the same reported prompts.

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
        context: not a measurement: the arguments ``gap_checks`` takes after the estimates
            (headline label and reading, the trained model's headline setting, its N).
        runs: shown beside the checks, deciding nothing: {(model, setting): ``inversions.Run``} of block 1; best:
            shown: each model's headline setting, trained first; prompts: shown: the prompts inverted.
    """

    exact_gap: Estimate
    token_gap: Estimate
    success: Estimate
    exact_longer: Estimate | None = None
    token_longer: Estimate | None = None
    longer_success: Estimate | None = None
    source_setting: tuple = ()
    context: tuple = field(default=(), compare=False)
    runs: dict = field(default_factory=dict, compare=False)
    best: list[str] = field(default_factory=list, compare=False)
    prompts: int = field(default=0, compare=False)


def gap_checks(e: GapEstimates, headline_label: str, headline_reading: str, best: str, steps: int) -> list[Check]:
    """S3.3's two claim checks (the gaps), the convergence control of each gap given a longer value, and the
    success-test control; ``best`` names the trained model's headline setting, ``steps`` its N."""
    gaps = [
        Check.of(f"exact-recovery rate, untrained twin minus trained (each its {headline_label})", e.exact_gap,
                 "fraction of prompts", ">", 0.0,
                 **catalogued("S3.3/exact-recovery-rate-untrained-twin-minus-trained-each-its",
                              headline_reading=headline_reading)),
        Check.of(f"token accuracy, untrained twin minus trained (each its {headline_label})", e.token_gap,
                 "fraction of tokens", ">", 0.0,
                 **catalogued("S3.3/token-accuracy-untrained-twin-minus-trained-each-its")),
    ]
    longer = [c for g, more in zip(gaps, (e.exact_longer, e.token_longer)) if more is not None
              for c in convergence_checks(g, more, steps)]
    success = Check.of(f"fraction of the trained model's prompts passing S3's success test ({best} setting)",
                       e.success, "fraction of prompts", ">", SUCCESS_MAJORITY, role="control",
                       **catalogued("S3.3/fraction-of-the-trained-model-s-prompts-passing-s3-s-success-test",
                                    SUCCESS_MAJORITY=SUCCESS_MAJORITY))
    return [
        *gaps, *longer, *(source_setting_reading(g, own) for g, own in zip(gaps, e.source_setting)),
        success, *([] if e.longer_success is None else [at_headline_budget(success, e.longer_success, steps)]),
    ]
