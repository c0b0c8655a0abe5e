"""Self-tests of the Hellinger distance: identities and bounds."""

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from latent_instruments.distances import hellinger_distance

vocab_sizes = st.integers(min_value=2, max_value=65)
seeds = st.integers(min_value=0, max_value=2**31 - 1)


def random_distribution(vocab: int, seed: int) -> torch.Tensor:
    return torch.softmax(3 * torch.randn(vocab, generator=torch.Generator().manual_seed(seed), dtype=torch.float64), dim=0)


@given(vocab=vocab_sizes, seed_p=seeds, seed_q=seeds)
@settings(max_examples=50, deadline=None)
def test_bounded_symmetric_and_bhattacharyya(vocab, seed_p, seed_q):
    p, q = random_distribution(vocab, seed_p), random_distribution(vocab, seed_q)
    h = hellinger_distance(p, q).item()
    assert 0.0 <= h <= 1.0
    assert h == pytest.approx(hellinger_distance(q, p).item(), abs=1e-12)
    assert h**2 == pytest.approx(1 - (p.double() * q.double()).sqrt().sum().item(), abs=1e-9)


@given(vocab=vocab_sizes, seed=seeds)
def test_zero_on_identical(vocab, seed):
    p = random_distribution(vocab, seed)
    assert hellinger_distance(p, p).item() == pytest.approx(0.0, abs=1e-7)


def test_one_on_disjoint_supports():
    p, q = torch.tensor([0.5, 0.5, 0.0, 0.0]), torch.tensor([0.0, 0.0, 0.3, 0.7])
    assert hellinger_distance(p, q).item() == pytest.approx(1.0)


def test_source_formula_example():
    p, q = torch.tensor([1.0, 0.0]), torch.tensor([0.5, 0.5])
    assert hellinger_distance(p, q).item() == pytest.approx(math.sqrt((1 - math.sqrt(0.5)) ** 2 + 0.5) / math.sqrt(2))


def test_batched_over_leading_axes():
    p = torch.softmax(torch.randn(3, 5, 7), dim=-1)
    assert hellinger_distance(p, p.flip(0)).shape == (3, 5)


def test_negative_probability_is_refused():
    with pytest.raises(ValueError, match="non-negative"):
        hellinger_distance(torch.tensor([1.5, -0.5]), torch.tensor([0.5, 0.5]))
