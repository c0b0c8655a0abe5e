"""Sub-module ablation by hooks and swaps (S4.2; S3.11's attention residual, S3.13's layer norms).

Source S4 (Appendix IV) sends on a block output with one summand removed:
``x + ffwd_out`` (no attention) or ``x + sa_out`` (no FFN), where the FFN
still saw ``x + sa_out``. That is exactly "subtract the child's output from
the parent's output", which this module does with two forward hooks, for any
torch module tree.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn


def _first(output):
    """The tensor part of a module output (HF modules often return tuples)."""
    return output[0] if isinstance(output, tuple) else output


def _replace_first(output, tensor: torch.Tensor):
    return (tensor, *output[1:]) if isinstance(output, tuple) else tensor


@contextmanager
def subtract_child_output(parent: nn.Module, child: nn.Module) -> Iterator[None]:
    """Within the context, ``parent``'s output has ``child``'s output removed.

    The child runs normally (everything downstream of it inside the parent
    sees its real output); only the parent's returned tensor, shape
    (batch, seq, d_model), becomes ``parent_out - child_out``. For a residual
    block ``y = x + attn(x) + mlp(x + attn(x))`` and child ``attn`` this gives
    ``x + mlp(x + attn(x))``, S4's "no attention" block output.

    Args:
        parent: the module whose output is patched (a transformer block).
        child: a sub-module of ``parent`` whose output is a summand of it.
    Raises:
        RuntimeError: on exit-time use if the child did not run inside the
            parent's forward (the adapter named the wrong module).
    """
    seen: list[torch.Tensor] = []

    def keep(_module, _inputs, output):
        seen.append(_first(output))

    def subtract(_module, _inputs, output):
        if not seen:
            raise RuntimeError(f"{type(child).__name__} did not run inside {type(parent).__name__}; cannot ablate it")
        full = _first(output)
        patched = full - seen.pop().reshape(full.shape)  # OPT's fc2 works on (batch * seq, d_model)
        return _replace_first(output, patched)

    handles = [child.register_forward_hook(keep), parent.register_forward_hook(subtract)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _is_norm(module: nn.Module) -> bool:
    """LayerNorm, RMSNorm and the HF classes named so (LlamaRMSNorm, ...)."""
    return isinstance(module, nn.LayerNorm | nn.RMSNorm) or type(module).__name__.endswith(("LayerNorm", "RMSNorm"))


@contextmanager
def norms_removed(module: nn.Module) -> Iterator[int]:
    """Within the context, every normalisation inside ``module`` is the identity (S3.13: "removing the layer
    normalizations"); the modules are swapped back on exit.

    Args:
        module: e.g. a transformer block, whose ln_1/ln_2 (GPT-2) or input_layernorm/post_attention_layernorm
            (Llama) become ``nn.Identity``; tensors keep their shape (batch, seq, d_model).
    Yields:
        the number of norms removed.
    Raises:
        ValueError: if ``module`` holds no normalisation (nothing would be removed).
    """
    found = [(parent, name, child) for parent in module.modules() for name, child in parent.named_children()
             if _is_norm(child)]
    if not found:
        raise ValueError(f"{type(module).__name__} holds no LayerNorm or RMSNorm to remove")
    for parent, name, _ in found:
        setattr(parent, name, nn.Identity())
    try:
        yield len(found)
    finally:
        for parent, name, child in found:
            setattr(parent, name, child)


@contextmanager
def attention_residual_removed(block: nn.Module, attention: nn.Module) -> Iterator[None]:
    """Within the context, ``block`` drops the residual connection across its attention (S3.11).

    A pre-norm block computes h = x + attn(norm(x)), then h + mlp(norm(h)). With the attention's output replaced
    by attn(norm(x)) − x, the block computes h = attn(norm(x)): the stream entering the block reaches the FFN
    and the output only through attention. Shapes (batch, seq, d_model) throughout. Each thread's forward passes
    use their own block input (``models.forwards.side_by_side`` runs descents through the ablated block in threads).

    Args:
        block: a sequential pre-norm transformer block (GPT-2, Llama, OPT, ...), whose first positional or
            ``hidden_states`` argument is its input x.
        attention: its attention module (``adapter.attn`` inside the block), whose output is added to x.
    Raises:
        RuntimeError: at the attention's call if the block did not run first (the wrong modules were named).
    """
    entering = threading.local()  # .x: each thread's block input (S3's descents run side by side, in threads)

    def keep(_module, args, kwargs):
        entering.x = args[0] if args else kwargs["hidden_states"]

    def subtract(_module, _inputs, output):
        x = getattr(entering, "x", None)
        if x is None:
            raise RuntimeError(f"{type(attention).__name__} ran outside {type(block).__name__}; cannot remove the "
                               "residual across it")
        entering.x = None
        return _replace_first(output, _first(output) - x.reshape(_first(output).shape))

    handles = [block.register_forward_pre_hook(keep, with_kwargs=True), attention.register_forward_hook(subtract)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
