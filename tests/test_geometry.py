"""Self-tests of latent_instruments.geometry on synthetic residual streams and embeddings of known answer."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from latent_instruments.errors import NonFiniteError
from latent_instruments.geometry import (
    consecutive_cosines, cross_token_cosine, excess_over_baseline, fit_log_growth, growth_per_layer,
    mean_norm_by_layer, mismatched_consecutive_cosines, token_norm_ratio,
)
from latent_instruments.analogies import analogy_ranks, crossed_analogies, word_token
from latent_instruments.stats import bootstrap
from reports.checks import Check
from claims.s2_residual.stream_checks import COSINE_FLOOR, direction_checks, growth_checks
from claims.s2_residual.stream_measures import (
    RATE_HIGH, RATE_LOW, DirectionEstimates, GrowthEstimates, StreamContext, mean_by_layer, median_token_growth,
    min_step_ratio, null_margin,
)
from models.tokenization import CharTokenizer

seeds = st.integers(min_value=0, max_value=2**31 - 1)


def randn(*shape, seed=0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# --- norms by depth (S2.1) -------------------------------------------------------------------------------


def test_norms_of_a_geometric_stream_grow_by_its_factor():
    base = randn(3, 10, 16)
    layers = [base * 1.5**k for k in range(5)]
    norms = mean_norm_by_layer(layers)
    assert norms.shape == (3, 5)
    assert (norms[:, 1:] / norms[:, :-1]).numpy() == pytest.approx(1.5, rel=1e-6)
    assert growth_per_layer(norms.mean(0)).item() == pytest.approx(1.5, rel=1e-6)
    fit = fit_log_growth(norms.mean(0))
    assert fit.factor == pytest.approx(1.5, rel=1e-6) and fit.r_squared == pytest.approx(1.0, abs=1e-9)


def test_the_first_token_is_left_out():
    h = torch.ones(1, 4, 2)
    h[:, 0] = 1000.0  # an attention-sink outlier
    assert mean_norm_by_layer([h]).item() == pytest.approx(math.sqrt(2))
    assert mean_norm_by_layer([h], first_position=0).item() > 100


def test_log_fit_sees_a_non_exponential_curve():
    fit = fit_log_growth(torch.tensor([1.0, 10.0, 10.0, 10.0, 100.0]))
    assert fit.r_squared < 0.95
    assert fit_log_growth(torch.tensor([3.0, 3.0, 3.0])).factor == pytest.approx(1.0)


def test_growth_rejects_bad_norms():
    with pytest.raises(ValueError):
        growth_per_layer(torch.tensor([1.0]))
    with pytest.raises(ValueError):
        growth_per_layer(torch.tensor([0.0, 1.0]))


# --- cosines (S2.2) ----------------------------------------------------------------------------------------


def test_consecutive_cosine_of_a_rotating_stream_is_the_cosine_of_its_step():
    angle = 0.3
    t = torch.arange(3, dtype=torch.float64)
    layers = []
    for k in range(4):  # every token's state turns by `angle` per layer, in its own plane
        h = torch.zeros(2, 3, 8, dtype=torch.float64)
        h[..., 0], h[..., 1] = math.cos(k * angle), math.sin(k * angle)
        layers.append(h * (1 + t)[None, :, None])  # norms differ by position: cosine ignores them
    cos = consecutive_cosines(layers)
    assert cos.shape == (2, 3)
    assert cos.numpy() == pytest.approx(math.cos(angle), abs=1e-12)


@given(seed=seeds, scale=st.floats(min_value=1e-3, max_value=1e3))
@settings(max_examples=25, deadline=None)
def test_cosines_ignore_the_scale_of_each_layer(seed, scale):
    layers = [randn(2, 6, 12, seed=seed), randn(2, 6, 12, seed=seed + 1)]
    rescaled = [layers[0] * scale, layers[1]]
    assert consecutive_cosines(rescaled).numpy() == pytest.approx(consecutive_cosines(layers).numpy(), abs=1e-5)
    assert cross_token_cosine(rescaled).numpy() == pytest.approx(cross_token_cosine(layers).numpy(), abs=1e-5)


def test_cross_token_cosine_of_a_shared_direction_is_one_and_of_orthogonal_tokens_zero():
    shared = torch.ones(2, 5, 4)
    assert cross_token_cosine([shared]).numpy() == pytest.approx(1.0, abs=1e-6)
    orthogonal = torch.eye(6)[None, :, :].repeat(2, 1, 1)  # position t points along axis t
    assert cross_token_cosine([orthogonal]).numpy() == pytest.approx(0.0, abs=1e-12)


@given(seed=seeds)
@settings(max_examples=20, deadline=None)
def test_cross_token_cosine_is_the_mean_over_pairs(seed):
    h = randn(2, 7, 5, seed=seed)
    u = h[:, 1:] / h[:, 1:].norm(dim=-1, keepdim=True)
    gram = u @ u.transpose(1, 2)
    n = u.shape[1]
    expected = (gram.sum(dim=(1, 2)) - gram.diagonal(dim1=1, dim2=2).sum(-1)) / (n * (n - 1))
    assert cross_token_cosine([h])[:, 0].numpy() == pytest.approx(expected.numpy(), abs=1e-12)


def test_excess_is_the_cosine_of_the_token_parts_under_a_shared_direction():
    # h = μ + x_t with |μ|² = m, |x|² = s, token parts orthogonal across tokens and at cosine ρ across layers
    d, n, m, rho = 64, 8, 9.0, 0.6
    basis = torch.linalg.qr(randn(d, d))[0]
    mu = basis[:, 0] * math.sqrt(m)
    x = basis[:, 1: n + 1].T  # (n, d), unit, orthogonal
    y = basis[:, n + 1: 2 * n + 1].T
    x_next = rho * x + math.sqrt(1 - rho**2) * y
    before, after = (mu + x)[None], (mu + x_next)[None]
    baseline = cross_token_cosine([before], first_position=0)[0, 0]
    assert baseline.item() == pytest.approx(m / (m + 1), abs=1e-9)
    cos = consecutive_cosines([before, after], first_position=0)[0, 0]
    assert excess_over_baseline(cos, baseline).item() == pytest.approx(rho, abs=1e-9)
    with pytest.raises(ValueError):
        excess_over_baseline(cos, torch.tensor(1.0))


def test_the_mismatched_null_averages_every_pair_of_different_tokens_across_two_layers():
    before, after = randn(2, 6, 5, seed=1), randn(2, 6, 5, seed=2)
    u = before[:, 1:] / before[:, 1:].norm(dim=-1, keepdim=True)
    v = after[:, 1:] / after[:, 1:].norm(dim=-1, keepdim=True)
    gram = u @ v.transpose(1, 2)  # (batch, n, n): cos(h_l[t], h_l+1[s])
    n = u.shape[1]
    expected = (gram.sum(dim=(1, 2)) - gram.diagonal(dim1=1, dim2=2).sum(-1)) / (n * (n - 1))
    assert mismatched_consecutive_cosines([before, after])[:, 0].numpy() == pytest.approx(expected.numpy(), abs=1e-12)


def _shared_direction_stream(token_part: float, keep: float, blocks: int = 4, batch: int = 16, seed: int = 0):
    """A stream of a shared direction plus token parts of size token_part that keep cosine ``keep`` per layer."""
    d, n = 64, 12
    generator = torch.Generator().manual_seed(seed)
    mu = torch.zeros(d, dtype=torch.float64)
    mu[0] = 1.0
    part = torch.randn(batch, n, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
    layers = []
    for _ in range(blocks + 1):
        layers.append(mu + token_part * part)
        fresh = torch.randn(batch, n, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
        part = keep * part + math.sqrt(1 - keep**2) * fresh
    return layers


def _s2_2_checks(layers) -> tuple[Check, Check]:
    """S2.2's claim check and control (``direction_checks``) on a stream, measured as the claim measures them."""
    consecutive = consecutive_cosines(layers).numpy()
    units = np.concatenate([consecutive, mismatched_consecutive_cosines(layers).numpy()], axis=1)
    n_blocks = len(layers) - 1
    counted = slice(1, n_blocks)  # every transition after block 1's
    floor = bootstrap(consecutive, lambda u: float(mean_by_layer(u)[counted].min()), seed=0)
    margin = bootstrap(units, lambda u: float(null_margin(u, n_blocks)[counted].min()), seed=0)
    labels = ("embed", *(f"block {i}" for i in range(1, n_blocks + 1)))
    checks = {c.key: c for c in direction_checks(DirectionEstimates(floor, margin), StreamContext(labels))}
    floor_check = checks["S2.2/cosine-floor"]
    assert floor_check.threshold == COSINE_FLOOR
    return floor_check, checks["S2.2/mismatched-token-control"]


def test_the_s2_2_control_fails_a_stream_whose_tokens_keep_no_direction_of_their_own():
    """A shared direction with token parts that are redrawn every layer passes the 0.88 floor, vacuously: the
    control sees it. Token parts that persist across layers pass both."""
    vacuous_floor, vacuous_control = _s2_2_checks(_shared_direction_stream(token_part=0.3, keep=0.0))
    assert vacuous_floor.status == "passed" and vacuous_control.status == "failed"
    floor, control = _s2_2_checks(_shared_direction_stream(token_part=0.3, keep=0.9))
    assert floor.status == "passed" and control.status == "passed"
    floor, _ = _s2_2_checks(_shared_direction_stream(token_part=3.0, keep=0.5))
    assert floor.status == "failed"  # the claim check fails a stream that turns


def _growing_stream(rate: float, blocks: int = 4, batch: int = 16, seed: int = 0, outliers: bool = False):
    """Hidden states whose norm is 0.1 at the embedding, 1 at block 1, then × rate per block (every token), or,
    with ``outliers``, one token per prompt growing × rate² per block while every other token shrinks × 0.9."""
    generator = torch.Generator().manual_seed(seed)
    direction = torch.randn(batch, 9, 32, generator=generator, dtype=torch.float64)
    direction = direction / direction.norm(dim=-1, keepdim=True)
    scales = [0.1] + [1.0] * blocks
    layers = []
    for k, s in enumerate(scales):
        per_token = torch.full((batch, 9, 1), s * (rate ** max(k - 1, 0)), dtype=torch.float64)
        if outliers and k >= 1:
            per_token[:] = 0.9 ** (k - 1)
            per_token[:, 4] = rate ** (2 * (k - 1)) * 10
        jitter = 1 + 0.01 * torch.rand(batch, 1, 1, generator=generator, dtype=torch.float64)  # prompts differ a
        layers.append(direction * per_token * jitter)  # little: all-equal prompts give a zero-width interval
    return layers


def _s2_1_checks(layers) -> list[Check]:
    """S2.1's check and control (``growth_checks``) on a stream, measured as the claim measures them."""
    norms = mean_norm_by_layer(layers).numpy()
    ratios = token_norm_ratio(layers[1], layers[-1]).numpy()
    estimates = GrowthEstimates(bootstrap(norms, min_step_ratio, seed=0),
                                bootstrap(ratios, median_token_growth, seed=0))
    labels = ("embed", *(f"block {i}" for i in range(1, len(layers))))
    checks = {c.key: c for c in growth_checks(estimates, StreamContext(labels))}
    return [checks["S2.1/keeps-growing"], checks["S2.1/median-token-control"]]


def test_the_s2_1_check_fails_a_stream_that_stops_growing_and_the_control_fails_outlier_growth():
    """Growth at every step passes, at Table 1's rate or twice it (the rate is a reading, version 4); a stream
    that grows only in its embedding step (every block × 0.98: a stream that stops growing, with prompts that differ a
    little, since exactly equal prompts give a zero-width interval) fails the check, and one whose mean grows through
    one token per prompt fails the control."""
    assert [c.status for c in _s2_1_checks(_growing_stream(1.15))] == ["passed"] * 2
    assert [c.status for c in _s2_1_checks(_growing_stream(1.3))] == ["passed"] * 2  # versions 1-3 failed it
    assert [c.status for c in _s2_1_checks(_growing_stream(0.98))] == ["failed", "failed"]
    outliers = _s2_1_checks(_growing_stream(1.15, outliers=True))
    assert outliers[0].status == "passed" and outliers[1].status == "failed"
    assert RATE_LOW == pytest.approx(45 ** (1 / 32)) and RATE_HIGH == pytest.approx(180 ** (1 / 32))


def test_the_s2_1_rate_is_read_against_table_1_not_decided():
    from claims.s2_residual.stream_measures import rate_reading
    from latent_instruments.stats import Estimate

    assert rate_reading(Estimate(1.195, 1.183, 1.206, 0.95, 32)) == "faster than"
    assert rate_reading(Estimate(1.101, 1.097, 1.105, 0.95, 32)) == "slower than"
    assert rate_reading(Estimate(1.15, 1.14, 1.16, 0.95, 32)) == "within"
    assert rate_reading(Estimate(1.17, 1.16, 1.19, 0.95, 32)) == "overlapping"


def test_shape_and_value_errors():
    with pytest.raises(ValueError):
        consecutive_cosines([torch.zeros(1, 3, 2)])
    with pytest.raises(ValueError):
        mean_norm_by_layer([torch.zeros(1, 3, 2), torch.zeros(1, 4, 2)])
    with pytest.raises(ValueError):
        cross_token_cosine([torch.zeros(1, 2, 2)])  # one position left after the first
    with pytest.raises(NonFiniteError):
        mean_norm_by_layer([torch.tensor([[[0.0], [float("nan")]]])])


# --- analogies (S2.3) --------------------------------------------------------------------------------------

PAIRS = [("king", "queen"), ("man", "woman"), ("lord", "lady")]


def gendered_embedding(vocab: int = 50, d: int = 16, seed: int = 0) -> tuple[torch.Tensor, dict[str, int]]:
    """Random embeddings where word pairs differ by one shared 'gender' offset: analogies hold exactly."""
    e = randn(vocab, d, seed=seed)
    offset = randn(d, seed=seed + 1) * 0.5
    ids = {}
    for k, (x, y) in enumerate(PAIRS):
        ids[x], ids[y] = 2 * k, 2 * k + 1
        e[2 * k + 1] = e[2 * k] + offset
    return e, ids


def queries_of(pairs, ids) -> torch.Tensor:
    return torch.tensor([a.ids for a in crossed_analogies(pairs, ids)])


def test_crossed_analogies_both_directions_grouped_by_target_pair():
    analogies = crossed_analogies(PAIRS, {w: i for i, w in enumerate(w for p in PAIRS for w in p)})
    assert len(analogies) == 3 * 2 * 2
    assert str(analogies[0]) == "king − man + woman → queen"
    assert str(analogies[1]) == "queen − woman + man → king"
    assert [a.target_pair for a in analogies] == [0] * 4 + [1] * 4 + [2] * 4
    assert len(crossed_analogies(PAIRS, {"king": 0, "queen": 1, "man": 2})) == 0  # woman missing: one pair left
    with pytest.raises(ValueError):
        crossed_analogies([("he", "her"), ("his", "her")], {"he": 0, "his": 1, "her": 2})


def test_an_exact_offset_lands_at_rank_one_under_euclidean():
    e, ids = gendered_embedding()
    q = queries_of(PAIRS, ids)
    assert analogy_ranks(e, q, "euclidean").tolist() == [1] * len(q)


def test_cosine_lands_where_loud_vectors_mislead_euclidean():
    # S2's Fig 1 in numbers: directions hold the analogy, magnitudes differ by word
    d = 8
    e = torch.zeros(20, d, dtype=torch.float64)
    male, female, royal, common = torch.eye(d, dtype=torch.float64)[:4]
    e[0], e[1] = 1 * (male + royal), 9 * (female + royal)  # king quiet, queen loud
    e[2], e[3] = 1 * (male + common), 1 * (female + common)  # man, woman
    e[4:] = randn(16, d, seed=3) * 0.3 + 1.2 * (male + royal)  # distractors near the raw query
    q = torch.tensor([[0, 2, 3, 1]])  # king − man + woman → queen
    assert analogy_ranks(e, q, "cosine").item() == 1
    assert analogy_ranks(e, q, "euclidean").item() > 1


@given(seed=seeds, log_scales=st.lists(st.floats(min_value=-3, max_value=3), min_size=50, max_size=50))
@settings(max_examples=25, deadline=None)
def test_cosine_ranks_ignore_each_word_s_loudness(seed, log_scales):
    e, ids = randn(50, 16, seed=seed), {w: i for i, w in enumerate(w for pair in PAIRS for w in pair)}
    loud = e * torch.tensor(log_scales, dtype=torch.float64).exp()[:, None]
    q = queries_of(PAIRS, ids)
    assert analogy_ranks(loud, q, "cosine").tolist() == analogy_ranks(e, q, "cosine").tolist()


def test_query_words_are_no_candidates_and_ties_count_against():
    e = torch.zeros(10, 4)
    e[:, 0] = 1.0  # every token the same: nothing can land next to its target
    q = torch.tensor([[0, 1, 2, 3]])
    assert analogy_ranks(e, q, "cosine").item() == 10 - 3
    assert analogy_ranks(e, q, "euclidean").item() == 10 - 3
    e = randn(10, 4)
    e[3] = e[0] - e[1] + e[2]  # the target is the query itself; the query words are excluded
    e[4] = e[0]  # a duplicate of a query word is a candidate: it does not beat the exact target
    assert analogy_ranks(e, q, "euclidean").item() == 1


def test_analogy_errors():
    e = randn(10, 4)
    with pytest.raises(ValueError):
        analogy_ranks(e, torch.tensor([[0, 1, 2, 3]]), "manhattan")
    with pytest.raises(ValueError):
        analogy_ranks(e, torch.tensor([[0, 1, 2, 12]]), "cosine")
    with pytest.raises(ValueError):
        analogy_ranks(e, torch.tensor([[0, 1, 2, 2]]), "cosine")
    with pytest.raises(NonFiniteError):
        analogy_ranks(e * float("nan"), torch.tensor([[0, 1, 2, 3]]), "cosine")


class WordTokenizer:
    """One token per known word, else one per character (as a BPE with a few whole words)."""

    words = {"the": 0, " king": 1, " queen": 2}

    def encode(self, text: str) -> list[int]:
        out, rest = [], text
        while rest:
            hit = next((w for w in self.words if rest.startswith(w)), None)
            out.append(self.words[hit] if hit else 100 + ord(rest[0]))
            rest = rest[len(hit):] if hit else rest[1:]
        return out


def test_word_token_takes_the_running_text_form():
    tok = WordTokenizer()
    assert word_token(tok, "king") == 1
    assert word_token(tok, "man") is None
    assert word_token(CharTokenizer("abcdefghijklmnopqrstuvwxyz "), "king") is None
    assert word_token(CharTokenizer("abc"), "king") is None  # outside the alphabet
