"""Input checks of latent_instruments/ at their boundaries (issue 75): just outside raises, exactly at is accepted.

Each test feeds one check an input just past its accepted range (on each side, and at the exact value where the
comparison's strictness matters) and one exactly at the edge of it, so that a mutant that moves the boundary
(``!=`` to ``<``, ``<`` to ``<=``, a constant changed) fails here. Checks an existing test already pins at both
sides are left to it. The modules from normalization on: tests/test_instrument_inputs_2.py.
"""

import math

import numpy as np
import pytest
import torch
from torch import nn

from latent_instruments.ablation import norms_removed
from latent_instruments.analogies import analogy_ranks, crossed_analogies
from latent_instruments.attention import gaussian_log_odds, repeat_kv, simplex_deviation
from latent_instruments.clean_law import clean_law_scatter, periodograms_averaged
from latent_instruments.decoding import direct_fit_decode, pseudo_inverse
from latent_instruments.distances import hellinger_distance
from latent_instruments.geometry import (consecutive_cosines, cross_token_cosine, excess_over_baseline,
                                         fit_log_growth, growth_per_layer, mean_norm_by_layer,
                                         mismatched_consecutive_cosines)
from latent_instruments.inversion import InversionConfig, descend, invert
from latent_instruments.spectra import LogBins


def randn(*shape, seed=0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# --- ablation ------------------------------------------------------------------------------------------------------


def test_norms_removed_refuses_a_module_without_a_norm_and_removes_one_norm():
    """norms_removed: `if not found` raises for no norm; one LayerNorm is one removal."""
    with pytest.raises(ValueError, match="holds no LayerNorm or RMSNorm"):
        with norms_removed(nn.Linear(2, 2)):
            pass
    block = nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2))
    with norms_removed(block) as removed:
        assert removed == 1 and isinstance(block[1], nn.Identity)
    assert isinstance(block[1], nn.LayerNorm)


# --- analogies -----------------------------------------------------------------------------------------------------


def test_crossed_analogies_refuse_two_words_of_one_token():
    """crossed_analogies: distinct words sharing a token id raise; distinct ids give 2 (n - 1) per pair."""
    with pytest.raises(ValueError, match="share a word or a token"):
        crossed_analogies([("a", "b"), ("c", "d")], {"a": 0, "b": 1, "c": 2, "d": 0})
    assert len(crossed_analogies([("a", "b"), ("c", "d")], {"a": 0, "b": 1, "c": 2, "d": 3})) == 4


@pytest.mark.parametrize("queries", [torch.tensor([0, 1, 2, 3]), torch.zeros(1, 4, 4, dtype=torch.long),
                                     torch.tensor([[0, 1, 2]]), torch.tensor([[0, 1, 2, 3, 4]])])
def test_analogy_queries_must_be_n_by_4(queries):
    """analogy_ranks: `queries.ndim != 2 or queries.shape[1] != 4` (1-d, 3-d, 3 or 5 columns)."""
    with pytest.raises(ValueError, match=r"queries must be \(n, 4\)"):
        analogy_ranks(randn(6, 3), queries, "cosine")


@pytest.mark.parametrize("query", [[-1, 1, 2, 3], [0, 1, 2, 6], [6, 1, 2, 3]])
def test_analogy_ids_just_outside_the_vocabulary_are_refused(query):
    """analogy_ranks: `queries.min() < 0 or queries.max() >= vocab` at -1 and vocab."""
    with pytest.raises(ValueError, match="must index the 6-token embedding"):
        analogy_ranks(randn(6, 3), torch.tensor([query]), "cosine")


def test_analogy_ids_at_the_vocabularys_ends_and_no_queries_are_accepted():
    """analogy_ranks: ids 0 and vocab - 1 are valid; an empty (0, 4) batch skips the range check."""
    ranks = analogy_ranks(randn(6, 3), torch.tensor([[0, 1, 2, 5], [5, 1, 2, 0]]), "euclidean")
    assert ranks.shape == (2,) and ((ranks >= 1) & (ranks <= 3)).all()
    assert analogy_ranks(randn(6, 3), torch.zeros(0, 4, dtype=torch.long), "cosine").shape == (0,)


@pytest.mark.parametrize("word", [0, 1, 2])
def test_an_analogy_whose_target_is_any_query_word_is_refused(word):
    """analogy_ranks: `queries[:, 3:] == queries[:, :3]` compares the target with each of a, b and c."""
    query = [0, 1, 2, 3]
    query[3] = query[word]
    with pytest.raises(ValueError, match="target is one of its query words"):
        analogy_ranks(randn(6, 3), torch.tensor([query]), "cosine")


# --- attention -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 1, 3, 2), (1, 3, 3), (1, 1, 1, 3, 3)])
def test_simplex_deviation_refuses_more_queries_than_keys_or_another_rank(shape):
    """simplex_deviation: `pattern.dim() != 4 or seq_q > seq_k`, seq_q one past seq_k."""
    with pytest.raises(ValueError, match=r"seq_q <= seq_k"):
        simplex_deviation(torch.zeros(shape))


def test_simplex_deviation_accepts_as_many_queries_as_keys():
    """simplex_deviation: seq_q == seq_k is allowed (a strict `>`)."""
    pattern = torch.eye(3).expand(1, 1, 3, 3)
    deviation = simplex_deviation(pattern)
    assert deviation.row_sum.tolist() == [0.0] and deviation.future.tolist() == [0.0]


@pytest.mark.parametrize("variance", [0.0, -1e-9, -1.0, math.nan])
def test_gaussian_log_odds_refuse_a_variance_that_is_not_positive(variance):
    """gaussian_log_odds: `not variance > 0` (zero, just below it, NaN)."""
    with pytest.raises(ValueError, match="variance must be positive"):
        gaussian_log_odds(randn(1, 2, 3), randn(1, 2, 3), variance)


@pytest.mark.parametrize("k_shape", [(2, 2, 3), (1, 2, 4), (1, 2, 2)])
def test_gaussian_log_odds_refuse_other_leading_dimensions_or_width(k_shape):
    """gaussian_log_odds: `q.shape[:-2] != k.shape[:-2] or q.shape[-1] != k.shape[-1]`."""
    with pytest.raises(ValueError, match="must share leading dimensions and d"):
        gaussian_log_odds(randn(1, 2, 3), randn(*k_shape), 1.0)


def test_gaussian_log_odds_accept_a_tiny_variance_and_another_key_count():
    """gaussian_log_odds: a variance just above 0 and seq_k != seq_q are valid."""
    assert gaussian_log_odds(randn(1, 2, 3), randn(1, 5, 3), 1e-3).shape == (1, 2, 5)


@pytest.mark.parametrize("heads", [1, 3, 5])
def test_repeat_kv_refuses_a_head_count_that_is_no_multiple(heads):
    """repeat_kv: `heads % kv_heads` with 2 key-value heads."""
    with pytest.raises(ValueError, match="not a multiple of 2 key-value heads"):
        repeat_kv(torch.zeros(1, 2, 2, 3), heads)


@pytest.mark.parametrize("heads", [2, 4])
def test_repeat_kv_accepts_multiples(heads):
    """repeat_kv: heads = kv_heads and 2 kv_heads."""
    assert repeat_kv(torch.zeros(1, 2, 2, 3), heads).shape == (1, 2, heads, 3)


# --- clean_law -----------------------------------------------------------------------------------------------------


def test_periodograms_averaged_accepts_exactly_three_inner_frequencies():
    """periodograms_averaged: `x.shape[-1] < 3` (2 inner frequencies are tested in test_spectra)."""
    # inner 2, 3, 4: mean 3, population variance 2/3, so m = 9 / (2/3)
    assert periodograms_averaged(np.array([1.0, 2.0, 3.0, 4.0, 5.0])) == pytest.approx(13.5)


def test_clean_law_scatter_needs_at_least_one_periodogram():
    """clean_law_scatter: `averaged < 1` raises just below 1 and accepts exactly 1."""
    bins = LogBins.of(np.fft.rfftfreq(8))
    with pytest.raises(ValueError, match="at least 1 periodogram, got 0.999"):
        clean_law_scatter(bins, -1.0, 0.999, seed=0, draws=4)
    assert clean_law_scatter(bins, -1.0, 1.0, seed=0, draws=4).shape == (4,)


# --- decoding ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [4, 6])
def test_direct_fit_decode_refuses_a_start_that_is_not_over_the_vocabulary(width):
    """direct_fit_decode: `start.shape[-1] != pinv.vocab`, one below and one above."""
    pinv = pseudo_inverse(randn(5, 3))
    with pytest.raises(ValueError, match=r"start must be \(batch, seq, vocab = 5\)"):
        direct_fit_decode(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2, width), pinv, 10.0)


def test_direct_fit_decode_accepts_a_start_over_the_vocabulary():
    """direct_fit_decode: a start (batch, seq, vocab) decodes to (batch, seq) ids."""
    out = direct_fit_decode(torch.tensor([[0, 4]]), torch.zeros(1, 2, 5), pseudo_inverse(randn(5, 3)), 10.0)
    assert out.shape == (1, 2) and out.dtype == torch.long


# --- distances -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p, q", [([1.0, -1e-12], [0.5, 0.5]), ([0.5, 0.5], [1.5, -0.5]), ([0.5, 0.5], [1.0, -1e-12])])
def test_hellinger_refuses_a_probability_just_below_zero(p, q):
    """hellinger_distance: `(p < 0).any() or (q < 0).any()`, either distribution."""
    with pytest.raises(ValueError, match="probabilities must be non-negative"):
        hellinger_distance(torch.tensor(p), torch.tensor(q))


def test_hellinger_accepts_zero_probabilities():
    """hellinger_distance: 0 is a valid probability (strict `<`): disjoint supports are distance 1."""
    assert hellinger_distance(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])).item() == pytest.approx(1.0)


# --- geometry ------------------------------------------------------------------------------------------------------


def test_geometry_refuses_no_layers_and_layers_that_are_not_three_dimensional():
    """geometry._checked: `if not layers` and `len(shape) != 3`."""
    with pytest.raises(ValueError, match="no layers given"):
        mean_norm_by_layer([])
    for shape in [(3, 2), (1, 1, 3, 2)]:
        with pytest.raises(ValueError, match="of one shape"):
            mean_norm_by_layer([torch.ones(shape)], first_position=0)


@pytest.mark.parametrize("first_position", [-1, 3, 4])
def test_geometry_refuses_a_first_position_outside_the_sequence(first_position):
    """geometry._checked: `not 0 <= first_position < seq` at -1, seq and seq + 1."""
    with pytest.raises(ValueError, match=f"first_position {first_position} leaves no position of 3"):
        mean_norm_by_layer([torch.ones(1, 3, 2)], first_position)


@pytest.mark.parametrize("first_position", [0, 2])
def test_geometry_accepts_the_first_and_the_last_position(first_position):
    """geometry._checked: first_position 0 and seq - 1 leave positions."""
    norms = mean_norm_by_layer([torch.ones(1, 3, 2)], first_position)
    assert norms.shape == (1, 1) and norms.item() == pytest.approx(math.sqrt(2))


@pytest.mark.parametrize("cosines", [consecutive_cosines, mismatched_consecutive_cosines])
def test_consecutive_cosines_need_two_layers(cosines):
    """consecutive_cosines, mismatched_consecutive_cosines: `len(layers) < 2`; two layers give one column."""
    with pytest.raises(ValueError, match="at least two layers, got 1"):
        cosines([torch.ones(1, 3, 2)])
    assert cosines([torch.ones(1, 3, 2)] * 2).shape == (1, 1)


@pytest.mark.parametrize("cosines, message", [(cross_token_cosine, "cross-token cosine needs"),
                                              (mismatched_consecutive_cosines, "mismatched cosines need")])
def test_token_pair_cosines_need_two_positions(cosines, message):
    """cross_token_cosine, mismatched_consecutive_cosines: `n < 2` positions after first_position."""
    layers = [torch.ones(1, 4, 2)] * 2
    with pytest.raises(ValueError, match=message):
        cosines(layers, first_position=3)
    assert torch.allclose(cosines(layers, first_position=2), torch.ones(1, 1, dtype=torch.float64))  # one direction


@pytest.mark.parametrize("baseline", [1.0, 1.5])
def test_excess_needs_headroom_below_a_baseline_of_one(baseline):
    """excess_over_baseline: `(baseline >= 1).any()` at 1 and above."""
    with pytest.raises(ValueError, match="leaves no headroom"):
        excess_over_baseline(torch.tensor(0.5), torch.tensor([0.0, baseline]))


def test_excess_accepts_a_baseline_just_below_one():
    """excess_over_baseline: baselines below 1 (0.999 too) are valid; 0.75 over 0.5 reaches half the headroom."""
    excess = excess_over_baseline(torch.tensor([0.75, 0.999]), torch.tensor([0.5, 0.999]))
    assert excess.tolist() == pytest.approx([0.5, 0.0])


@pytest.mark.parametrize("norms, message", [([2.0], "at least two layers"), ([0.0, 1.0], "must be positive"),
                                            ([1.0, -1e-9], "must be positive")])
def test_growth_needs_two_positive_norms(norms, message):
    """growth_per_layer: `shape[-1] < 2` and `(mean_norms <= 0).any()`."""
    with pytest.raises(ValueError, match=message):
        growth_per_layer(torch.tensor(norms))


def test_growth_of_two_layers():
    """growth_per_layer: two layers are enough; a tiny positive norm is allowed."""
    assert growth_per_layer(torch.tensor([1.0, 2.0])).item() == pytest.approx(2.0)
    assert growth_per_layer(torch.tensor([1e-30, 1e-30])).item() == pytest.approx(1.0)


@pytest.mark.parametrize("norms, message", [([[1.0, 2.0]], r"need \(n_layers >= 2,\) norms"),
                                            ([2.0], r"need \(n_layers >= 2,\) norms"),
                                            ([0.0, 1.0], "must be positive"), ([1.0, -1.0], "must be positive")])
def test_fit_log_growth_needs_two_positive_norms_in_one_dimension(norms, message):
    """fit_log_growth: `ndim != 1 or numel() < 2` and `(mean_norms <= 0).any()`."""
    with pytest.raises(ValueError, match=message):
        fit_log_growth(torch.tensor(norms))


def test_fit_log_growth_of_two_layers():
    """fit_log_growth: two layers are a line through both points (r² = 1)."""
    fit = fit_log_growth(torch.tensor([1.0, 3.0]))
    assert fit.factor == pytest.approx(3.0) and fit.r_squared == pytest.approx(1.0)


# --- inversion -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("setting, message", [({"representation": "both"}, "representation must be one of"),
                                              ({"step": "adam"}, "step must be one of"),
                                              ({"steps": -1}, "steps must be at least 0, got -1")])
def test_an_inversion_config_refuses_unknown_settings_and_negative_steps(setting, message):
    """InversionConfig.__post_init__: `value not in allowed` and `steps < 0`."""
    with pytest.raises(ValueError, match=message):
        InversionConfig(**setting)


def test_an_inversion_config_accepts_zero_steps():
    """InversionConfig: steps = 0 is valid (a start with no descent)."""
    assert InversionConfig(steps=0).rate(0) == 1.0


def test_descend_refuses_a_start_of_another_shape_and_keeps_one_of_its_shape():
    """descend: `start.shape != shape`; a start of the input's shape is where 0 steps end."""
    target, config = randn(1, 2, 3), InversionConfig(steps=0)
    with pytest.raises(ValueError, match=r"start must have the input's shape \(1, 2, 3\), got \(1, 2, 4\)"):
        descend(lambda x: x, target, config, torch.Generator().manual_seed(0), start=torch.zeros(1, 2, 4))
    found, *_ = descend(lambda x: x, target, config, torch.Generator().manual_seed(0), start=torch.ones(1, 2, 3))
    assert torch.equal(found, torch.ones(1, 2, 3))


@pytest.mark.parametrize("ids", [torch.tensor([0, 1]), torch.tensor([[[0, 1]]])])
def test_invert_refuses_token_ids_that_are_not_batch_by_seq(ids):
    """invert: `token_ids.dim() != 2`."""
    with pytest.raises(ValueError, match=r"token_ids must be \(batch, seq\)"):
        invert(lambda x: x, ids, randn(5, 3), torch.Generator().manual_seed(0), InversionConfig(steps=0))


@pytest.mark.parametrize("k, allowed", [(6, None), (4, torch.tensor([True, True, True, False, False]))])
def test_invert_refuses_a_k_past_the_tokens_it_may_choose(k, allowed):
    """invert: `k > vocab` and `k > allowed.sum()`, one past each."""
    with pytest.raises(ValueError, match=f"k = {k} exceeds"):
        invert(lambda x: x, torch.tensor([[0, 1]]), randn(5, 3), torch.Generator().manual_seed(0),
               InversionConfig(steps=0), allowed=allowed, k=k)


@pytest.mark.parametrize("k, allowed", [(5, None), (3, torch.tensor([True, True, True, False, False]))])
def test_invert_accepts_a_k_of_every_token_it_may_choose(k, allowed):
    """invert: k = vocab, or k = the allowed count, is valid."""
    result = invert(lambda x: x, torch.tensor([[0, 1]]), randn(5, 3), torch.Generator().manual_seed(0),
                    InversionConfig(steps=0), allowed=allowed, k=k)
    assert result.top_k.shape == (1, 2, k)
