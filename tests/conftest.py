"""Shared helpers of the self-tests: tiny random-init models of every supported architecture."""

import pytest
import torch
from transformers import AutoModelForCausalLM, GPT2Config, GPTNeoXConfig, LlamaConfig, OPTConfig

TINY_CONFIGS = {
    "gpt2": lambda: GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=50, n_positions=32, activation_function="relu"),
    "opt": lambda: OPTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, ffn_dim=64, vocab_size=50,
                             max_position_embeddings=32, word_embed_proj_dim=32),
    "gpt_neox": lambda: GPTNeoXConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                      vocab_size=50, max_position_embeddings=32),
    "llama": lambda: LlamaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                 vocab_size=50, max_position_embeddings=32),
}


def tiny_model(arch: str, seed: int = 0):
    """A 2-block, 32-wide random-init causal LM of ``arch``, fp32, eval mode."""
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(TINY_CONFIGS[arch](), attn_implementation="eager").eval()


@pytest.fixture(params=sorted(TINY_CONFIGS))
def arch(request) -> str:
    return request.param
