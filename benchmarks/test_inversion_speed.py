"""Batched inversion against a prompt-by-prompt loop of the same work (S3's instrument, issue 8).

``latent_instruments.inversion.invert`` optimises every prompt of a batch in one gradient descent;
the loop inverts the same 64 prompts one at a time, with the same steps, settings and decoding (the
pseudo-inverse is computed once for both). Two shapes of the claims' work on the tiny profile: the
character-level main model (tiny-w128: 16-token prompts, the length of S3's 'The sky is blue.' in
characters) and the sub-word one (tiny-bpe-w96: 7 tokens, vocabulary 4096), block 1, random init,
float32, on the CPU, or on ``$LATENT_CLAIMS_BENCH_DEVICE`` (``make gpu-check`` sets ``cuda``; each timed
call then ends with a device synchronisation). Each benchmark's ``extra_info`` holds steps per second (whole batch), prompt-steps per
second, and, on whichever of the pair runs second, ``speedup`` = loop ÷ batched on their fastest
rounds (the least disturbed by other work on a shared machine).

Where the CPU bound is: two more benchmarks time the descent's own work without the inversion around it, N
bare forward-and-backward passes of block 1 on the same inputs, batched and one prompt at a time. Their
ratio, ``ceiling`` (extra_info), is the speed-up batching can give on this machine at all: a CPU runs a
64-prompt batch's matrix products on its few cores, so the batch costs more per step than one prompt, and
the loop's per-prompt overhead is all there is to win back. ``overhead`` = batched inversion ÷ batched
forward-and-backward shows how much of the batched inversion is anything else (start, schedule, decoding).
"""

import os

import pytest
import torch

from latent_instruments.inversion import InversionConfig, invert
from latent_instruments.decoding import pseudo_inverse
from models.adapters import adapter_for
from models.forwards import block_output_fn
from models.recipes import PROFILES
from models.trainer import gpt2_config
from models.loading import from_config

SEED = 0
DEVICE = os.environ.get("LATENT_CLAIMS_BENCH_DEVICE", "cpu")  # where the layer runs; cpu unless gpu-check says
PROMPTS, STEPS, ROUNDS = 64, 10, 3
SHAPES = {"char-tiny-w128-16tok": ("tiny-w128", 84, 16), "bpe-tiny-bpe-w96-7tok": ("tiny-bpe-w96", 4096, 7)}
SMOKE_PROMPTS, SMOKE_STEPS = 4, 2  # with --benchmark-disable (make test): once, small
_FASTEST: dict[tuple[str, str], float] = {}  # (shape, kind) -> fastest round in seconds


@pytest.fixture(scope="module", params=list(SHAPES), ids=list(SHAPES))
def problem(request):
    """(shape name, layer, W_E, ids (64, T), W_E⁺) for one shape: a random-init model's block 1, on ``DEVICE``."""
    name, vocab, tokens = SHAPES[request.param]
    recipe = next(r for rs in PROFILES.values() for r in rs if r.name == name)
    model = from_config(gpt2_config(recipe, vocab), SEED).eval().to(DEVICE)
    model.requires_grad_(False)
    weight = model.get_input_embeddings().weight.detach()
    ids = torch.randint(0, vocab, (PROMPTS, tokens), generator=torch.Generator().manual_seed(SEED)).to(DEVICE)
    layer = block_output_fn(model, adapter_for(model), 0, tokens)
    return request.param, layer, weight, ids, pseudo_inverse(weight)


def _synced(work):
    """``work`` followed by a wait for the device, so that a timed round holds the device's work too."""
    def run():
        out = work()
        if torch.device(DEVICE).type == "cuda":
            torch.cuda.synchronize()
        return out
    return run


def _sizes(benchmark) -> tuple[int, int]:
    return (PROMPTS, STEPS) if benchmark.enabled else (SMOKE_PROMPTS, SMOKE_STEPS)


def _record(benchmark, shape: str, kind: str, prompts: int, steps: int) -> None:
    """Throughput and, once both of a shape are measured, the speed-up, into ``extra_info``."""
    benchmark.extra_info.update(shape=shape, prompts=prompts, steps=steps, kind=kind)
    if not benchmark.enabled:
        return
    fastest = benchmark.stats.stats.min
    _FASTEST[shape, kind] = fastest
    benchmark.extra_info["steps_per_second"] = steps / fastest
    benchmark.extra_info["prompt_steps_per_second"] = prompts * steps / fastest
    if (shape, "batched") in _FASTEST and (shape, "loop") in _FASTEST:
        benchmark.extra_info["speedup"] = _FASTEST[shape, "loop"] / _FASTEST[shape, "batched"]
    if kind == "batched" and (shape, "batched forward-backward") in _FASTEST:
        benchmark.extra_info["overhead"] = fastest / _FASTEST[shape, "batched forward-backward"]


def _record_floor(benchmark, shape: str, kind: str) -> None:
    """The bare forward-and-backward floor of a shape: ``ceiling`` and ``overhead`` once their pairs are measured."""
    benchmark.extra_info.update(shape=shape, kind=kind)
    if not benchmark.enabled:
        return
    _FASTEST[shape, kind] = benchmark.stats.stats.min
    if (shape, "batched forward-backward") in _FASTEST and (shape, "loop forward-backward") in _FASTEST:
        benchmark.extra_info["ceiling"] = (_FASTEST[shape, "loop forward-backward"]
                                           / _FASTEST[shape, "batched forward-backward"])


def _forward_backward(layer, inputs: torch.Tensor, steps: int) -> None:
    """``steps`` bare passes of the descent's work: block 1's output, an L1 loss, the input's gradient."""
    target = layer(inputs).detach()
    x = inputs.clone().requires_grad_(True)
    for _ in range(steps):
        (layer(x) - target).abs().sum().backward()


def test_batched_forward_backward(benchmark, problem):
    """The floor of the batched inversion: N forward and backward passes of the whole batch, nothing else."""
    shape, layer, weight, ids, _ = problem
    prompts, steps = _sizes(benchmark)
    inputs = weight[ids[:prompts]] + 0.05

    benchmark.group = f"inversion batching {shape}"
    benchmark.pedantic(_synced(lambda: _forward_backward(layer, inputs, steps)), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    _record_floor(benchmark, shape, "batched forward-backward")


def test_prompt_by_prompt_forward_backward(benchmark, problem):
    """The floor of the loop: the same passes one prompt at a time."""
    shape, layer, weight, ids, _ = problem
    prompts, steps = _sizes(benchmark)
    inputs = weight[ids[:prompts]] + 0.05

    def loop():
        for b in range(prompts):
            _forward_backward(layer, inputs[b:b + 1], steps)

    benchmark.group = f"inversion batching {shape}"
    benchmark.pedantic(_synced(loop), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    _record_floor(benchmark, shape, "loop forward-backward")


def test_batched_inversion(benchmark, problem):
    """All prompts in one optimisation: S3's setting, N steps, decoded top-5."""
    shape, layer, weight, ids, pinv = problem
    prompts, steps = _sizes(benchmark)
    config = InversionConfig(steps=steps)

    def batched():
        return invert(layer, ids[:prompts], weight, torch.Generator().manual_seed(SEED), config, pinv=pinv)

    benchmark.group = f"inversion batching {shape}"
    benchmark.pedantic(_synced(batched), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    _record(benchmark, shape, "batched", prompts, steps)


def test_prompt_by_prompt_inversion(benchmark, problem):
    """The same prompts, steps and decoding, one prompt per optimisation."""
    shape, layer, weight, ids, pinv = problem
    prompts, steps = _sizes(benchmark)
    config = InversionConfig(steps=steps)

    def loop():
        return [invert(layer, ids[b:b + 1], weight, torch.Generator().manual_seed(SEED), config, pinv=pinv)
                for b in range(prompts)]

    benchmark.group = f"inversion batching {shape}"
    benchmark.pedantic(_synced(loop), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    _record(benchmark, shape, "loop", prompts, steps)
