"""The adapters' canonical activations, checked before any claim trusts them."""

import pytest
import torch
from transformers import GPTJConfig, GPTJForCausalLM

from models.adapters import UnsupportedArchitectureError, adapter_for
from models.capture import ablated_logits, block_output_fn, run_with_cache
from tests.conftest import tiny_model

IDS = torch.randint(0, 50, (3, 12), generator=torch.Generator().manual_seed(0))


def test_resid_post_is_resid_pre_plus_attn_out_plus_mlp_out(arch):
    model = tiny_model(arch)
    cache = run_with_cache(model, adapter_for(model), IDS)
    for i in range(cache.n_blocks):
        total = cache[f"blocks.{i}.hook_resid_pre"] + cache[f"blocks.{i}.hook_attn_out"] + cache[f"blocks.{i}.hook_mlp_out"]
        torch.testing.assert_close(cache[f"blocks.{i}.hook_resid_post"], total, atol=1e-5, rtol=0)


def test_stream_matches_hf_hidden_states_and_logits(arch):
    model = tiny_model(arch)
    cache = run_with_cache(model, adapter_for(model), IDS)
    with torch.no_grad():
        out = model(input_ids=IDS, output_hidden_states=True)
    for i in range(cache.n_blocks):
        torch.testing.assert_close(cache[f"blocks.{i}.hook_resid_pre"], out.hidden_states[i])
    torch.testing.assert_close(cache[f"blocks.{cache.n_blocks - 1}.hook_resid_post"], cache["ln_final.hook_in"])
    torch.testing.assert_close(cache.logits, out.logits)


def test_learned_positions_only_where_the_architecture_has_them(arch):
    model = tiny_model(arch)
    cache = run_with_cache(model, adapter_for(model), IDS)
    labels = [label for label, _ in cache.hidden_states()]
    assert ("embed+pos" in labels) == (arch in ("gpt2", "opt"))
    assert labels[-1] == f"block {cache.n_blocks}"


def test_dropping_the_last_mlp_leaves_the_unembedded_resid_mid(arch):
    model = tiny_model(arch)
    adapter = adapter_for(model)
    cache = run_with_cache(model, adapter, IDS)
    last = cache.n_blocks - 1
    with torch.no_grad():
        expected = model.get_output_embeddings()(model.get_submodule(adapter.final_norm)(cache[f"blocks.{last}.hook_resid_mid"]))
    torch.testing.assert_close(ablated_logits(model, adapter, IDS, last, "mlp"), expected, atol=1e-5, rtol=1e-4)


def test_block_output_fn_matches_the_captured_first_block(arch):
    model = tiny_model(arch)
    adapter = adapter_for(model)
    cache = run_with_cache(model, adapter, IDS)
    embeddings = model.get_input_embeddings()(IDS)
    with torch.no_grad():
        torch.testing.assert_close(block_output_fn(model, adapter, 0, IDS.shape[1])(embeddings), cache["blocks.0.hook_resid_post"])


def test_unknown_architecture_fails_loudly_with_its_name():
    model = GPTJForCausalLM(GPTJConfig(n_embd=32, n_layer=1, n_head=2, vocab_size=50, n_positions=32, rotary_dim=8))
    with pytest.raises(UnsupportedArchitectureError, match="'gptj'.*supported: gpt2, gpt_neox, llama, opt"):
        adapter_for(model)


def test_nan_activations_are_an_error():
    model = tiny_model("gpt2")
    with torch.no_grad():
        model.transformer.h[0].mlp.c_fc.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        run_with_cache(model, adapter_for(model), IDS)


def test_attention_pattern_on_request_is_a_causal_simplex(arch):
    model = tiny_model(arch)
    adapter = adapter_for(model)
    assert "blocks.0.attn.hook_pattern" not in run_with_cache(model, adapter, IDS)
    pattern = run_with_cache(model, adapter, IDS, names=["blocks.*.attn.hook_pattern"])["blocks.1.attn.hook_pattern"]
    assert pattern.shape == (3, 2, 12, 12)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(3, 2, 12))
    assert (pattern.triu(diagonal=1) == 0).all()


def test_capture_holds_exactly_the_declared_names(arch):
    model = tiny_model(arch)
    cache = run_with_cache(model, adapter_for(model), IDS, names=["blocks.*.hook_mlp_out", "hook_embed"])
    assert set(cache.activations) == {"hook_embed", "blocks.0.hook_mlp_out", "blocks.1.hook_mlp_out"}
    assert cache.logits is None and "logits" not in cache
    with pytest.raises(KeyError, match="needs"):
        cache["blocks.0.hook_resid_post"]


def test_micro_batches_and_offload_give_the_whole_batch_capture(arch):
    model = tiny_model(arch)
    whole = run_with_cache(model, adapter_for(model), IDS)
    split = run_with_cache(model, adapter_for(model), IDS, micro_batch=2, offload=True)
    assert set(split.activations) == set(whole.activations)
    for name, tensor in whole.activations.items():
        assert split[name].device.type == "cpu"
        torch.testing.assert_close(split[name], tensor, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(split.logits, whole.logits, atol=1e-5, rtol=1e-5)


def test_out_of_memory_halves_the_micro_batch(monkeypatch):
    model = tiny_model("gpt2")
    forward, sizes = model.forward, []

    def short_of_memory(*args, **kwargs):
        sizes.append(kwargs["input_ids"].shape[0])
        if kwargs["input_ids"].shape[0] > 1:
            raise torch.OutOfMemoryError("simulated")
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", short_of_memory)
    cache = run_with_cache(model, adapter_for(model), IDS, names=["logits"])
    assert sizes == [3, 2, 1, 1, 1] and cache.logits.shape == (3, 12, 50)


def test_per_head_queries_and_keys_give_the_attention_pattern(arch):
    """q/k/v per head, (batch, seq, heads, d_head); without rotary, softmax(q·k/√d) is the captured pattern."""
    model = tiny_model(arch)
    cache = run_with_cache(model, adapter_for(model), IDS, names=["blocks.0.attn.*"])
    q, k, v = (cache[f"blocks.0.attn.hook_{x}"] for x in "qkv")
    assert q.shape == k.shape == v.shape == (3, 12, 2, 16)
    if arch in ("gpt2", "opt"):  # rotary models rotate q and k after the projection
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / 16**0.5
        scores = scores.masked_fill(torch.ones(12, 12, dtype=torch.bool).triu(1), float("-inf"))
        torch.testing.assert_close(scores.softmax(-1), cache["blocks.0.attn.hook_pattern"], atol=1e-5, rtol=1e-4)


def test_a_need_that_names_nothing_is_refused():
    from models.capture import check_patterns

    check_patterns(["blocks.*.hook_resid_post", "logits", "blocks.{i}.attn.hook_pattern"])
    with pytest.raises(ValueError, match="blocks.*.hook_resid'"):
        check_patterns(["blocks.*.hook_resid"])


def test_a_model_whose_adapter_does_not_fit_is_caught_before_any_claim(tmp_path):
    """The pool checks resid_post = resid_pre + attn_out + mlp_out on the model's own prompts at load."""
    import dataclasses

    from fixtures.settings import Settings
    from fixtures.zoo import ModelPool, UntrustedModelError, residual_identity_error
    from models.corpus import Corpus
    from models.zoo import LoadedModel, ZooEntry

    model = tiny_model("gpt2")
    right = LoadedModel(ZooEntry("m", "hf"), model, adapter_for(model), None, "folder")
    wrong = dataclasses.replace(right, adapter=dataclasses.replace(right.adapter, attn="ln_1"))  # not attn_out
    assert residual_identity_error(right, IDS) < 1e-6
    assert residual_identity_error(wrong, IDS) > 0.01
    pool = ModelPool(Settings("tiny", (), "cpu", torch.float32, 0, None, tmp_path, None), Corpus("toy", "x", "0" * 64))
    pool._prompt_batch = lambda subject: IDS
    with pytest.raises(UntrustedModelError, match=r"m: resid_post differs .* the 'gpt2' adapter .* does not fit"):
        pool._check_identity("m", wrong)
    assert pool.identity["m"]["passed"] is False
