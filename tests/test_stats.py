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
