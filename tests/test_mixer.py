"""The masked mixer (models.mixer, S3.12): causal, an HF folder, canonical activations by its adapter."""

import torch
from transformers import AutoModelForCausalLM

from models.adapters import adapter_for
from models.capture import run_with_cache
from models.mixer import MaskedMixerConfig, MaskedMixerForCausalLM


def small() -> MaskedMixerForCausalLM:
    torch.manual_seed(0)
    return MaskedMixerForCausalLM(MaskedMixerConfig(vocab_size=11, n_embd=8, n_layer=2, n_positions=6)).eval()


def test_a_position_sees_no_later_position():
    model = small()
    ids = torch.randint(0, 11, (1, 6), generator=torch.Generator().manual_seed(1))
    changed = ids.clone()
    changed[0, 4:] = (ids[0, 4:] + 1) % 11
    with torch.no_grad():
        a, b = model(ids).logits, model(changed).logits
    assert torch.equal(a[:, :4], b[:, :4]) and not torch.equal(a[:, 4:], b[:, 4:])


def test_it_saves_and_loads_as_a_hugging_face_folder_without_remote_code(tmp_path):
    model = small()
    model.save_pretrained(tmp_path, safe_serialization=True)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path, trust_remote_code=False).eval()
    ids = torch.randint(0, 11, (2, 5), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert torch.equal(model(ids).logits, loaded(ids).logits)


def test_its_blocks_satisfy_the_residual_identity():
    model = small()
    ids = torch.randint(0, 11, (2, 6), generator=torch.Generator().manual_seed(3))
    cache = run_with_cache(model, adapter_for(model), ids, ["blocks.*.hook_resid_*", "blocks.*.hook_*_out"])
    for i in range(2):
        total = cache[f"blocks.{i}.hook_resid_pre"] + cache[f"blocks.{i}.hook_attn_out"] + cache[f"blocks.{i}.hook_mlp_out"]
        torch.testing.assert_close(cache[f"blocks.{i}.hook_resid_post"], total)
