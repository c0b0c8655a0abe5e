"""Activation capture via adapters (truncated forward passes and ablations: ``models.forwards``).

Claims declare the activations they need (``@pytest.mark.needs``, canonical
names or ``fnmatch`` patterns such as ``blocks.*.hook_resid_post``); the pool
captures, per model, the union of what the selected tests need, with one
forward pass of the prompt batch (in micro-batches when the device runs out
of memory), and shares it through the ``activations`` fixture. See
``models.adapters`` for the canonical names.
"""

import fnmatch
import inspect
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from latent_instruments.errors import require_finite
from models.adapters import Adapter

LOGITS = "logits"  # (batch, seq, vocab), float32: a need like any activation name
BLOCK_TEMPLATES = ("hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post",
                   "attn.hook_pattern", "attn.hook_q", "attn.hook_k", "attn.hook_v")
ON_REQUEST = ("attn.hook_pattern", "attn.hook_q", "attn.hook_k", "attn.hook_v")  # not in the default capture


def canonical_names(adapter: Adapter, n_blocks: int) -> list[str]:
    """Every name a capture of this architecture can hold, including ``logits`` and the on-request ones."""
    names = ["hook_embed"] + (["hook_pos_embed"] if adapter.pos_embed else [])
    names += [f"blocks.{i}.{t}" for i in range(n_blocks) for t in BLOCK_TEMPLATES
              if adapter.qkv or not t.startswith("attn.hook_") or t == "attn.hook_pattern"]
    return names + ["ln_final.hook_in", "ln_final.hook_normalized", LOGITS]


def default_names(adapter: Adapter, n_blocks: int) -> list[str]:
    """What a capture without a filter holds: every canonical name except the on-request ones."""
    return [n for n in canonical_names(adapter, n_blocks) if not n.endswith(ON_REQUEST)]


def check_patterns(patterns: Iterable[str]) -> None:
    """Raise ValueError naming a pattern that matches no canonical name of any architecture.

    Raises:
        ValueError: listing the canonical names, for a typo such as ``blocks.*.hook_resid``.
    """
    generic = canonical_names(Adapter("any", "pos", "blocks", "attn", "mlp", "norm", ("q", "k", "v")), 2)
    generic = [n.replace("blocks.0.", "blocks.{i}.").replace("blocks.1.", "blocks.{i}.") for n in generic]
    for pattern in patterns:
        probe = re.sub(r"blocks\.\d+\.", "blocks.0.", pattern.replace("{i}", "0"))
        if not any(fnmatch.fnmatchcase(n.replace("{i}", "0"), probe) for n in generic):
            raise ValueError(f"needs pattern {pattern!r} matches no canonical activation; names: "
                             + ", ".join(dict.fromkeys(generic)))


def select(adapter: Adapter, n_blocks: int, patterns: Iterable[str] | None) -> set[str]:
    """The concrete names a capture must hold for these patterns (None: the default names)."""
    available = canonical_names(adapter, n_blocks)
    if patterns is None:
        return set(default_names(adapter, n_blocks))
    return {n for n in available if any(fnmatch.fnmatchcase(n, p) for p in patterns)}


@dataclass
class ActivationCache:
    """Canonical activations of one forward pass.

    Attributes:
        activations: canonical name -> tensor (see ``models.adapters``), detached.
        logits: (batch, seq, vocab), float32, or None where no claim needed them.
        n_blocks: number of transformer blocks.
        learned_positions: whether the model adds learned position embeddings before block 1.
    """

    activations: dict[str, torch.Tensor] = field(default_factory=dict)
    logits: torch.Tensor | None = None
    n_blocks: int = 0
    learned_positions: bool = False

    def __getitem__(self, name: str) -> torch.Tensor:
        if name == LOGITS and self.logits is not None:
            return self.logits
        if name not in self.activations:
            raise KeyError(f"no activation {name!r} captured; have: {', '.join(sorted(self.activations))}. "
                           "Declare it with @pytest.mark.needs(...) on the claim test")
        return self.activations[name]

    def __contains__(self, name: str) -> bool:
        return name in self.activations or (name == LOGITS and self.logits is not None)

    def view(self, patterns: Iterable[str]) -> "ActivationCache":
        """The same cache limited to the names matching ``patterns`` (a test sees only what it declared)."""
        patterns = list(patterns)
        held = {n: t for n, t in self.activations.items() if any(fnmatch.fnmatchcase(n, p) for p in patterns)}
        logits = self.logits if any(fnmatch.fnmatchcase(LOGITS, p) for p in patterns) else None
        return ActivationCache(held, logits, self.n_blocks, self.learned_positions)

    def hidden_states(self) -> list[tuple[str, torch.Tensor]]:
        """The residual stream by depth, as S0 plots it.

        Needs ``hook_embed``, ``blocks.0.hook_resid_pre`` and ``blocks.*.hook_resid_post``.

        Returns:
            [(label, (batch, seq, d_model))]: token embeddings ("embed"), the
            first block's input ("embed+pos" where positions are learned,
            otherwise omitted as identical to "embed"; except for BLOOM, whose
            first block reads the LayerNormed embedding), then each block's
            resid_post ("block 1" .. "block L").
        """
        layers = [("embed", self["hook_embed"])]
        if self.learned_positions:
            layers.append(("embed+pos", self["blocks.0.hook_resid_pre"]))
        layers += [(f"block {i + 1}", self[f"blocks.{i}.hook_resid_post"]) for i in range(self.n_blocks)]
        return layers


def output_tensor(output) -> torch.Tensor:
    """The tensor of a module's output: the first item of a tuple (a HF block's (hidden_states, ...)), or itself."""
    return output[0] if isinstance(output, tuple) else output


def block_input(args, kwargs) -> torch.Tensor:
    """The hidden states a block's forward pre-hook sees (positional, or the ``hidden_states`` keyword)."""
    return args[0] if args else kwargs["hidden_states"]


def _split_qkv(adapter: Adapter, config, outputs: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """(q, k, v) from the projection outputs of one block.

    Args:
        adapter: its ``qkv_layout`` says how a fused projection is laid out.
        config: the model's config (query head count; ``head_dim`` where it has one).
        outputs: the three projections' outputs (batch, seq, heads * d_head), (batch, seq, kv_heads * d_head)
            twice, or the fused one's (batch, seq, (heads + 2 kv_heads) * d_head).
    Returns:
        q (batch, seq, heads, d_head), k and v (batch, seq, kv_heads, d_head). The key-value head count is
        read off the widths (Falcon-7B's multi-query attention has one, whatever its config says).
    """
    heads = getattr(config, "num_attention_heads", None) or config.n_head
    if len(outputs) == 3:  # separate projections: d_head from q's width
        d_head = outputs[0].shape[-1] // heads
        return tuple(x.unflatten(-1, (-1, d_head)) for x in outputs)
    fused = outputs[0]
    d_head = getattr(config, "head_dim", None) or config.hidden_size // heads
    kv_heads = (fused.shape[-1] // d_head - heads) // 2
    if adapter.qkv_layout == "per_head":  # per key-value head: its g = heads / kv_heads queries, its key, its value
        groups = fused.unflatten(-1, (kv_heads, heads // kv_heads + 2, d_head))
        return groups[..., :-2, :].flatten(2, 3), groups[..., -2, :], groups[..., -1, :]
    q, k, v = fused.split([heads * d_head, kv_heads * d_head, kv_heads * d_head], dim=-1)  # "concat"
    return q.unflatten(-1, (heads, d_head)), k.unflatten(-1, (kv_heads, d_head)), v.unflatten(-1, (kv_heads, d_head))


@contextmanager
def _hooks(model: nn.Module, adapter: Adapter, wanted: set[str], store: dict[str, torch.Tensor],
           offload: bool, on_modules: list[str]) -> Iterator[None]:
    """Forward hooks that put the ``wanted`` activations (and what derived ones need) into ``store``.

    ``on_modules`` receives the names hooked on a module, which must all be in ``store`` after the forward pass.
    The sublayer outputs (attn_out, mlp_out) are stored as copies: the block still uses the tensor after
    the hook ran, and Falcon's parallel block adds attn_out into the MLP's output in place.
    """

    def save(name, tensor, copy=False):
        tensor = tensor.detach()
        if offload:
            store[name] = tensor.to("cpu", copy=copy)  # synchronous: the copy is complete when read
        else:
            store[name] = tensor.clone() if copy else tensor

    def post(name):
        copy = name.endswith(("hook_attn_out", "hook_mlp_out"))
        return lambda _m, _a, out: save(name, output_tensor(out), copy)

    def pre(name):
        return lambda _m, args, kwargs: save(name, block_input(args, kwargs))

    def hook(module, name, kind):
        if name in wanted:
            on_modules.append(name)
            handles.append(module.register_forward_pre_hook(pre(name), with_kwargs=True) if kind == "pre"
                           else module.register_forward_hook(post(name)))

    handles: list = []
    hook(model.get_input_embeddings(), "hook_embed", "post")
    if adapter.pos_embed:
        hook(model.get_submodule(adapter.pos_embed), "hook_pos_embed", "post")
    for i, block in enumerate(adapter.block_list(model)):
        hook(block, f"blocks.{i}.hook_resid_pre", "pre")
        hook(block.get_submodule(adapter.attn), f"blocks.{i}.hook_attn_out", "post")
        hook(block.get_submodule(adapter.mlp), f"blocks.{i}.hook_mlp_out", "post")
        hook(block, f"blocks.{i}.hook_resid_post", "post")
        if wanted & {f"blocks.{i}.attn.hook_{x}" for x in "qkv"}:
            for j, path in enumerate(adapter.qkv):
                handles.append(block.get_submodule(path).register_forward_hook(post(f"blocks.{i}.attn.qkv{j}")))
                on_modules.append(f"blocks.{i}.attn.qkv{j}")
    norm = model.get_submodule(adapter.final_norm)
    hook(norm, "ln_final.hook_in", "pre")
    hook(norm, "ln_final.hook_normalized", "post")
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _check_finite(tensor: torch.Tensor, what: str) -> None:
    """One reduction per tensor; the full count (``require_finite``) only when the sum is not finite."""
    if not torch.isfinite(tensor.sum(dtype=torch.float32)):
        require_finite(tensor, what)


def _takes_logits_to_keep(model: nn.Module) -> bool:
    """Whether the model's forward takes ``logits_to_keep`` (BLOOM's does from transformers 5; before, passing
    it is an error)."""
    return "logits_to_keep" in inspect.signature(model.forward).parameters


def forward_kwargs(model: nn.Module, wanted: set[str]) -> dict:
    """The keyword arguments of a forward pass that captures ``wanted`` (concrete names, :func:`select`):
    ``output_attentions`` where attention patterns are wanted, and ``logits_to_keep=1`` where the logits are not
    (the head's matmul over the vocabulary, e.g. 32 × 128 × 50,257 logits for GPT-2, is then skipped). A bare
    forward pass timed against the capture passes the same (``fixtures.pool.ModelPool.capture``)."""
    kwargs = {"output_attentions": True} if any(n.endswith("attn.hook_pattern") for n in wanted) else {}
    if LOGITS not in wanted and _takes_logits_to_keep(model):
        kwargs["logits_to_keep"] = 1
    return kwargs


def _forward(model: nn.Module, adapter: Adapter, input_ids: torch.Tensor, wanted: set[str], offload: bool) -> dict:
    """One forward pass of one (micro-)batch: the wanted activations, derived ones included, and logits."""
    n_blocks = len(adapter.block_list(model))
    hooked = set(wanted)
    for i in range(n_blocks):
        if f"blocks.{i}.hook_resid_mid" in wanted:
            hooked |= {f"blocks.{i}.hook_resid_pre", f"blocks.{i}.hook_attn_out"}
    store: dict[str, torch.Tensor] = {}
    on_modules: list[str] = []
    with torch.no_grad(), _hooks(model, adapter, hooked, store, offload, on_modules):
        out = model(input_ids=input_ids, use_cache=False, **forward_kwargs(model, wanted))
    missing = [name for name in on_modules if name not in store]
    if missing:
        raise RuntimeError(f"the modules the {adapter.model_type!r} adapter names for {', '.join(missing)} did not "
                           f"run in {type(model).__name__}'s forward pass (a configuration that bypasses them?)")
    batch, seq = input_ids.shape
    for i in range(n_blocks):
        mlp = f"blocks.{i}.hook_mlp_out"
        if mlp in store:
            store[mlp] = store[mlp].reshape(batch, seq, -1)  # OPT's fc2 works on (batch * seq, d_model)
        if f"blocks.{i}.hook_resid_mid" in wanted:
            store[f"blocks.{i}.hook_resid_mid"] = store[f"blocks.{i}.hook_resid_pre"] + store[f"blocks.{i}.hook_attn_out"]
        projections = [store.pop(f"blocks.{i}.attn.qkv{j}") for j in range(len(adapter.qkv)) if f"blocks.{i}.attn.qkv{j}" in store]
        if projections:
            for x, tensor in zip("qkv", _split_qkv(adapter, model.config, projections)):
                if f"blocks.{i}.attn.hook_{x}" in wanted:
                    store[f"blocks.{i}.attn.hook_{x}"] = tensor
        if f"blocks.{i}.attn.hook_pattern" in wanted:
            if getattr(out, "attentions", None) is None:
                raise ValueError(f"{type(model).__name__} returns no attention pattern (it mixes positions without "
                                 "attention, e.g. the masked mixer): leave blocks.*.attn.hook_pattern out of needs")
            store[f"blocks.{i}.attn.hook_pattern"] = out.attentions[i].detach().to("cpu" if offload else out.attentions[i].device)
    store = {name: tensor for name, tensor in store.items() if name in wanted}
    if LOGITS in wanted:
        logits = out.logits.detach().float()
        store[LOGITS] = logits.cpu() if offload else logits
    return store


def run_with_cache(model: nn.Module, adapter: Adapter, input_ids: torch.Tensor, names: Iterable[str] | None = None,
                   micro_batch: int | None = None, offload: bool = False) -> ActivationCache:
    """Forward passes that capture the named canonical activations.

    Args:
        model: a HF causal LM in eval mode.
        adapter: its adapter (``models.adapters.adapter_for``).
        input_ids: (batch, seq) token ids on the model's input device.
        names: canonical names or fnmatch patterns (``blocks.*.hook_mlp_out``, ``logits``); None captures
            the default names (everything but attention patterns and q/k/v). Attention patterns need the
            eager attention implementation and memory quadratic in seq.
        micro_batch: sequences per forward pass; None runs the whole batch and, when the device runs out
            of memory, halves the micro-batch until it fits.
        offload: keep the captured tensors on the CPU (for models larger than their device's spare memory,
            or split over devices with a device_map).
    Returns:
        ActivationCache with the (batch, ...) tensors concatenated over micro-batches.
    Raises:
        NonFiniteError: if any captured activation or the logits hold NaN/inf.
        RuntimeError: if a module the adapter names did not run (the adapter does not fit the model).
        torch.OutOfMemoryError: if even one sequence does not fit.
    """
    n_blocks = len(adapter.block_list(model))
    wanted = select(adapter, n_blocks, None if names is None else list(names))
    size = micro_batch or input_ids.shape[0]
    while True:
        try:
            parts = [_forward(model, adapter, input_ids[start : start + size], wanted, offload)
                     for start in range(0, input_ids.shape[0], size)]
            break
        except torch.OutOfMemoryError:
            if micro_batch is not None or size == 1:
                raise
            size = (size + 1) // 2
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    sizes = [len(ids) for ids in input_ids.split(size)]

    def joined(name):  # GPT-2's position embeddings are (1, seq, d_model) whatever the batch: not concatenated
        per_batch = all(p[name].shape[0] == n for p, n in zip(parts, sizes))
        return torch.cat([p[name] for p in parts]) if len(parts) > 1 and per_batch else parts[0][name]

    store = {name: joined(name) for name in parts[0]}
    for name, tensor in store.items():
        _check_finite(tensor, "logits" if name == LOGITS else f"activation {name}")
    return ActivationCache(store, store.pop(LOGITS, None), n_blocks, adapter.pos_embed is not None)
