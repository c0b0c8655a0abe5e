"""Known answers on constructed inputs for the measurements that feed the claims (issue 75): each test builds an input
whose answer is known in closed form and checks the instrument or measure returns it, so that a changed operator,
comparison, sign or constant in latent_instruments/ or claims/*/*_measures.py fails a fast self-test (the mutation
sample of `make mutation`, docs/reproducibility.md)."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from latent_instruments.spectra import LogBins, PowerLawFit, largest_excess

# ------------------------------------------------------------------------------------------------ spectra


def _pink(n: int = 256) -> tuple[LogBins, np.ndarray, PowerLawFit]:
    """An rfft grid of ``n`` positions, psd = 1/f exactly (1 at f = 0), and its exact law (slope -1, intercept 0)."""
    bins = LogBins.of(torch.fft.rfftfreq(n, dtype=torch.float64))
    psd = np.where(bins.freqs > 0, 1 / np.where(bins.freqs > 0, bins.freqs, 1.0), 1.0)
    zero = np.zeros(())
    return bins, psd, PowerLawFit(np.array(-1.0), zero, zero, zero)


def test_the_spike_search_in_a_band_finds_the_band_s_own_spike():
    """Issue 75's survivor (spectra.py, ``freqs > 0`` → ``freqs <= 0`` in the band path): a spike of 1 decade in the
    low band and one of 2 decades in the high band; searched in the low band, the low one is found, at its own
    frequency and size; searched everywhere, the high one."""
    bins, psd, law = _pink()
    low, high = np.flatnonzero(bins.low)[2], np.flatnonzero(bins.high)[5]
    psd[low] *= 10.0
    psd[high] *= 100.0
    size, where = largest_excess(bins, psd, law, band=bins.low)
    assert float(size) == pytest.approx(1.0, abs=1e-12) and float(where) == bins.freqs[low]
    size, where = largest_excess(bins, psd, law)
    assert float(size) == pytest.approx(2.0, abs=1e-12) and float(where) == bins.freqs[high]
    band = bins.low.copy()
    band[0] = True  # the DC bin is never searched, even where a band names it
    assert float(largest_excess(bins, psd, law, band=band)[1]) == bins.freqs[low]


def test_the_spike_search_over_several_spectra_answers_each():
    bins, psd, law = _pink()
    two = np.stack([psd, psd])
    two[1, np.flatnonzero(bins.low)[1]] *= 1000.0
    law2 = PowerLawFit(np.array([-1.0, -1.0]), np.zeros(2), np.zeros(2), np.zeros(2))
    size, where = largest_excess(bins, two, law2, band=bins.low)
    assert size == pytest.approx([0.0, 3.0], abs=1e-12) and where[1] == bins.freqs[np.flatnonzero(bins.low)[1]]


# ------------------------------------------------------------------------------------------------ S3.14


class _Claim:
    """A claim recorder with the run's bootstrap (seed 0) that refuses to record or skip: the known answer is a
    measurement, not a verdict."""

    def bootstrap(self, units, statistic, **options):
        from latent_instruments.stats import bootstrap

        return bootstrap(units, statistic, seed=0, **options)

    def record(self, *args, **kwargs):
        raise AssertionError("the constructed runs have a gap: nothing is recorded before the share")

    def not_informative(self, *args, **kwargs):
        raise AssertionError("the constructed subject has enough blocks")


def _inversions(accuracy: dict, prompts: int = 24):
    """S3's inversion runner on constructed accuracies: target (0, 2 or (0, 1, 2)) → its token accuracy on every prompt
    and setting, the same per-prompt wobble for each (so differences between targets are exact)."""
    from claims.s3_inversion.scale import Scale

    wobble = 0.05 * np.sin(np.arange(prompts))

    def runs_of(model_name, subject, pairs, continued=False):  # a continued descent: on the reported prompts
        on = wobble[prompts // 3:] if continued else wobble
        return [SimpleNamespace(accuracy=accuracy[target] + on, steps=10) for target, _ in pairs]

    return SimpleNamespace(scale=Scale.of(False), runs_of=runs_of)


def test_s3_14_compares_block_1_with_block_3_and_the_concatenation_with_both():
    """Issue 75's survivor (layers_measures.py, ``last = 1`` → ``2``): block 1 recovers 0.8 of the tokens, block 3
    0.4, blocks 1-3 together 0.7. Block 1's advantage is over block 3 (0.4, not 0.1 over the concatenation), and
    the concatenation recovers three quarters of it (decisively past half: the descents are continued)."""
    from claims.s3_inversion.convergence import settled
    from claims.s3_inversion.layers_checks import LAYERS, layers_checks
    from claims.s3_inversion.layers_measures import continue_layers, measure_layers
    from reports.checks import FAILED, PASSED

    accuracy = {0: 0.8, LAYERS - 1: 0.4, tuple(range(LAYERS)): 0.7}
    subject = SimpleNamespace(model=None, adapter=SimpleNamespace(block_list=lambda model: [None] * 4))
    inversions, claim = _inversions(accuracy), _Claim()
    estimates, context, shown = measure_layers("tiny-x", subject, inversions, claim)
    assert estimates.advantage.value == pytest.approx(0.4, abs=1e-12)
    assert [e.value for e in shown.per] == pytest.approx([0.8, 0.4, 0.7], abs=0.05)
    assert shown.per[0].value - shown.per[1].value == pytest.approx(0.4, abs=1e-12)
    assert estimates.share.value == pytest.approx(0.75, abs=1e-12)
    estimates = settled(estimates, lambda e: layers_checks(e, context)[0],  # as the claim test continues it
                        lambda e: continue_layers(e, shown, "tiny-x", subject, inversions, claim), when=(FAILED, PASSED))
    assert estimates.longer is not None and estimates.longer.value == pytest.approx(0.75, abs=1e-12)


# ------------------------------------------------------------------------------------------------ make mutation's first
# sample (seed 0): a survivor each, killed by its known answer


def test_a_periodograms_ordinates_are_chi_squared_two_but_an_even_lengths_nyquist_is_chi_squared_one():
    from latent_instruments.clean_law import ordinate_shapes

    assert ordinate_shapes(8, 3.0).tolist() == [3.0, 3.0, 3.0, 3.0, 1.5]  # 5 ordinates, the last real
    assert ordinate_shapes(7, 3.0).tolist() == [3.0] * 4  # an odd length has no Nyquist ordinate


def test_an_analogy_query_is_four_ids_and_no_other_number():
    from latent_instruments.analogies import analogy_ranks

    embedding = torch.eye(8)
    for width in (3, 5):
        with pytest.raises(ValueError, match=r"\(n, 4\)"):
            analogy_ranks(embedding, torch.tensor([list(range(width))]), "cosine")


def test_the_head_output_bound_counts_the_keys_summed_not_the_batch():
    """Higham's γ_n for a sum over n = seq_k keys: a uniform pattern over 5 keys of |v| = 1, batch 3."""
    from latent_instruments.attention import opmath_eps, output_error_bound

    pattern = torch.full((3, 1, 2, 5), 0.2)
    bound = output_error_bound(pattern, torch.ones(3, 5, 1, 4), torch.float32)
    eps = torch.finfo(torch.float32)
    expected = (eps.eps / 2 + 5 * opmath_eps(torch.float32)) * 1.0 + eps.smallest_normal
    assert bound.shape == (3, 2, 1, 4) and torch.allclose(bound, torch.full_like(bound, expected), rtol=1e-6, atol=0)


def test_a_turn_to_a_cosine_outside_minus_one_to_one_is_refused():
    from latent_instruments.normalization import rotate_to_cosine

    for cosine in (-1.5, 1.5):
        with pytest.raises(ValueError, match=r"\[-1, 1\]"):
            rotate_to_cosine(torch.ones(2, 4), cosine, torch.Generator().manual_seed(0))
    assert rotate_to_cosine(torch.ones(2, 4), -1.0, torch.Generator().manual_seed(0)).tolist() == [[-1.0] * 4] * 2


def test_a_growth_fit_is_a_value_that_cannot_be_changed_after_it_is_made():
    import dataclasses

    from latent_instruments.geometry import fit_log_growth

    fit = fit_log_growth(torch.tensor([1.0, 2.0, 4.0, 8.0]))
    assert fit.factor == pytest.approx(2.0) and fit.r_squared == pytest.approx(1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.factor = 3.0


def test_every_instrument_result_is_a_frozen_value():
    """What an instrument returns is a value: none of latent_instruments/'s dataclasses can be changed once made
    (a result shared by two checks, or cached, stays what was measured)."""
    import dataclasses

    from latent_instruments.analogies import Analogy
    from latent_instruments.attention import ScoreForm, SimplexDeviation
    from latent_instruments.attention_fit import PatternFit
    from latent_instruments.decoding import PseudoInverse
    from latent_instruments.geometry import LogLinearFit
    from latent_instruments.inversion import Inversion, InversionConfig
    from latent_instruments.similar_strings import Following
    from latent_instruments.spectra import LogBins, PowerLawFit
    from latent_instruments.stats import Estimate
    from latent_instruments.strings import StringTable
    from latent_instruments.token_subspaces import LearnedEmbeddings

    kinds = (Analogy, ScoreForm, SimplexDeviation, PatternFit, PseudoInverse, LogLinearFit, Inversion, InversionConfig,
             Following, LogBins, PowerLawFit, Estimate, StringTable, LearnedEmbeddings)
    assert [k.__name__ for k in kinds if not k.__dataclass_params__.frozen] == []
    assert all(dataclasses.is_dataclass(k) for k in kinds)


def test_a_suffix_that_never_occurs_backs_off_to_uniform():
    """SuffixMatcher.predict: token 3 never occurs in the text, so neither the 2-token nor the 1-token suffix of
    [3, 3] matches (its code sorts after every indexed one): the uniform distribution, suffix length 0."""
    from latent_instruments.strings import SuffixMatcher

    matcher = SuffixMatcher(np.array([0, 1, 0, 1, 0, 2]), 2, 4)
    probs, used = matcher.predict(np.array([[3, 3], [0, 1]]))
    assert used.tolist() == [0, 2]
    assert probs[0].tolist() == [0.25] * 4 and probs[1].tolist() == [1.0, 0.0, 0.0, 0.0]  # (0, 1) is followed by 0


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_tokens_first_direction_points_the_way_most_of_its_vectors_do(sign):
    """first_directions (S4: the sign set so that most vectors point its way): two short vectors along +e1 and one
    long one along −e1 give +e1, counted by vectors, not by length; and the same negated give −e1."""
    from latent_instruments.token_subspaces import first_directions

    vectors = sign * torch.tensor([[[-5.0, 0.0], [1.0, 0.0], [1.0, 0.0]]])  # (1 token, 3 vectors, d_model 2)
    assert first_directions(vectors)[0].tolist() == pytest.approx([sign, 0.0], abs=1e-6)


def test_learning_token_vectors_stops_once_the_nll_is_below_s4s_target():
    """learn_token_embeddings stops at S4's NLL of 1e-4, long before its step budget, on a readout that separates
    the tokens easily (a scaled identity)."""
    from latent_instruments.token_subspaces import learn_token_embeddings

    learned = learn_token_embeddings(lambda x: 50.0 * x, torch.arange(3), 3, 2, 500, 0.5, 0)
    assert learned.steps < 500 and float(learned.probability.min()) > 0.999


@pytest.mark.parametrize("probs, tokens", [([0.6, 0.35, 0.05], [0, 1]), ([0.05, 0.5, 0.3, 0.15], [1, 2, 3]),
                                           ([0.95, 0.03, 0.02], [0])])
def test_the_tokens_carrying_90_percent_of_the_mass_are_the_fewest_most_probable_that_reach_it(probs, tokens):
    """mass_tokens (S4.10: n = V − #(cumsum > mass) + 1): 0.6 alone falls short of 0.9, 0.6 + 0.35 reaches it (one
    cumulative sum at or under the mass, so two tokens); 0.5 + 0.3 falls short, + 0.15 reaches it; 0.95 alone does."""
    from latent_instruments.similar_strings import mass_tokens

    assert [t.tolist() for t in mass_tokens(torch.tensor([probs], dtype=torch.float64), 0.9)] == [tokens]


# ------------------------------------------------------------------------------------------------ S3.1, S3.9's layers


def test_s3_1s_round_trip_counts_a_token_whose_row_another_outscores_as_lost():
    """measure_round_trip: W_E's rows e1, 2·e1, e2 (vocab 3 > d_model 2): W_E·W_E⁺ sends token 0's embedding to
    coordinates (1/5, 2/5, 0), so it comes back as token 1; one of the prompt's three tokens is lost."""
    from claims.s3_inversion.round_trip_measures import measure_round_trip
    from latent_instruments.decoding import pseudo_inverse

    weight = torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    problem = SimpleNamespace(weight=weight, ids=torch.tensor([[0, 1, 2]]), pinv=pseudo_inverse(weight))
    estimates, shown = measure_round_trip(problem, SimpleNamespace(seed=0))
    assert estimates.recovered.value == pytest.approx(2 / 3) and shown.top[0, :, 0].tolist() == [1, 1, 2]


def test_s3_9s_cpu_layers_keep_s3s_ratio_of_widths_and_its_32_heads_of_width_over_32():
    """S3.9's untrained single layers: the CPU's widths stand in S3's ratio (8192 / 4096), each layer has S3's 32
    heads, each of width / 32 (the head size times the heads is the width)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from claims.s3_inversion.between_tokens_measures import CPU_WIDTHS, HEADS, SOURCE_WIDTHS, _single_layer
    from models.loading import LoadedModel

    assert CPU_WIDTHS[1] / CPU_WIDTHS[0] == SOURCE_WIDTHS[1] / SOURCE_WIDTHS[0] and HEADS == 32
    tiny = LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                        num_attention_heads=4, vocab_size=50))
    layer = _single_layer(LoadedModel(None, tiny, None, None, ""), 128, 50, 0, torch.device("cpu"))
    attention = layer.model.model.layers[0].self_attn
    assert layer.model.config.head_dim == 4 and attention.q_proj.weight.shape == (128, 128)
