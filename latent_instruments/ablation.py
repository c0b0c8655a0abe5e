"""Sub-module output ablation by hooks (S4.2).

Source S4 (Appendix IV) sends on a block output with one summand removed:
``x + ffwd_out`` (no attention) or ``x + sa_out`` (no FFN), where the FFN
still saw ``x + sa_out``. That is exactly "subtract the child's output from
the parent's output", which this module does with two forward hooks, for any
torch module tree.
"""

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
