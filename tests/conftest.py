"""Shared helpers of the self-tests: tiny random-init models of every supported architecture."""

import os
from dataclasses import replace

import pytest
import torch
from transformers import (AutoModelForCausalLM, BloomConfig, FalconConfig, Gemma2Config, GemmaConfig, GPT2Config,
                          GPTJConfig, GPTNeoXConfig, LlamaConfig, MistralConfig, OPTConfig, Phi3Config, Qwen2Config)

from models.corpus import load_text_file
from models.recipes import TINY

class ByteTokenizer:
    """A character tokenizer for prompt-sampling tests: each character's code point mod 256 is its id."""

    def encode(self, text: str) -> list[int]:
        return [ord(ch) % 256 for ch in text]

    def decode(self, ids) -> str:
        return "".join(map(chr, ids))


TINY_CONFIGS = {
    "gpt2": lambda: GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=50, n_positions=32, activation_function="relu"),
    "opt": lambda: OPTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, ffn_dim=64, vocab_size=50,
                             max_position_embeddings=32, word_embed_proj_dim=32),
    "gpt_neox": lambda: GPTNeoXConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                      vocab_size=50, max_position_embeddings=32),
    "llama": lambda: LlamaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                 vocab_size=50, max_position_embeddings=32),
    "mistral": lambda: MistralConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                     intermediate_size=64, vocab_size=50, max_position_embeddings=32),
    "qwen2": lambda: Qwen2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                 intermediate_size=64, vocab_size=50, max_position_embeddings=32),
    # Gemma's default head_dim is 256 whatever the width: 16 = 32 / 2 heads, as in the other configs
    "gemma": lambda: GemmaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                 head_dim=16, intermediate_size=64, vocab_size=50, max_position_embeddings=32),
    # Gemma 2 keeps its default logit soft-capping (tanh, 30) and its sliding-window layers (window > seq)
    "gemma2": lambda: Gemma2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                   head_dim=16, intermediate_size=64, vocab_size=50, max_position_embeddings=32),
    "phi3": lambda: Phi3Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                               intermediate_size=64, vocab_size=50, max_position_embeddings=32, pad_token_id=0,
                               bos_token_id=1, eos_token_id=2),
    "gptj": lambda: GPTJConfig(n_embd=32, n_layer=2, n_head=2, vocab_size=50, n_positions=32, rotary_dim=8),
    # Falcon-7B's layout: parallel block, multi-query attention (one key/value head), rotary, no biases
    "falcon": lambda: FalconConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, vocab_size=50,
                                   max_position_embeddings=32, new_decoder_architecture=False, multi_query=True,
                                   parallel_attn=True, alibi=False, bias=False),
    "bloom": lambda: BloomConfig(hidden_size=32, n_layer=2, n_head=2, vocab_size=50),
}


def tiny_model(arch: str, seed: int = 0):
    """A 2-block, 32-wide random-init causal LM of ``arch``, fp32, eval mode."""
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(TINY_CONFIGS[arch](), attn_implementation="eager").eval()


@pytest.fixture(params=sorted(TINY_CONFIGS))
def arch(request) -> str:
    return request.param


NIGHTLY_ENV = "LATENT_CLAIMS_NIGHTLY"  # set to 1: run the tests marked nightly


def pytest_configure(config: pytest.Config) -> None:
    """The self-tests' layers: `pytest tests -m "not subprocess"` is the fast loop (unit tests of instruments,
    checks, reports and the plugin's parts, and whole pytest runs of synthetic cases in this process); the tests
    marked ``subprocess`` start a child process (``tests.helpers``), each saying why."""
    config.addinivalue_line("markers", "subprocess: starts a child process, where the process boundary is what is "
                                       "tested (signals, exit statuses, xdist's workers, peak memory) (slow; leave "
                                       "out with -m 'not subprocess' for a fast loop)")
    config.addinivalue_line("markers", "nightly: repeats a whole claims run in another form (the zoo's groups as a "
                                       "user's, serial against -n 2, a run under -n 2 as a baseline): skipped unless LATENT_CLAIMS_NIGHTLY=1, which "
                                       "`make test-nightly` and the nightly workflow set")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests marked ``nightly`` (minutes of claims each) unless ``NIGHTLY_ENV`` is set: every change runs
    the rest within `make test`'s budget, the nightly workflow runs them too."""
    if os.environ.get(NIGHTLY_ENV) == "1":
        return
    skip = pytest.mark.skip(reason=f"a nightly self-test: runs with {NIGHTLY_ENV}=1 (`make test-nightly`)")
    for item in items:
        if item.get_closest_marker("nightly"):
            item.add_marker(skip)


# The trainer's tests (test_trainer, test_batched_training): a micro recipe of the tiny ladder (1 block, 16 wide, 6
# steps) and a small corpus with a cache of the test's own.
MICRO_TEXT = "Now is the winter of our discontent\nMade glorious summer by this sun of York;\n" * 200


MICRO = replace(TINY[0], name="micro", n_layer=1, n_embd=16, n_head=2, context=16, steps=6, batch=4, eval_every=3,
                lr_drop_step=4)


@pytest.fixture
def micro_corpus(tmp_path, monkeypatch):
    """A small corpus (``MICRO_TEXT``) as a ``--corpus`` file, with ``LATENT_CLAIMS_CACHE`` in ``tmp_path``."""
    monkeypatch.setenv("LATENT_CLAIMS_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "c.txt"
    path.write_text(MICRO_TEXT, encoding="utf-8")
    return load_text_file(path)
