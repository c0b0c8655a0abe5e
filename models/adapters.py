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

    The token embedding (weight W_E, (vocab, d_model)) and the output head are
    found through HF's own ``get_input_embeddings`` / ``get_output_embeddings``.
    """

    model_type: str
    pos_embed: str | None
    blocks: str
    attn: str
    mlp: str
    final_norm: str

    def block_list(self, model: nn.Module) -> nn.ModuleList:
        """The model's blocks, in order."""
        return model.get_submodule(self.blocks)



ADAPTERS: dict[str, Adapter] = {
    a.model_type: a
    for a in (
        Adapter("gpt2", "transformer.wpe", "transformer.h", "attn", "mlp", "transformer.ln_f"),
        # OPT's FFN is inline in the layer (fc1 -> act -> fc2): fc2's output is mlp_out
        Adapter("opt", "model.decoder.embed_positions", "model.decoder.layers", "self_attn", "fc2", "model.decoder.final_layer_norm"),
        Adapter("gpt_neox", None, "gpt_neox.layers", "attention", "mlp", "gpt_neox.final_layer_norm"),
        Adapter("llama", None, "model.layers", "self_attn", "mlp", "model.norm"),
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
