"""S3.2 and S3.3's checks as pure functions of their estimates: ``test_untrained.py`` measures, these decide, and the
self-tests (``tests/cases_s3.py``) drive the same functions to hold and to fail each check.

S3.2: S3's one prompt is recovered exactly at N = 200; one success fixes no rate, so "recovers" is read as "exact
recovery is the typical outcome": most prompts, by the interval's low end (``EXACT_MAJORITY``).
"""

from dataclasses import dataclass

from claims.s3_inversion.convergence import convergence_check
from latent_instruments.stats import Estimate
from reports.checks import Check

EXACT_MAJORITY = 0.5
START_CEILING = 0.5  # control: the random start decoded with the same vocabulary is near chance, far below this
SUCCESS_MAJORITY = 0.5  # control: S3 decodes once ‖O(a_g) − O(a)‖ < ‖O(a′) − O(a)‖; most prompts must reach it

START_DERIVATION = (
    "control: the random start a₀ decoded with the same restricted vocabulary must be far from the prompt "
    "(chance is 1/|allowed|, about 1/10 to 1/25 here); a vocabulary so narrow that any input decodes to the "
    f"prompt would pass the claim vacuously and fail this ceiling of {START_CEILING}")
SUCCESS_DERIVATION = (
    "control: S3 decodes an a_g once its output is closer to O(a) than the output of the shifted input "
    "a′ = a + noise/20 is ('iterating such that ‖O(a_g) − O(a)‖ < ‖O(a′) − O(a)‖'); if most prompts do "
    "not reach that, the optimisation stopped short and a failure to recover is the optimiser's, not the "
    f"model's. Floor {SUCCESS_MAJORITY}: most prompts, by the interval's low end")


@dataclass(frozen=True)
class RecoveryEstimates:
    """What S3.2's test measures on a random-init model's block 1, over the reported prompts.

    Attributes:
        exact: fraction of prompts recovered exactly (the headline setting; an exact interval).
        start: token accuracy of the random start a₀, the higher of the two settings (fraction of tokens).
        success: fraction of prompts passing S3's success test (an exact interval).
    """

    exact: Estimate
    start: Estimate
    success: Estimate


def recovery_checks(e: RecoveryEstimates, headline_label: str, headline_reading: str, best: str) -> list[Check]:
    """S3.2's claim check and its two controls (the start near chance, the success test); ``best`` names the
    headline setting."""
    return [
        Check.of(f"fraction of prompts recovered exactly (restricted vocabulary, {headline_label})", e.exact,
                 "fraction of prompts", ">", EXACT_MAJORITY,
                 "S3: 'the same model before training is capable of recovering the target input after N=200 "
                 "steps' (untrained GPT-2, block 1, the words of a 13-token sentence allowed for a 5-token "
                 "prompt). S3 shows one prompt, recovered exactly; one success fixes no rate, so the "
                 f"threshold reads 'recovers' as the typical outcome: more than {EXACT_MAJORITY} of prompts "
                 f"exactly, by the low end of the interval. {headline_reading}",
                 key="S3.2/fraction-of-prompts-recovered-exactly-restricted-vocabulary"),
        Check.of("token accuracy of the random start a₀ (restricted vocabulary, the higher of the two settings)", e.start,
                 "fraction of tokens", "<", START_CEILING, START_DERIVATION, role="control",
                 key="S3.2/token-accuracy-of-the-random-start-a-restricted-vocabulary-the-higher"),
        Check.of(f"fraction of prompts passing S3's success test ({best} setting)", e.success,
                 "fraction of prompts", ">", SUCCESS_MAJORITY, SUCCESS_DERIVATION, role="control",
                 key="S3.2/fraction-of-prompts-passing-s3-s-success-test-setting"),
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
    """

    exact_gap: Estimate
    token_gap: Estimate
    success: Estimate
    exact_longer: Estimate | None = None
    token_longer: Estimate | None = None


def gap_checks(e: GapEstimates, headline_label: str, headline_reading: str, best: str, steps: int) -> list[Check]:
    """S3.3's two claim checks (the gaps), the convergence control of each gap given a longer value, and the
    success-test control; ``best`` names the trained model's headline setting, ``steps`` its N."""
    gaps = [
        Check.of(f"exact-recovery rate, untrained twin minus trained (each its {headline_label})", e.exact_gap,
                 "fraction of prompts", ">", 0.0,
                 "S3: the untrained GPT-2 block recovers 'The sky is blue.' exactly at N = 200 where the "
                 "trained one gives 'day or day blue or' at N = 20000 (same allowed vocabulary): the trained "
                 "model fails where the twin succeeds. S3 gives one prompt each, no rate, so the threshold "
                 "is the ordering itself: the paired difference of exact-recovery rates above 0 by the low "
                 "end of its interval (Newcombe's score interval for paired proportions: the same prompts "
                 f"invert in both models). {headline_reading}",
                 key="S3.3/exact-recovery-rate-untrained-twin-minus-trained-each-its"),
        Check.of(f"token accuracy, untrained twin minus trained (each its {headline_label})", e.token_gap,
                 "fraction of tokens", ">", 0.0,
                 "S3's trained block recovers 1 of 5 tokens ('blue'), the untrained 5 of 5: the trained model "
                 "also recovers fewer tokens, not only fewer whole prompts; ordering, low end above 0",
                 key="S3.3/token-accuracy-untrained-twin-minus-trained-each-its"),
    ]
    longer = [convergence_check(g, more, steps) for g, more in zip(gaps, (e.exact_longer, e.token_longer))
              if more is not None]
    return [
        *gaps, *longer,
        Check.of(f"fraction of the trained model's prompts passing S3's success test ({best} setting)",
                 e.success, "fraction of prompts", ">", SUCCESS_MAJORITY, SUCCESS_DERIVATION, role="control",
                 key="S3.3/fraction-of-the-trained-model-s-prompts-passing-s3-s-success-test"),
    ]
