"""Self-tests of the bootstrap helper."""

import numpy as np
import pytest

from latent_instruments.stats import bootstrap


def test_interval_covers_the_mean_of_a_known_normal():
    sample = np.random.default_rng(0).normal(loc=3.0, scale=1.0, size=400)
    est = bootstrap(sample, lambda u: float(u.mean()), seed=0)
    assert est.low < 3.0 < est.high
    assert est.high - est.low == pytest.approx(2 * 1.96 / 20, rel=0.25)


def test_same_seed_same_interval():
    sample = np.arange(50.0)
    a = bootstrap(sample, lambda u: float(u.mean()), seed=7)
    b = bootstrap(sample, lambda u: float(u.mean()), seed=7)
    assert (a.low, a.high) == (b.low, b.high)


def test_rows_stay_paired():
    paired = np.stack([np.arange(30.0), np.arange(30.0) + 1.0], axis=1)
    est = bootstrap(paired, lambda u: float((u[:, 1] - u[:, 0]).mean()), seed=0)
    assert est.low == est.high == est.value == 1.0


@pytest.mark.parametrize("spread", [1.0, 0.0])  # 0: every resample equal, BCa undefined, the percentile fallback
def test_the_interval_is_scipys_with_the_statistic_run_resample_by_resample(spread):
    """bootstrap hands scipy every resample at once and runs the statistic on each in turn: the interval is, to the
    last bit, scipy's own with ``vectorized=False`` (a nonlinear statistic of paired 2-D units)."""
    from scipy import stats as scipy_stats
    units = np.stack([np.random.default_rng(1).gamma(2.0, size=40), np.linspace(1, 2, 40)], axis=1) * spread + 1

    def ratio(u):
        return float(u[:, 0].mean() / u[:, 1].mean())

    est = bootstrap(units, ratio, seed=3)
    method = "BCa" if spread else "percentile"
    expected = scipy_stats.bootstrap((np.arange(40),), lambda idx: ratio(units[idx.astype(int)]), vectorized=False,
                                     n_resamples=1000, confidence_level=0.95, method=method,
                                     rng=np.random.default_rng(3)).confidence_interval
    assert (est.low, est.high) == (expected.low, expected.high)
    assert est.method.startswith(method)


def test_too_few_units():
    with pytest.raises(ValueError, match="at least 2"):
        bootstrap(np.array([1.0]), lambda u: float(u.mean()), seed=0)


def test_a_proportion_gets_the_exact_interval_its_sample_can_give():
    """Issue 43's numbers: 4 of 4 at 98.3 % is [0.30, 1], 84 of 84 at 95 % has its low end at 0.957, 0 of 8 is [0, 0.45]
    at 98.3 %; the bootstrap of the same 0/1 units gives a point."""
    from latent_instruments.stats import bootstrap, proportion

    four = proportion(np.ones(4), confidence=1 - 0.05 / 3)
    assert four.value == 1.0 and round(four.low, 2) == 0.30 and four.high == 1.0 and four.n == 4
    assert four.method == "exact binomial (Clopper–Pearson)"
    assert round(proportion(np.ones(84)).low, 3) == 0.957
    none = proportion(np.zeros(8, dtype=bool), confidence=1 - 0.05 / 3)
    assert none.low == 0.0 and round(none.high, 2) == 0.45
    point = bootstrap(np.ones(4), lambda u: float(u.mean()), seed=0)
    assert point.low == point.high == 1.0 and point.method.startswith("percentile bootstrap")
    with pytest.raises(ValueError, match="0/1"):
        proportion(np.array([0.5, 1.0]))


@pytest.mark.parametrize("n", [4, 8])
def test_an_all_equal_sample_says_its_interval_is_a_point_of_the_bootstrap(n):
    """The record names how each interval was made, so a zero-width bootstrap from n > 1 units is visible as one."""
    from latent_instruments.stats import bootstrap
    from reports.checks import Check

    check = Check.of("fraction", bootstrap(np.full(n, 0.7), lambda u: float(u.mean()), seed=0), "", ">", 0.5, "d")
    assert check.ci_low == check.ci_high == 0.7 and check.n == n
    assert "do not vary" in check.interval
    from dataclasses import asdict

    assert asdict(check)["interval"] == check.interval  # results.json's check carries it


@pytest.mark.parametrize("n", [4, 8])
def test_an_all_equal_sample_of_few_units_does_not_decide(n):
    """Issue 43: all-equal samples of 4 and 8 units must not decide, on either side of the threshold; the check says
    why, and a sequential test's looks then go on (the record is inconclusive)."""
    from reports.checks import INCONCLUSIVE, Check

    for threshold, comparison in ((0.5, ">"), (0.9, ">"), (0.5, "<")):
        check = Check.of("f", bootstrap(np.full(n, 0.7), lambda u: float(u.mean()), seed=0), "", comparison, threshold,
                         "d")
        assert check.status == INCONCLUSIVE and not check.passed
        assert f"from {n} units" in check.undecidable
        assert check.sample_factor >= 16 / n


def test_a_bootstrap_decides_from_16_units_and_not_from_15():
    from reports.checks import FAILED, INCONCLUSIVE, PASSED, Check

    rng = np.random.default_rng(0)
    for n, status in ((15, INCONCLUSIVE), (16, PASSED)):
        check = Check.of("mean", bootstrap(rng.normal(5.0, 1.0, n), lambda u: float(u.mean()), seed=0), "", ">", 0.0, "d")
        assert check.status == status, n
    low = Check.of("mean", bootstrap(rng.normal(-5.0, 1.0, 16), lambda u: float(u.mean()), seed=0), "", ">", 0.0, "d")
    assert low.status == FAILED


def test_a_zero_width_bootstrap_from_many_units_does_not_decide_even_on_its_threshold():
    """Issue 43: S0.3's ρ = 0 [0, 0] against < 0 and S3.6's 0 [0, 0] against > 0 were decided 'failed'."""
    from reports.checks import INCONCLUSIVE, Check

    point = bootstrap(np.zeros(64), lambda u: float(u.mean()), seed=0)
    for comparison in ("<", ">"):
        check = Check.of("rho", point, "", comparison, 0.0, "d")
        assert check.status == INCONCLUSIVE and "zero-width" in check.undecidable
        assert check.sample_factor == float("inf")


def test_exact_deterministic_and_per_unit_intervals_decide_at_any_n():
    from latent_instruments.stats import Estimate, per_unit, proportion
    from reports.checks import FAILED, PASSED, Check

    assert Check.of("p", proportion(np.ones(8), confidence=1 - 0.05 / 3), "", ">", 0.5, "d").status == PASSED
    assert Check.of("count", Estimate(3.0, 3.0, 3.0, 1.0, 4), "", ">", 2.0, "d").status == PASSED
    worst = per_unit(np.array([[0.1, 0.2], [0.3, 0.05]]), "max")
    assert (worst.value, worst.low, worst.high, worst.n) == (0.3, 0.3, 0.3, 2)
    assert "largest of 4 values over 2 units" in worst.method
    assert Check.of("worst", worst, "", "<", 1.0, "d").status == PASSED
    assert Check.of("worst", worst, "", "<", 0.25, "d").status == FAILED  # one unit over the bound fails it
    assert Check.of("least", per_unit(np.array([2.0, 0.9, 3.0]), "min"), "", ">", 1.0, "d").status == FAILED
    with pytest.raises(ValueError, match="max"):
        per_unit(np.ones(3), "mean")
    with pytest.raises(ValueError, match="not finite"):
        per_unit(np.array([1.0, np.nan]), "max")


def test_a_record_from_before_the_interval_method_is_read_as_then():
    """A check without ``interval`` (results.json before schema 7) is decided as it was: a baseline is not rewritten."""
    from reports.checks import PASSED, Check

    assert Check("f", 0.7, 0.7, 0.7, "", ">", 0.5, "d", n=4).status == PASSED


def test_a_difference_of_proportions_gets_newcombes_score_interval():
    """Newcombe (1998a)'s worked example, 56/70 − 48/80: method 10 gives [0.0524, 0.3339]; paired, 16 pairs all (1, 0)
    at 98.3 % give [0.63, 1] where the bootstrap gives [1, 1]; no difference on 16 equal pairs does not decide > 0."""
    from latent_instruments.stats import proportion, proportion_difference
    from reports.checks import INCONCLUSIVE, PASSED, Check

    independent = proportion_difference(np.r_[np.ones(56), np.zeros(14)], np.r_[np.ones(48), np.zeros(32)],
                                        paired=False, confidence=0.95)
    assert independent.value == pytest.approx(0.2)
    assert (round(independent.low, 4), round(independent.high, 4)) == (0.0524, 0.3339)
    paired = proportion_difference(np.ones(16), np.zeros(16), paired=True, confidence=1 - 0.05 / 3)
    assert round(paired.low, 2) == 0.63 and paired.high == 1.0 and "paired" in paired.method
    assert Check.of("gap", paired, "", ">", 0.0, "d").status == PASSED
    # positively correlated pairs: method 10's continuity-corrected φ (the uncorrected one gave [0.031, 0.460])
    correlated = proportion_difference(np.r_[np.ones(14), np.zeros(2)], np.r_[np.ones(10), np.zeros(6)], paired=True,
                                       confidence=0.95)
    assert (round(correlated.low, 3), round(correlated.high, 3)) == (-0.006, 0.479)
    same = proportion_difference(np.ones(16), np.ones(16), paired=True)
    assert same.low < 0 < same.high
    assert Check.of("gap", same, "", ">", 0.0, "d").status == INCONCLUSIVE
    with pytest.raises(ValueError, match="equal"):
        proportion_difference(np.ones(3), np.ones(4), paired=True)
    with pytest.raises(ValueError, match="0/1"):
        proportion_difference(np.full(3, 0.5), np.ones(3), paired=False)
    assert proportion(np.ones(16), confidence=1 - 0.05 / 3).low > 0.5  # 16 reported prompts decide S3's majorities


def test_bad_arguments_are_refused_at_the_boundary_naming_the_argument():
    """Issue 59, item 8: confidence=95 gave [nan, nan], which Check.of turned into "inconclusive"; n_resamples=1 an
    interval that excluded the estimate; per_unit([5, -inf], "max") returned 5; a 0-d array an IndexError."""
    from latent_instruments.stats import per_unit

    x = np.random.default_rng(0).normal(size=32)
    with pytest.raises(ValueError, match="confidence must be a level in \\(0, 1\\).*got 95"):
        bootstrap(x, np.mean, seed=0, confidence=95)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap(x, np.mean, seed=0, confidence=0.0)
    with pytest.raises(ValueError, match="n_resamples must be an integer of at least 200, got 1"):
        bootstrap(x, np.mean, seed=0, n_resamples=1)
    with pytest.raises(ValueError, match="units must have a first axis"):
        bootstrap(np.array(5.0), np.mean, seed=0)
    with pytest.raises(ValueError, match="units hold 1 value\\(s\\) that are not finite"):
        per_unit([5, -np.inf], "max")
    with pytest.raises(ValueError, match="units must have a first axis of units, got a scalar"):
        per_unit(np.array(5.0), "max")
    with pytest.raises(ValueError, match="at least one value in units"):
        per_unit([], "min")
    assert per_unit([5.0], "max").value == 5.0
