"""Bare forward pass against capture, per reference architecture and per set of needs (issue 58, item 6).

Two captures, each paired with the bare pass that runs the same forward (``models.capture.forward_kwargs``: the
same attention kernel, the same logits), so that the ratio is what capturing alone costs:

- ``residual-stream``: the residual stream alone (what S0, S2 and S4.5 read). Target: at most 1.15× the bare pass.
- ``every-need``: the union a whole run captures on a reference (``fixtures.pool``): the residual stream, each
  block's attention and FFN outputs, queries, keys and attention patterns.

Where a capture's time goes beyond the bare pass (measured on ref-opt-125m, the costliest in the report): the
hooks themselves cost nothing measurable; the attention and FFN outputs are copied (``clone``, since a block
still writes to them); each held tensor gets one finiteness reduction; there are no dtype casts (float32
throughout). The rest is memory: a capture keeps its tensors, so the pass writes them to pages the process has never
touched (page faults, system time), and the model's own temporaries can no longer reuse the freed pages of earlier
layers. Attention patterns force no slower kernel here: every model is loaded with eager attention
(``models.loading``), for the bare pass as for the capture.

The ratio is read from the benchmark JSON by ``reports.benchmarks.summarize`` (fastest rounds), never asserted
here. Both benchmarks of a pair use the same model and batch, are measured alike (``benchmark.pedantic``, same
rounds) and run one after the other in one process; ``benchmark.group`` is the architecture.
"""

import pytest
import torch

from models.capture import forward_kwargs, run_with_cache, select

RESIDUAL_STREAM = ["hook_embed", "blocks.*.hook_resid_pre", "blocks.*.hook_resid_post", "ln_final.hook_in"]
EVERY_NEED = [*RESIDUAL_STREAM, "blocks.*.hook_attn_out", "blocks.*.hook_mlp_out", "blocks.*.attn.hook_q",
              "blocks.*.attn.hook_k", "blocks.*.attn.hook_pattern"]
NEEDS = {"residual-stream": RESIDUAL_STREAM, "every-need": EVERY_NEED}
ROUNDS, WARMUP_ROUNDS = 7, 1


def _measure(benchmark, reference, input_ids, fn) -> None:
    benchmark.group = reference.name
    benchmark.extra_info.update(batch=input_ids.shape[0], seq=input_ids.shape[1], threads=torch.get_num_threads())
    benchmark.pedantic(fn, rounds=ROUNDS, warmup_rounds=WARMUP_ROUNDS, iterations=1)


@pytest.mark.parametrize("needs", NEEDS)
def test_bare_forward(benchmark, reference, input_ids, needs):
    """The model's own forward pass, no hooks, with the capture's keyword arguments (attention patterns returned
    where they are captured; only the last position's logits where none are)."""
    wanted = select(reference.adapter, len(reference.adapter.block_list(reference.model)), NEEDS[needs])
    kwargs = forward_kwargs(reference.model, wanted)

    @torch.no_grad()
    def bare():
        return reference.model(input_ids=input_ids, use_cache=False, **kwargs)

    _measure(benchmark, reference, input_ids, bare)


@pytest.mark.parametrize("needs", NEEDS)
def test_capture(benchmark, reference, input_ids, needs):
    """``run_with_cache`` of the needs: hooks, copies, finiteness checks and the cache."""

    @torch.no_grad()
    def capture():
        return run_with_cache(reference.model, reference.adapter, input_ids, names=NEEDS[needs])

    _measure(benchmark, reference, input_ids, capture)
