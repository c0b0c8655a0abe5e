"""Small declarative per-architecture adapters to canonical activation names.

Canonical names follow TransformerLens:

    hook_embed                      token embeddings, before positions (batch, seq, d_model)
    hook_pos_embed                  learned position embeddings (batch, seq, d_model); absent for rotary models
    blocks.{i}.hook_resid_pre       block input, the residual stream (batch, seq, d_model)
    blocks.{i}.hook_attn_out        attention output added to the stream (batch, seq, d_model)
    blocks.{i}.hook_resid_mid       resid_pre + attn_out (batch, seq, d_model)
    blocks.{i}.hook_mlp_out         feed-forward (FFN/MLP) output added to the stream (batch, seq, d_model)
    blocks.{i}.hook_resid_post      block output (batch, seq, d_model)
    blocks.{i}.attn.hook_pattern    attention pattern (batch, heads, seq_q, seq_k), only on request
    blocks.{i}.attn.hook_q|k|v      per-head query/key/value projections (batch, seq, heads, d_head), only
                                    on request; before rotary embedding and score scaling; k and v have
                                    the key-value head count (grouped-query attention)
    ln_final.hook_in                final norm input (batch, seq, d_model)
    ln_final.hook_normalized        final norm output (batch, seq, d_model)

An adapter only names module paths; ``models.capture`` does the hooking. The
self-test ``tests/test_adapters.py`` checks resid_post = resid_pre + attn_out
+ mlp_out for every adapter before any claim trusts it. For GPT-NeoX's
parallel residual (attention and FFN both read resid_pre) resid_mid is still
defined as resid_pre + attn_out, as TransformerLens does.
"""

from dataclasses import dataclass

from torch import nn


class UnsupportedArchitectureError(ValueError):
    """Raised for a model whose ``config.model_type`` has no adapter."""


@dataclass(frozen=True)
class Adapter:
    """Where the canonical activations live in one Hugging Face architecture.

    Attributes (module paths, dotted, as in ``model.named_modules()``):
        model_type: the HF ``config.model_type`` this adapter serves.
        pos_embed: learned absolute position embedding, or None (rotary).
        blocks: the ModuleList of transformer blocks.
        attn: attention module, relative to a block; output[0] is attn_out.
        mlp: FFN module (or its last linear), relative to a block; output is mlp_out.
        final_norm: the norm after the last block (LayerNorm or RMSNorm).
        qkv: query/key/value projections relative to a block: three paths (q, k, v), or one fused path.
        qkv_layout: for a fused projection, how its last axis is laid out: "concat" ([q | k | v], GPT-2)
            or "per_head" (per head [q_h | k_h | v_h], GPT-NeoX); "" for separate projections.

    The token embedding (weight W_E, (vocab, d_model)) and the output head are
    found through HF's own ``get_input_embeddings`` / ``get_output_embeddings``.
    """

    model_type: str
    pos_embed: str | None
    blocks: str
    attn: str
    mlp: str
    final_norm: str
    qkv: tuple[str, ...] = ()
    qkv_layout: str = ""

    def block_list(self, model: nn.Module) -> nn.ModuleList:
        """The model's blocks, in order."""
        return model.get_submodule(self.blocks)



ADAPTERS: dict[str, Adapter] = {
    a.model_type: a
    for a in (
        Adapter("gpt2", "transformer.wpe", "transformer.h", "attn", "mlp", "transformer.ln_f",
                ("attn.c_attn",), "concat"),
        # OPT's FFN is inline in the layer (fc1 -> act -> fc2): fc2's output is mlp_out
        Adapter("opt", "model.decoder.embed_positions", "model.decoder.layers", "self_attn", "fc2", "model.decoder.final_layer_norm",
                ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")),
        Adapter("gpt_neox", None, "gpt_neox.layers", "attention", "mlp", "gpt_neox.final_layer_norm",
                ("attention.query_key_value",), "per_head"),
        Adapter("llama", None, "model.layers", "self_attn", "mlp", "model.norm",
                ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")),
    )
}


def adapter_for(model: nn.Module) -> Adapter:
    """The adapter for a HF causal LM, by its ``config.model_type``.

    Raises:
        UnsupportedArchitectureError: naming the architecture and the supported ones.
    """
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in ADAPTERS:
        raise UnsupportedArchitectureError(
            f"no activation adapter for architecture {model_type!r} ({type(model).__name__}); "
            f"supported: {', '.join(sorted(ADAPTERS))}. Add an Adapter to models/adapters.py "
            "and check it with tests/test_adapters.py"
        )
    return ADAPTERS[model_type]
