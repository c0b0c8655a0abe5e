"""Input checks of latent_instruments/ at their boundaries, normalization to token_subspaces (issue 75).

As tests/test_instrument_inputs.py: just outside the accepted range raises, exactly at its edge is accepted.
"""

import math

import numpy as np
import pytest
import torch
from torch import nn

from latent_instruments.normalization import rotate_to_cosine, with_concentrated_gain
from latent_instruments.probes import probe_correct
from latent_instruments.similar_strings import combine, similar_string_counts
from latent_instruments.spectra import LogBins, power_law_bend, power_spectral_density
from latent_instruments.stats import (bootstrap, confidence_level, current_confidence, proportion,
                                      proportion_difference)
from latent_instruments.strings import StringTable, SuffixMatcher, string_codes
from latent_instruments.token_subspaces import learn_token_embeddings


# --- normalization -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cosine", [-1.0 - 1e-9, 1.0 + 1e-9, math.nan])
def test_a_turn_just_outside_minus_one_to_one_is_refused(cosine):
    """rotate_to_cosine: `not -1.0 <= cosine <= 1.0` just past each end (test_known_answers has ±1.5)."""
    with pytest.raises(ValueError, match=r"cosine must be in \[-1, 1\]"):
        rotate_to_cosine(torch.ones(2, 4), cosine, torch.Generator().manual_seed(0))


def test_a_turn_to_a_cosine_of_one_keeps_the_vector():
    """rotate_to_cosine: cosine = 1 is valid (closed interval) and returns x itself."""
    x = torch.ones(2, 4, dtype=torch.float64)
    assert torch.allclose(rotate_to_cosine(x, 1.0, torch.Generator().manual_seed(0)), x)


@pytest.mark.parametrize("fraction", [0.0, -0.5, 1.0 + 1e-9, 2.0])
def test_a_concentrated_gain_needs_a_fraction_in_zero_to_one(fraction):
    """with_concentrated_gain: `not 0 < fraction <= 1` at 0, below it and just above 1."""
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\]"):
        with_concentrated_gain(nn.LayerNorm(8), fraction)


@pytest.mark.parametrize("fraction, kept", [(1.0, 8), (1 / 8, 1), (1e-6, 1)])
def test_a_concentrated_gain_keeps_the_fraction_at_the_same_rms(fraction, kept):
    """with_concentrated_gain: fraction 1 keeps every coordinate, a tiny one keeps one; the RMS stays 1."""
    weight = with_concentrated_gain(nn.LayerNorm(8), fraction).weight.detach()
    assert int((weight != 0).sum()) == kept and weight.square().mean().item() == pytest.approx(1.0)


def test_a_concentrated_gain_needs_a_gain():
    """with_concentrated_gain: `gain is None` raises for a LayerNorm without elementwise affine."""
    with pytest.raises(ValueError, match="has no gain to concentrate"):
        with_concentrated_gain(nn.LayerNorm(8, elementwise_affine=False))


# --- probes --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_probe_refuses_features_that_are_not_finite(bad):
    """probe_correct: `not np.isfinite(features).all()`."""
    features = np.zeros((10, 2))
    features[3, 1] = bad
    with pytest.raises(ValueError, match="probe features hold NaN or inf"):
        probe_correct(features, np.repeat([0, 1], 5), seed=0, folds=2)


def test_a_probe_on_finite_separable_features_is_right_everywhere():
    """probe_correct: finite features pass the check; two far-apart classes are all predicted."""
    labels = np.repeat([0, 1], 5)
    features = (labels * 10.0 + 0.1 * np.random.default_rng(0).normal(size=10))[:, None]
    assert probe_correct(features, labels, seed=0, folds=2).tolist() == [True] * 10


# --- similar_strings -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("q_shape, k_shape", [((3,), (4, 3)), ((2, 3), (4, 3, 1)), ((2, 3, 1), (4, 3))])
def test_similar_strings_refuse_queries_or_keys_of_another_rank(q_shape, k_shape):
    """similar_string_counts: `queries.dim() != 2 or keys.dim() != 2`."""
    with pytest.raises(ValueError, match="must share d"):
        similar_string_counts(torch.ones(q_shape), torch.ones(k_shape), torch.ones(4, 5), [0.5])


@pytest.mark.parametrize("thresholds", [[], [-1.0], [1.0], [0.5, 1.0], [-1.0 - 1e-6]])
def test_similar_strings_refuse_thresholds_at_or_past_plus_or_minus_one(thresholds):
    """similar_string_counts: `not thresholds or any(not -1 < t < 1)`, both ends open."""
    with pytest.raises(ValueError, match=r"thresholds must lie in \(-1, 1\)"):
        similar_string_counts(torch.ones(2, 3), torch.ones(4, 3), torch.ones(4, 5), thresholds)


def test_similar_strings_accept_thresholds_just_inside_plus_or_minus_one():
    """similar_string_counts: -0.99 and 0.99 are valid; identical directions count every string at both."""
    counts = similar_string_counts(torch.ones(2, 3), torch.ones(4, 3), torch.ones(4, 5), [-0.99, 0.99])
    assert counts.shape == (2, 2, 5) and (counts == 4).all()


@pytest.mark.parametrize("weights", [torch.ones(2), torch.ones(4), torch.ones(3, 1), torch.tensor([1.0, -1e-9, 1.0])])
def test_combine_refuses_weights_of_another_shape_or_below_zero(weights):
    """combine: `weights.shape != block_counts.shape[:1] or (weights < 0).any()`."""
    with pytest.raises(ValueError, match="need 3 non-negative weights"):
        combine(torch.ones(3, 2, 4), weights)


def test_combine_accepts_zero_weights():
    """combine: a weight of 0 is valid (strict `<`); the weighted block alone decides."""
    counts = torch.zeros(3, 1, 2, dtype=torch.float64)
    counts[1, 0, 1] = 5.0
    counts[0, 0, 0] = 7.0
    assert combine(counts, torch.tensor([0.0, 2.0, 0.0])).tolist() == [[0.0, 1.0]]


# --- spectra -------------------------------------------------------------------------------------------------------


def test_a_spectrum_refuses_four_dimensions_and_an_unknown_window():
    """power_spectral_density: `hidden.dim() != 3` above 3 (test_spectra has 2-d), `window not in (None, "hann")`."""
    with pytest.raises(ValueError, match=r"hidden must be \(batch, seq, d_model\)"):
        power_spectral_density(torch.zeros(1, 8, 2, 2))
    with pytest.raises(ValueError, match="unknown window 'hamming'"):
        power_spectral_density(torch.zeros(1, 8, 2), window="hamming")


@pytest.mark.parametrize("shape, drop_first", [((1, 4, 2), 1), ((1, 3, 2), 0), ((1, 8, 2), 5)])
def test_a_spectrum_needs_four_positions_after_the_dropped_ones(shape, drop_first):
    """power_spectral_density: `x.shape[1] < 4`, with 3 left."""
    with pytest.raises(ValueError, match=f"need at least 4 positions after dropping {drop_first}, got 3"):
        power_spectral_density(torch.zeros(shape), drop_first)


@pytest.mark.parametrize("shape, drop_first", [((1, 5, 2), 1), ((1, 4, 2), 0)])
def test_a_spectrum_of_exactly_four_positions(shape, drop_first):
    """power_spectral_density: 4 positions left is enough: 3 rfft frequencies."""
    freqs, psd = power_spectral_density(torch.ones(shape), drop_first)
    assert freqs.tolist() == [0.0, 0.25, 0.5] and psd.shape == (1, 3)


def test_log_bins_need_three_bins():
    """LogBins.of: `used.size < 3`; 5 positions give 2 bins, 6 give 3."""
    with pytest.raises(ValueError, match="give 2 log-spaced bins; need at least 3"):
        LogBins.of(np.fft.rfftfreq(5))
    assert LogBins.of(np.fft.rfftfreq(6)).centers.size == 3


def test_log_power_needs_positive_power_at_every_binned_frequency():
    """LogBins.log_power: `(psd[..., used] <= 0).any()` for a 0 at a binned frequency, not at DC (unused)."""
    bins = LogBins.of(np.fft.rfftfreq(8))
    psd = np.ones(5)
    psd[2] = 0.0
    with pytest.raises(ValueError, match="must be positive to take its logarithm"):
        bins.log_power(psd)
    psd[2], psd[0] = 1e-300, 0.0
    assert bins.log_power(psd).shape == (4,)


def test_a_bend_needs_four_bins():
    """power_law_bend: `centers.size < 4`; 7 positions give 3 bins, 8 give 4 (a flat spectrum: no bend)."""
    with pytest.raises(ValueError, match="a bend needs at least 4 log-spaced bins, got 3"):
        power_law_bend(LogBins.of(np.fft.rfftfreq(7)), np.ones(4))
    assert power_law_bend(LogBins.of(np.fft.rfftfreq(8)), np.ones(5)) == pytest.approx(0.0)


# --- stats ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0.0, 1.0, -0.1, 1.1])
def test_a_confidence_level_lies_strictly_between_zero_and_one(level):
    """confidence_level: `not 0 < level < 1` at both ends and past them."""
    with pytest.raises(ValueError, match=r"confidence level must lie in \(0, 1\)"):
        with confidence_level(level):
            pass


def test_a_confidence_level_inside_zero_and_one_is_used():
    """confidence_level: 0.5 is valid and current within the block."""
    with confidence_level(0.5):
        assert current_confidence() == 0.5
    assert current_confidence() == 0.95


@pytest.mark.parametrize("kwargs, message", [({"confidence": 1.0}, r"confidence must be a level in \(0, 1\)"),
                                             ({"n_resamples": 199}, "n_resamples must be an integer of at least 200"),
                                             ({"n_resamples": 200.0}, "n_resamples must be an integer")])
def test_bootstrap_refuses_a_level_of_one_and_too_few_resamples(kwargs, message):
    """bootstrap: `not 0 < confidence < 1` at 1 (0 and 95 are in test_stats), `n_resamples < MIN_RESAMPLES`."""
    with pytest.raises(ValueError, match=message):
        bootstrap(np.arange(4.0), np.mean, seed=0, **kwargs)


def test_bootstrap_refuses_one_unit_and_a_statistic_that_is_not_finite():
    """bootstrap: `units.shape[0] < 2` with one unit; `not np.isfinite(value)` for a NaN statistic."""
    with pytest.raises(ValueError, match="at least 2 units, got 1"):
        bootstrap(np.array([1.0]), np.mean, seed=0)
    with pytest.raises(ValueError, match="statistic is not finite"):
        bootstrap(np.arange(4.0), lambda u: math.nan, seed=0)


def test_bootstrap_of_two_units_with_the_fewest_resamples():
    """bootstrap: 2 units and exactly MIN_RESAMPLES (200) resamples are valid."""
    estimate = bootstrap(np.array([1.0, 3.0]), np.mean, seed=0, n_resamples=200)
    assert estimate.value == 2.0 and estimate.n == 2 and estimate.low <= 2.0 <= estimate.high


@pytest.mark.parametrize("units, message", [([], "needs at least 1 unit"), ([0.5], "must be 0/1"), ([2], "must be 0/1"),
                                            ([1, -1], "must be 0/1")])
def test_a_proportion_needs_some_units_of_zero_or_one(units, message):
    """proportion: `units.size == 0` and `not np.isin(units, (0, 1)).all()`."""
    with pytest.raises(ValueError, match=message):
        proportion(np.array(units))


def test_a_proportion_of_one_unit():
    """proportion: one unit is enough; booleans count as 0/1."""
    assert proportion(np.array([1])).value == 1.0 and proportion(np.array([True, False])).value == 0.5


@pytest.mark.parametrize("first, second", [([], [1]), ([1], []), ([], [])])
def test_a_difference_of_proportions_needs_two_non_empty_samples(first, second):
    """proportion_difference: `x.size == 0 or y.size == 0`."""
    with pytest.raises(ValueError, match="needs two non-empty samples"):
        proportion_difference(np.array(first), np.array(second), paired=False)


def test_an_unpaired_difference_of_proportions_of_unequal_samples():
    """proportion_difference: unequal lengths are valid when unpaired; one unit each is enough."""
    assert proportion_difference(np.ones(1), np.zeros(3), paired=False).value == 1.0


# --- strings -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("length, vocab", [(64, 2), (2, 2**32), (32, 4)])
def test_string_codes_refuse_strings_of_exactly_64_bits(length, vocab):
    """string_codes: `vocab ** length >= 2 ** 64` at exactly 2 ** 64."""
    with pytest.raises(ValueError, match="do not pack into 64 bits"):
        string_codes(np.zeros((1, length), dtype=np.int64), vocab)


def test_string_codes_pack_the_largest_string_below_64_bits():
    """string_codes: 63 binary tokens (2 ** 63 codes) fit; all ones is 2 ** 63 - 1."""
    assert string_codes(np.ones((1, 63), dtype=np.int64), 2).tolist() == [2**63 - 1]
    assert string_codes(np.array([[2**32 - 2, 2**32 - 2]]), 2**32 - 1).tolist() == [(2**32 - 1) ** 2 - 1]


@pytest.mark.parametrize("ids", [[[-1, 0]], [[0, 5]], [[5, 0]]])
def test_string_codes_refuse_ids_just_outside_the_vocabulary(ids):
    """string_codes: `windows.min() < 0 or windows.max() >= vocab` at -1 and vocab."""
    with pytest.raises(ValueError, match=r"token ids outside \[0, 5\)"):
        string_codes(np.array(ids), 5)


def test_string_codes_accept_ids_at_the_vocabularys_ends_and_no_strings():
    """string_codes: ids 0 and vocab - 1 are valid; no strings skip the range check."""
    assert string_codes(np.array([[0, 4], [4, 0]]), 5).tolist() == [4, 20]
    assert string_codes(np.zeros((0, 2), dtype=np.int64), 5).shape == (0,)


@pytest.mark.parametrize("make", [lambda ids: StringTable.of(ids, 3, 5), lambda ids: SuffixMatcher(ids, 3, 5)])
def test_a_text_must_be_longer_than_its_strings(make):
    """StringTable.of, SuffixMatcher: `ids.ndim != 1 or ids.size <= length`, at length and with 2-d ids."""
    for ids in (np.arange(3), np.arange(2), np.arange(8).reshape(2, 4)):
        with pytest.raises(ValueError, match="the text needs more than 3 tokens"):
            make(ids)


def test_a_text_one_token_longer_than_its_strings():
    """StringTable.of, SuffixMatcher: length + 1 tokens are enough: one string, followed by nothing."""
    table = StringTable.of(np.arange(4), 3, 5)
    assert len(table) == 2 and table.next_counts.sum().item() == 1.0
    assert SuffixMatcher(np.arange(4), 3, 5).predict(np.array([[0, 1, 2]]))[1].tolist() == [3]


# --- token_subspaces -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 2, 4), (2, 3, 3), (1, 2, 3), (4, 3)])
def test_learned_embeddings_refuse_a_start_of_another_shape(shape):
    """learn_token_embeddings: `start.shape != (n, restarts, d_model)`."""
    with pytest.raises(ValueError, match=r"start must be \(tokens, restarts, d_model\) = \(2, 2, 3\)"):
        learn_token_embeddings(nn.Linear(3, 5), torch.tensor([0, 1]), 3, 2, 0, 0.1, 0, start=torch.zeros(shape))


def test_learned_embeddings_continue_from_a_start_of_their_shape():
    """learn_token_embeddings: a (tokens, restarts, d_model) start is kept by 0 steps."""
    start = torch.arange(12.0).view(2, 2, 3)
    learned = learn_token_embeddings(nn.Linear(3, 5), torch.tensor([0, 1]), 3, 2, 0, 0.1, 0, start=start)
    assert torch.equal(learned.vectors, start) and learned.steps == 0
