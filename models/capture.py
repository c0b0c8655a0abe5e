"""Activation capture, truncated forward passes and block ablations via adapters.

One forward pass per model and prompt batch fills an :class:`ActivationCache`
with every canonical activation (see ``models.adapters``); the claims share
it through the ``activations`` fixture.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from latent_instruments.ablation import subtract_child_output
from latent_instruments.errors import require_finite
from models.adapters import Adapter


def _tensor(output) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output


def _block_input(args, kwargs) -> torch.Tensor:
    return args[0] if args else kwargs["hidden_states"]


@dataclass
class ActivationCache:
    """Canonical activations of one forward pass.

    Attributes:
        activations: canonical name -> tensor (see ``models.adapters``), detached.
        logits: (batch, seq, vocab), float32.
        n_blocks: number of transformer blocks.
    """

    activations: dict[str, torch.Tensor] = field(default_factory=dict)
    logits: torch.Tensor | None = None
    n_blocks: int = 0

    def __getitem__(self, name: str) -> torch.Tensor:
        if name not in self.activations:
            raise KeyError(f"no activation {name!r} captured; have: {', '.join(sorted(self.activations))}")
        return self.activations[name]

    def __contains__(self, name: str) -> bool:
        return name in self.activations

    def hidden_states(self) -> list[tuple[str, torch.Tensor]]:
        """The residual stream by depth, as S0 plots it.

        Returns:
            [(label, (batch, seq, d_model))]: token embeddings ("embed"), the
            first block's input ("embed+pos" where positions are learned,
            otherwise omitted as identical to "embed"), then each block's
            resid_post ("block 1" .. "block L").
        """
        layers = [("embed", self["hook_embed"])]
        if "hook_pos_embed" in self:
            layers.append(("embed+pos", self["blocks.0.hook_resid_pre"]))
        layers += [(f"block {i + 1}", self[f"blocks.{i}.hook_resid_post"]) for i in range(self.n_blocks)]
        return layers


@contextmanager
def _hooks(model: nn.Module, adapter: Adapter, store: dict[str, torch.Tensor]) -> Iterator[None]:
    def save(name, tensor):
        store[name] = tensor.detach()

    def post(name):
        return lambda _m, _a, out: save(name, _tensor(out))

    def pre(name):
        return lambda _m, args, kwargs: save(name, _block_input(args, kwargs))

    handles = [model.get_input_embeddings().register_forward_hook(post("hook_embed"))]
    if adapter.pos_embed:
        handles.append(model.get_submodule(adapter.pos_embed).register_forward_hook(post("hook_pos_embed")))
    for i, block in enumerate(adapter.block_list(model)):
        handles += [
            block.register_forward_pre_hook(pre(f"blocks.{i}.hook_resid_pre"), with_kwargs=True),
            block.get_submodule(adapter.attn).register_forward_hook(post(f"blocks.{i}.hook_attn_out")),
            block.get_submodule(adapter.mlp).register_forward_hook(post(f"blocks.{i}.hook_mlp_out")),
            block.register_forward_hook(post(f"blocks.{i}.hook_resid_post")),
        ]
    norm = model.get_submodule(adapter.final_norm)
    handles += [
        norm.register_forward_pre_hook(pre("ln_final.hook_in"), with_kwargs=True),
        norm.register_forward_hook(post("ln_final.hook_normalized")),
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def run_with_cache(
    model: nn.Module, adapter: Adapter, input_ids: torch.Tensor, attention_pattern: bool = False
) -> ActivationCache:
    """One forward pass that captures every canonical activation.

    Args:
        model: a HF causal LM in eval mode.
        adapter: its adapter (``models.adapters.adapter_for``).
        input_ids: (batch, seq) token ids on the model's device.
        attention_pattern: also capture ``blocks.{i}.attn.hook_pattern``
            (batch, heads, seq, seq); needs the eager attention implementation
            and memory quadratic in seq, so it is off by default.
    Returns:
        ActivationCache.
    Raises:
        NonFiniteError: if any captured activation or the logits hold NaN/inf.
    """
    store: dict[str, torch.Tensor] = {}
    with torch.no_grad(), _hooks(model, adapter, store):
        out = model(input_ids=input_ids, output_attentions=attention_pattern, use_cache=False)
    n_blocks = len(adapter.block_list(model))
    for i in range(n_blocks):
        shape = store[f"blocks.{i}.hook_resid_pre"].shape
        store[f"blocks.{i}.hook_mlp_out"] = store[f"blocks.{i}.hook_mlp_out"].reshape(shape)  # OPT: (batch * seq, d)
        store[f"blocks.{i}.hook_resid_mid"] = store[f"blocks.{i}.hook_resid_pre"] + store[f"blocks.{i}.hook_attn_out"]
    if attention_pattern:
        for i, pattern in enumerate(out.attentions):
            store[f"blocks.{i}.attn.hook_pattern"] = pattern.detach()
    for name, tensor in store.items():
        require_finite(tensor, f"activation {name}")
    logits = out.logits.detach().float()
    require_finite(logits, "logits")
    return ActivationCache(store, logits, n_blocks)


class _Stop(Exception):
    def __init__(self, output: torch.Tensor):
        self.output = output


def block_output_fn(model: nn.Module, adapter: Adapter, block: int, seq_len: int):
    """A differentiable map from token embeddings to one block's resid_post.

    The model runs from ``inputs_embeds`` (so learned positions or rotary
    position ids are applied by the model itself, as in S3's GPT-J variant)
    and stops after ``block``: later blocks are not computed.

    Args:
        model, adapter: as for :func:`run_with_cache`.
        block: 0-based block index.
        seq_len: sequence length of the inputs (for a sanity check).
    Returns:
        f: (batch, seq, d_model) embeddings -> (batch, seq, d_model) resid_post.
    """
    target = adapter.block_list(model)[block]

    def stop(_m, _a, out):
        raise _Stop(_tensor(out))

    def forward(embeddings: torch.Tensor) -> torch.Tensor:
        if embeddings.shape[1] != seq_len:
            raise ValueError(f"expected {seq_len} positions, got {embeddings.shape[1]}")
        handle = target.register_forward_hook(stop)
        try:
            model(inputs_embeds=embeddings, use_cache=False)
        except _Stop as done:
            return done.output
        finally:
            handle.remove()
        raise RuntimeError(f"block {block} did not run")

    return forward


def ablated_logits(
    model: nn.Module, adapter: Adapter, input_ids: torch.Tensor, block: int, drop: str
) -> torch.Tensor:
    """Logits with one block's attention or FFN output removed from its output (S4.2).

    Args:
        model, adapter, input_ids: as for :func:`run_with_cache`.
        block: 0-based block index.
        drop: "attn" (block output becomes resid_pre + mlp_out) or "mlp"
            (block output becomes resid_pre + attn_out).
    Returns:
        logits (batch, seq, vocab), float32.
    Raises:
        ValueError: for another ``drop``.
        NonFiniteError: if the logits hold NaN or inf.
    """
    if drop not in ("attn", "mlp"):
        raise ValueError(f"drop must be 'attn' or 'mlp', got {drop!r}")
    parent = adapter.block_list(model)[block]
    child = parent.get_submodule(adapter.attn if drop == "attn" else adapter.mlp)
    with torch.no_grad(), subtract_child_output(parent, child):
        logits = model(input_ids=input_ids, use_cache=False).logits.float()
    require_finite(logits, f"logits with block {block} {drop} dropped")
    return logits
