"""S3.6's statistic: accuracy differences from integer counts of tokens right, so equal accuracies are exactly 0."""

import numpy as np

from claims.s3_inversion.vocabulary_measures import accuracy_difference
from latent_instruments.stats import bootstrap
from reports.checks import Check


def _check(counts: np.ndarray) -> Check:
    return Check.of("gain", bootstrap(counts, accuracy_difference(1, 0, 7), seed=0), "fraction of tokens", ">", 0.0, "S3.6")


def test_equal_totals_give_exactly_zero_and_decide_nothing():
    """Counts that differ per prompt but sum to the same total: float32 means of k/7 could give ±1e-9."""
    counts = np.array([[1, 0], [0, 1], [3, 2], [2, 3], [5, 5], [6, 6]] * 4, dtype=np.int64)
    check = _check(counts)
    assert check.value == 0.0 and check.status == "inconclusive"


def test_no_gain_on_any_prompt_decides_nothing_and_a_loss_fails_the_strict_gain():
    """Issue 43: 0 [0, 0] on every prompt (S3.6 on tiny-bpe-w96) is a zero-width interval, which decides nothing;
    restrictions that lose tokens on some prompts fail."""
    same = _check(np.array([[3, 3], [5, 5], [2, 2], [6, 6]] * 6, dtype=np.int64))
    assert (same.value, same.ci_low, same.ci_high) == (0.0, 0.0, 0.0) and same.status == "inconclusive"
    assert "zero-width" in same.undecidable
    loss = _check(np.array([[3, 2], [5, 3], [2, 2], [6, 5]] * 6, dtype=np.int64))
    assert loss.value < 0 and loss.status == "failed"


def test_a_real_gain_passes():
    counts = np.array([[1, 3], [2, 3], [0, 2], [3, 5]] * 6, dtype=np.int64)
    check = _check(counts)
    assert check.value == 7 / 4 / 7 and check.status == "passed"
