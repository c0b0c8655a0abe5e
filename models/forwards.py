"""Forward passes that stop early, start late or leave a sublayer out, via adapters (S3, S4.2, S4.10), and the
descents through them run side by side (:func:`side_by_side`).

- :func:`block_output_fn`, :func:`blocks_output_fn`: differentiable maps from token embeddings to blocks' outputs,
  for the inversions of S3 (the model stops after the last block wanted);
- :func:`logits_from_block_input_fn`: from vectors placed at a block's input to the logits (S4.10);
- :func:`ablated_logits`: the logits with one block's attention or FFN output removed (S4.2).
"""

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

import torch
from torch import nn

from latent_instruments.ablation import subtract_child_output
from latent_instruments.errors import require_finite
from latent_instruments.inversion import DESCENT_THREADS, fixed_cpu_threads
from models.adapters import Adapter
from models.capture import block_input, output_tensor


class _Stop(Exception):
    def __init__(self, output: torch.Tensor):
        self.output = output


# The forward passes of block_output_fn and blocks_output_fn stop after one module and record the outputs of others.
# S3's descents run them side by side, in threads, through one model (:func:`side_by_side`), so the hooks that stop and
# record act per thread: each module has at most one hook, ``_dispatch``, which reads what the calling thread wants
# (``_WANTED``). Torch walks a module's hook dictionary, unguarded, while an exception (the stop) leaves the module, so
# no hook may be placed or removed on a module while another thread's forward pass can stop there: a hook is placed
# before its thread's pass and, while ``side_by_side`` runs, removed only when it ends (``_KEPT``).
_WANTED = threading.local()  # this thread's forward pass: .stop, the module ending it; .record, {module: outputs}
_PLACED: dict[nn.Module, object] = {}  # module -> handle of its ``_dispatch`` hook
_PLACING = threading.Lock()  # guards _PLACED and _KEPT
_KEPT = [0]  # side_by_side calls running: the hooks placed meanwhile stay until the last of them ends
SIDE_BY_SIDE = 2  # descents at once on a CPU (the machine's 2 cores), each on DESCENT_THREADS thread


def _dispatch(module, _args, out):
    """The one forward hook of a module that a pass below stops at or records: for the thread whose pass it is, it
    appends the module's output where that pass records it, and ends the pass where it stops; other threads pass."""
    outputs = getattr(_WANTED, "record", {}).get(module)
    if outputs is not None:
        outputs.append(output_tensor(out))
    if getattr(_WANTED, "stop", None) is module:
        raise _Stop(output_tensor(out))


@contextmanager
def _wanted(stop: nn.Module, record: dict[nn.Module, list] | None = None):
    """Inside, this thread's forward passes end after ``stop`` (raising ``_Stop`` with its output) and append the
    outputs of ``record``'s modules to their lists; other threads' passes through the same modules are untouched."""
    record = record or {}
    with _PLACING:
        placed = [m for m in dict.fromkeys([*record, stop]) if m not in _PLACED]
        for m in placed:
            _PLACED[m] = m.register_forward_hook(_dispatch)
    _WANTED.stop, _WANTED.record = stop, record
    try:
        yield
    finally:
        _WANTED.stop, _WANTED.record = None, {}
        with _PLACING:
            if not _KEPT[0]:
                for m in placed:
                    _PLACED.pop(m).remove()


@contextmanager
def _hooks_kept():
    """Inside (``side_by_side``), hooks placed by ``_wanted`` stay until the outermost such block ends, when all of
    them are removed: no thread's forward pass is running then."""
    with _PLACING:
        _KEPT[0] += 1
    try:
        yield
    finally:
        with _PLACING:
            _KEPT[0] -= 1
            if not _KEPT[0]:
                for handle in _PLACED.values():
                    handle.remove()
                _PLACED.clear()


@contextmanager
def frozen(model: torch.nn.Module):
    """Parameters without gradients inside (only the input's gradient is taken), restored after."""
    flags = [p.requires_grad for p in model.parameters()]
    model.requires_grad_(False)
    try:
        yield model
    finally:
        for p, flag in zip(model.parameters(), flags):
            p.requires_grad_(flag)


T = TypeVar("T")


def side_by_side(model: torch.nn.Module, jobs: Sequence[Callable[[], T]]) -> list[T]:
    """Run independent descents through one model at once (S3's inversions): up
    to ``SIDE_BY_SIDE`` on a CPU, in threads, each on ``DESCENT_THREADS`` thread; one by one on a GPU.

    A descent's numbers do not depend on what runs beside it: its own generator, one thread whatever runs beside it,
    and forward passes whose hooks act for their own thread only (``_dispatch``; placed once and removed when every
    job has ended). Forward and backward passes and the decoding all run side by side. So the results equal a
    one-by-one run's.
    The model is frozen for the whole batch (a job's own :func:`frozen` inside is then a no-op), since threads that
    froze and restored it each on their own would leave it as the first of them found it.

    Args:
        model: the model every job descends through.
        jobs: callables without arguments, each one descent (or several in a row) and its decoding.
    Returns:
        the jobs' results, in ``jobs``' order.
    Raises:
        whatever a job raises (the first in ``jobs``' order), once every job has ended.
    """
    workers = descents_at_once(model)
    with frozen(model), fixed_cpu_threads(DESCENT_THREADS), _hooks_kept(), \
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="descent") as pool:
        futures = [pool.submit(job) for job in jobs]
    return [f.result() for f in futures]


def descents_at_once(model: torch.nn.Module) -> int:
    """How many jobs :func:`side_by_side` runs at once through ``model``: ``SIDE_BY_SIDE`` on a CPU, 1 on a GPU."""
    return SIDE_BY_SIDE if next(model.parameters()).device.type == "cpu" else 1


def block_output_fn(model: nn.Module, adapter: Adapter, block: int, seq_len: int):
    """A differentiable map from token embeddings to one block's resid_post.

    The model runs from ``inputs_embeds`` (so learned positions or rotary
    position ids are applied by the model itself, as in S3's GPT-J variant)
    and stops after ``block``: later blocks are not computed.

    Args:
        model, adapter: as for ``models.capture.run_with_cache``.
        block: 0-based block index.
        seq_len: sequence length of the inputs (for a sanity check).
    Returns:
        f: (batch, seq, d_model) embeddings -> (batch, seq, d_model) resid_post.
    """
    target = adapter.block_list(model)[block]

    def forward(embeddings: torch.Tensor) -> torch.Tensor:
        if embeddings.shape[1] != seq_len:
            raise ValueError(f"expected {seq_len} positions, got {embeddings.shape[1]}")
        with _wanted(target):
            try:
                model(inputs_embeds=embeddings, use_cache=False)
            except _Stop as done:
                return done.output
        raise RuntimeError(f"block {block} did not run")

    return forward


def blocks_output_fn(model: nn.Module, adapter: Adapter, blocks: list[int], seq_len: int):
    """A differentiable map from token embeddings to several blocks' resid_post, concatenated (S3.14).

    The model runs from ``inputs_embeds`` and stops after the last of ``blocks``.

    Args:
        model, adapter: as for ``models.capture.run_with_cache``.
        blocks: 0-based block indices, in increasing order.
        seq_len: sequence length of the inputs.
    Returns:
        f: (batch, seq, d_model) embeddings -> (batch, seq, len(blocks) * d_model), the blocks' outputs side
        by side along the feature axis, in ``blocks``' order.
    Raises:
        ValueError: for blocks not strictly increasing, or inputs of another length than ``seq_len``.
    """
    if list(blocks) != sorted(set(blocks)):
        raise ValueError(f"blocks must be strictly increasing, got {blocks}")
    *earlier, last = [adapter.block_list(model)[b] for b in blocks]

    def forward(embeddings: torch.Tensor) -> torch.Tensor:
        if embeddings.shape[1] != seq_len:
            raise ValueError(f"expected {seq_len} positions, got {embeddings.shape[1]}")
        seen = {m: [] for m in earlier}
        with _wanted(last, seen):
            try:
                model(inputs_embeds=embeddings, use_cache=False)
            except _Stop as done:
                return torch.cat([*(seen[m][0] for m in earlier), done.output], dim=-1)
        raise RuntimeError(f"block {blocks[-1]} did not run")

    return forward


def logits_from_block_input_fn(model: nn.Module, adapter: Adapter, block: int):
    """A differentiable map from vectors placed at one block's input to the logits they give (S4.10's subspaces).

    Each vector becomes a one-position sequence's residual stream entering ``block``: the model runs on
    placeholder tokens, a pre-hook replaces the block's input with the vectors, and the later blocks, the final
    norm and the head give the logits (S4: ``output_head(blocks[k:](x))``). Blocks before ``block`` see only the
    placeholders, so their outputs are the same at every call with as many vectors: they run at the first such call
    and are replayed after (:func:`_replayed`), which gives the same logits without their cost.

    Args:
        model, adapter: as for ``models.capture.run_with_cache``; the model's weights must not change between calls.
        block: 0-based index of the block whose input the vectors are, < n_blocks.
    Returns:
        f: (N, d_model) vectors -> (N, vocab) float32 logits.
    Raises:
        IndexError: for a block the model does not have.
    """
    blocks = adapter.block_list(model)
    target, earlier = blocks[block], list(blocks)[:block]
    device = model.get_input_embeddings().weight.device
    replays: dict[int, list] = {}  # N -> the earlier blocks' outputs on N placeholders

    def forward(vectors: torch.Tensor) -> torch.Tensor:
        def replace(_m, args, kwargs):
            x = vectors[:, None, :].to(block_input(args, kwargs).dtype)
            return ((x, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": x})

        handle = target.register_forward_pre_hook(replace, with_kwargs=True)
        try:
            placeholders = torch.zeros(vectors.shape[0], 1, dtype=torch.long, device=device)
            with _replayed(earlier, replays.setdefault(vectors.shape[0], [])):
                return model(input_ids=placeholders, use_cache=False).logits[:, 0].float()
        finally:
            handle.remove()

    return forward


@contextmanager
def _replayed(modules: list[nn.Module], outputs: list):
    """Inside, each of ``modules`` returns its entry of ``outputs`` without running; where ``outputs`` is empty, the
    modules run and what they return is recorded into it. For modules whose inputs are the same at every call (the
    blocks before :func:`logits_from_block_input_fn`'s block, on its placeholders). A forward set on the instance (an
    accelerate hook) is put back after."""
    if not outputs:
        handles = [m.register_forward_hook(lambda _m, _a, out: outputs.append(out)) for m in modules]
        try:
            yield
        except BaseException:
            outputs.clear()  # a pass that did not end records nothing
            raise
        finally:
            for handle in handles:
                handle.remove()
        return
    own = [m.__dict__.get("forward") for m in modules]
    for m, out in zip(modules, outputs):
        m.forward = lambda *_a, _out=out, **_k: _out
    try:
        yield
    finally:
        for m, forward in zip(modules, own):
            if forward is None:
                del m.forward
            else:
                m.forward = forward


def ablated_logits(
    model: nn.Module, adapter: Adapter, input_ids: torch.Tensor, block: int, drop: str
) -> torch.Tensor:
    """Logits with one block's attention or FFN output removed from its output (S4.2).

    Args:
        model, adapter, input_ids: as for ``models.capture.run_with_cache``.
        block: 0-based block index.
        drop: "attn" (block output becomes resid_pre + mlp_out) or "mlp"
            (block output becomes resid_pre + attn_out).
    Returns:
        logits (batch, seq, vocab), float32.
    Raises:
        ValueError: for another ``drop``.
        NonFiniteError: if the logits hold NaN or inf.
        RuntimeError: if the module the adapter names did not run inside the block.
    """
    if drop not in ("attn", "mlp"):
        raise ValueError(f"drop must be 'attn' or 'mlp', got {drop!r}")
    parent = adapter.block_list(model)[block]
    child = parent.get_submodule(adapter.attn if drop == "attn" else adapter.mlp)
    with torch.no_grad(), subtract_child_output(parent, child):
        # registered after subtract_child_output's own hook, which so keeps the child's original output while
        # the block goes on with a copy: Falcon's parallel block adds attn_out into the MLP's output in place
        handle = child.register_forward_hook(lambda _m, _a, out: _copy_first(out))
        try:
            logits = model(input_ids=input_ids, use_cache=False).logits.float()
        finally:
            handle.remove()
    require_finite(logits, f"logits with block {block} {drop} dropped")
    return logits


def _copy_first(output):
    """A module output with its tensor part copied (see :func:`ablated_logits`)."""
    return (output[0].clone(), *output[1:]) if isinstance(output, tuple) else output.clone()
