"""The adapters' canonical activations, checked before any claim trusts them."""

import pytest
import torch
from transformers import (AutoModelForCausalLM, BloomConfig, GPTBigCodeConfig, GPTBigCodeForCausalLM,
                          MambaConfig, MambaForCausalLM)
from transformers.models.bloom.modeling_bloom import build_alibi_tensor

from models.adapters import UnsupportedArchitectureError, adapter_for
from models.capture import run_with_cache
from models.forwards import ablated_logits, block_output_fn, logits_from_block_input_fn
from tests.conftest import TINY_CONFIGS, tiny_model

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
    if cap := getattr(model.config, "final_logit_softcapping", None):  # Gemma 2 soft-caps its logits after the head
        expected = torch.tanh(expected / cap) * cap
    torch.testing.assert_close(ablated_logits(model, adapter, IDS, last, "mlp"), expected, atol=1e-5, rtol=1e-4)


def test_block_output_fn_matches_the_captured_first_block(arch):
    model = tiny_model(arch)
    adapter = adapter_for(model)
    cache = run_with_cache(model, adapter, IDS)
    embeddings = model.get_input_embeddings()(IDS)
    with torch.no_grad():
        torch.testing.assert_close(block_output_fn(model, adapter, 0, IDS.shape[1])(embeddings), cache["blocks.0.hook_resid_post"])


def test_logits_from_a_block_input_replay_the_earlier_blocks_and_equal_a_whole_pass(arch):
    """S4.10's readout: after the first call with N vectors, the blocks before run no more, and the logits and their
    gradient equal those of a readout that ran every block (a new one); N vectors of another count run them again."""
    model = tiny_model(arch).requires_grad_(False)
    adapter = adapter_for(model)
    first = adapter.block_list(model)[0]
    ran = []
    first.get_submodule(adapter.mlp).register_forward_hook(lambda *_: ran.append(1))
    d_model = model.get_input_embeddings().weight.shape[1]
    generator = torch.Generator().manual_seed(1)
    readout, seen = logits_from_block_input_fn(model, adapter, 1), set()
    for n in (5, 5, 3, 5):
        vectors = torch.randn(n, d_model, generator=generator).requires_grad_(True)
        before = len(ran)
        logits = readout(vectors)
        assert len(ran) - before == (n not in seen)  # the first block ran only at the first call with n vectors
        seen.add(n)
        (grad,) = torch.autograd.grad(logits.square().sum(), vectors)
        fresh = vectors.detach().clone().requires_grad_(True)
        expected = logits_from_block_input_fn(model, adapter, 1)(fresh)
        (expected_grad,) = torch.autograd.grad(expected.square().sum(), fresh)
        torch.testing.assert_close(logits, expected, atol=0, rtol=0)
        torch.testing.assert_close(grad, expected_grad, atol=0, rtol=0)
        assert "forward" not in first.__dict__  # the block's own forward is back


def test_unknown_architecture_fails_loudly_with_its_name():
    model = GPTBigCodeForCausalLM(GPTBigCodeConfig(n_embd=32, n_layer=1, n_head=2, vocab_size=50, n_positions=32))
    supported = "bloom, falcon, gemma, gemma2, gpt2, gpt_neox, gptj, llama, masked_mixer, mistral, opt, phi3, qwen2"
    with pytest.raises(UnsupportedArchitectureError, match=f"'gpt_bigcode'.*supported: {supported}. Add an Adapter"):
        adapter_for(model)


def test_a_model_without_attention_blocks_is_refused_with_the_reason():
    """Mamba mixes tokens by a state-space recurrence: no attn_out, mlp_out or pattern exists to capture."""
    model = MambaForCausalLM(MambaConfig(hidden_size=32, num_hidden_layers=2, vocab_size=50, state_size=4))
    with pytest.raises(UnsupportedArchitectureError) as refused:
        adapter_for(model)
    message = str(refused.value)
    assert "'mamba'" in message and "attention sublayer and an FFN sublayer" in message
    assert "state-space / recurrent" in message and "no adapter can apply" in message
    assert "Add an Adapter" not in message  # unlike an architecture that merely lacks one


def test_a_module_the_configuration_bypasses_fails_the_capture_loudly():
    """BLOOM-176B's tensor-parallel emulation (slow_but_exact) never calls the dense layers the adapter names."""
    torch.manual_seed(0)
    config = BloomConfig(hidden_size=32, n_layer=2, n_head=2, vocab_size=50, pretraining_tp=2, slow_but_exact=True)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    with pytest.raises(RuntimeError, match="'bloom' adapter names for blocks.0.hook_attn_out.* did not run"):
        run_with_cache(model, adapter_for(model), IDS)


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
    assert q.shape == (3, 12, 2, 16)
    kv_heads = 1 if arch == "falcon" else 2  # the tiny Falcon is multi-query (as Falcon-7B): one key/value head
    assert k.shape == v.shape == (3, 12, kv_heads, 16)
    if arch in ("gpt2", "opt", "bloom"):  # the others are rotary: they rotate q and k after the projection
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / 16**0.5
        if arch == "bloom":  # ALiBi adds slope_h · key position to head h's scores
            scores = scores + build_alibi_tensor(torch.ones(3, 12), 2, torch.float32).view(3, 2, 1, 12)
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
    from fixtures.pool import ModelPool, UntrustedModelError, residual_identity_error
    from models.corpus import Corpus
    from models.loading import LoadedModel
    from models.zoo import ZooEntry

    model = tiny_model("gpt2")
    right = LoadedModel(ZooEntry("m", "hf"), model, adapter_for(model), None, "folder")
    wrong = dataclasses.replace(right, adapter=dataclasses.replace(right.adapter, attn="ln_1"))  # not attn_out
    assert residual_identity_error(right, IDS) < 1e-6
    assert residual_identity_error(wrong, IDS) > 0.01
    pool = ModelPool(Settings("tiny", (), "cpu", torch.float32, 0, None, tmp_path, None), Corpus("toy", "x", "0" * 64))
    with pytest.raises(UntrustedModelError, match=r"m: resid_post differs .* the 'gpt2' adapter .* does not fit"):
        pool._check_identity("m", wrong, IDS)
    assert pool.identity["m"]["passed"] is False


def test_the_bare_forward_timed_against_the_capture_computes_the_logits_only_where_the_capture_does(tmp_path):
    """``forward_seconds`` is the capture's pass without its hooks: a bare pass that computed every position's
    logits (GPT-2's 50,257 per token) where the capture skips them would time the head, not the capturing."""
    from fixtures.pool import ModelPool
    from fixtures.settings import Settings
    from models.capture import LOGITS, forward_kwargs
    from models.corpus import Corpus
    from models.loading import LoadedModel
    from models.zoo import ZooEntry

    model = tiny_model("gpt2")
    assert forward_kwargs(model, {"blocks.0.hook_resid_post"}) == {"logits_to_keep": 1}
    assert forward_kwargs(model, {"blocks.0.hook_resid_post", LOGITS}) == {}
    assert forward_kwargs(model, {"blocks.0.attn.hook_pattern", LOGITS}) == {"output_attentions": True}
    seen = []
    model.register_forward_pre_hook(lambda _m, _a, kwargs: seen.append(kwargs.get("logits_to_keep", 0)),
                                    with_kwargs=True)
    subject = LoadedModel(ZooEntry("m", "hf"), model, adapter_for(model), None, "folder")
    pool = ModelPool(Settings("tiny", (), "cpu", torch.float32, 0, None, tmp_path, None), Corpus("toy", "x", "0" * 64))
    pool._bare_forward_seconds(subject, IDS, ["blocks.*.hook_resid_post"])
    pool._bare_forward_seconds(subject, IDS, ["blocks.*.hook_resid_post", LOGITS])
    assert seen == [1, 1, 0, 0]  # warm-up and timed pass: the last position's logits, then every position's


FALCON_LAYOUTS = {  # Falcon's three fused query_key_value layouts
    "multi-query (Falcon-7B)": dict(new_decoder_architecture=False, multi_query=True, num_attention_heads=2),
    "multi-head": dict(new_decoder_architecture=False, multi_query=False, num_attention_heads=2),
    "grouped (Falcon-40B)": dict(new_decoder_architecture=True, num_attention_heads=4, num_kv_heads=2),
}


@pytest.mark.parametrize("layout", FALCON_LAYOUTS)
def test_falcon_queries_keys_and_values_are_the_models_own_split(layout):
    """Every fused Falcon layout: the captured q/k/v are what FalconAttention._split_heads makes of the projection."""
    torch.manual_seed(0)
    config = TINY_CONFIGS["falcon"]()
    for key, value in FALCON_LAYOUTS[layout].items():
        setattr(config, key, value)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    attention, own = model.transformer.h[0].self_attention, {}
    handle = attention.query_key_value.register_forward_hook(lambda _m, _a, out: own.update(qkv=attention._split_heads(out)))
    try:
        cache = run_with_cache(model, adapter_for(model), IDS)
        captured = run_with_cache(model, adapter_for(model), IDS, names=["blocks.0.attn.hook_*"])
    finally:
        handle.remove()
    heads, d_head = config.num_attention_heads, 32 // config.num_attention_heads
    kv_heads = {"multi-query (Falcon-7B)": 1, "multi-head": heads, "grouped (Falcon-40B)": 2}[layout]
    q, k, v = (captured[f"blocks.0.attn.hook_{x}"] for x in "qkv")
    assert q.shape == (3, 12, heads, d_head) and k.shape == v.shape == (3, 12, kv_heads, d_head)
    expected_q, expected_k, expected_v = own["qkv"]  # the grouped layout broadcasts k and v to every query head
    torch.testing.assert_close(q, expected_q.reshape(q.shape))
    for mine, theirs in ((k, expected_k), (v, expected_v)):
        theirs = theirs.reshape(3, 12, -1, d_head)
        torch.testing.assert_close(mine.repeat_interleave(theirs.shape[2] // kv_heads, dim=2), theirs)
    for i in range(cache.n_blocks):  # and each layout's block passes the residual identity
        total = cache[f"blocks.{i}.hook_resid_pre"] + cache[f"blocks.{i}.hook_attn_out"] + cache[f"blocks.{i}.hook_mlp_out"]
        torch.testing.assert_close(cache[f"blocks.{i}.hook_resid_post"], total, atol=1e-5, rtol=0)
