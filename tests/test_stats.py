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
