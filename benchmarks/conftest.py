"""Fixtures of the benchmarks (``make bench``): the reference architectures and a fixed token batch.

Each reference model is built once per session (seed 0, float32, CPU, eval mode, no gradients) and is
shared by its bare-forward and capture benchmarks, which pytest runs side by side in one process: the
fixture is parametrized at session scope, so pytest orders the tests by architecture and frees each
model before building the next.
"""

import json
from dataclasses import dataclass

import pytest
import torch
from transformers import AutoConfig, PreTrainedModel

from models.adapters import Adapter, adapter_for
from models.loading import from_config
from models.zoo import REFERENCES

ARCHITECTURES = {name.removeprefix("ref-"): path for name, path in REFERENCES.items()}  # gpt2-small, opt-125m, ...
SEED = 0
# 8 sequences x 128 tokens: the claims capture 32 x 128 tokens on the tiny profile; a quarter of that batch
# keeps one forward pass of a ~125M-parameter model to seconds on a 2-core CPU while every tensor keeps
# the claims' per-sequence shape. Random ids below the smallest reference vocabulary (llama-small's 32000):
# the cost of a forward pass does not depend on which tokens it reads.
BATCH, SEQ = 8, 128
VOCAB_LIMIT = 32000
# With --benchmark-disable (``make test``) each benchmark runs once as a plain test: a small slice suffices.
SMOKE_BATCH, SMOKE_SEQ = 2, 16


@dataclass
class Reference:
    """One reference architecture, ready to run."""

    name: str
    model: PreTrainedModel
    adapter: Adapter


@pytest.fixture(scope="session", params=list(ARCHITECTURES), ids=list(ARCHITECTURES))
def reference(request) -> Reference:
    """A random-init reference model, built as ``models.loading.load`` builds it (without its tokenizer)."""
    values = json.loads(ARCHITECTURES[request.param].read_text())
    config = AutoConfig.for_model(values.pop("model_type"), **values)
    model = from_config(config, SEED).to(device="cpu", dtype=torch.float32).eval()
    model.requires_grad_(False)
    return Reference(request.param, model, adapter_for(model))


@pytest.fixture(scope="session")
def token_batch() -> torch.Tensor:
    """(BATCH, SEQ) int64 token ids, the same for every architecture."""
    return torch.randint(0, VOCAB_LIMIT, (BATCH, SEQ), generator=torch.Generator().manual_seed(SEED))


@pytest.fixture
def input_ids(benchmark, token_batch: torch.Tensor) -> torch.Tensor:
    """The whole token batch when measuring; a small slice when the benchmark only runs once as a test."""
    return token_batch if benchmark.enabled else token_batch[:SMOKE_BATCH, :SMOKE_SEQ]
