"""Bare forward pass against capture of the default needs, per reference architecture.

Performance target (read from the benchmark JSON by ``reports.benchmarks.summarize``, never asserted
here): capture of DEFAULT_NEEDS costs at most 1.10x the bare forward pass of the same batch. Both
benchmarks of an architecture use the same model and batch, are measured alike (``benchmark.pedantic``,
same rounds) and run one after the other in one process; ``benchmark.group`` is the architecture.
"""

import torch

from models.capture import run_with_cache

# The union of what the suite's current claim tests declare with @pytest.mark.needs.
DEFAULT_NEEDS = ["hook_embed", "blocks.0.hook_resid_pre", "blocks.*.hook_resid_post", "ln_final.hook_in", "logits"]
ROUNDS, WARMUP_ROUNDS = 7, 1


def _measure(benchmark, reference, input_ids, fn) -> None:
    benchmark.group = reference.name
    benchmark.extra_info.update(batch=input_ids.shape[0], seq=input_ids.shape[1], threads=torch.get_num_threads())
    benchmark.pedantic(fn, rounds=ROUNDS, warmup_rounds=WARMUP_ROUNDS, iterations=1)


def test_bare_forward(benchmark, reference, input_ids):
    """The model's own forward pass with logits, no hooks."""

    @torch.no_grad()
    def bare():
        return reference.model(input_ids=input_ids, use_cache=False).logits

    _measure(benchmark, reference, input_ids, bare)


def test_capture(benchmark, reference, input_ids):
    """``run_with_cache`` of the default needs: hooks, finiteness checks and the cache, logits included."""

    @torch.no_grad()
    def capture():
        return run_with_cache(reference.model, reference.adapter, input_ids, names=DEFAULT_NEEDS)

    _measure(benchmark, reference, input_ids, capture)
