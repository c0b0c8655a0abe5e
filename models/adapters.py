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
+ mlp_out for every adapter before any claim trusts it. For the parallel
residual of GPT-NeoX, GPT-J and Falcon (attention and FFN both read resid_pre)
resid_mid is still defined as resid_pre + attn_out, as TransformerLens does.

``attn`` and ``mlp`` name the module whose output *is* the summand added to
the stream. That is not always the sublayer module itself: OPT's FFN is inline
(its last linear, ``fc2``); BLOOM's attention and MLP modules add the residual
inside (``dropout_add(out, residual)``), so their last linears are named;
Gemma 2 normalises each sublayer's output before adding it, so its post-norms
are named.

Architectures without attention + FFN residual blocks (state-space and
recurrent models such as Mamba or RWKV, and hybrids that interleave such
layers with attention) are refused by :func:`adapter_for` with the reason.
"""

from dataclasses import dataclass

from torch import nn


class UnsupportedArchitectureError(ValueError):
    """Raised for a model whose ``config.model_type`` has no adapter (or can have none)."""


_NO_ATTENTION_BLOCKS = ("the claims concern transformer blocks, an attention sublayer and an FFN sublayer each "
                        "adding its output to the residual stream; {kind} has no such blocks, so there is no "
                        "attn_out, mlp_out or attention pattern to capture and no adapter can apply")
_RECURRENT = "this state-space / recurrent architecture (its blocks mix tokens by a recurrence, not by attention)"
_HYBRID = "this hybrid architecture (it interleaves state-space, recurrent or linear-attention layers with attention " \
          "layers, so not every block is one)"
NOT_TRANSFORMERS: dict[str, str] = {  # config.model_type -> why no adapter can apply
    **{t: _NO_ATTENTION_BLOCKS.format(kind=_RECURRENT) for t in ("mamba", "mamba2", "falcon_mamba", "rwkv", "xlstm")},
    **{t: _NO_ATTENTION_BLOCKS.format(kind=_HYBRID) for t in (
        "jamba", "zamba", "zamba2", "bamba", "falcon_h1", "granitemoehybrid", "nemotron_h", "recurrent_gemma",
        "lfm2", "qwen3_next")},
}


@dataclass(frozen=True)
class Adapter:
    """Where the canonical activations live in one Hugging Face architecture.

    Attributes (module paths, dotted, as in ``model.named_modules()``):
        model_type: the HF ``config.model_type`` this adapter serves.
        pos_embed: learned absolute position embedding, or None (rotary).
        blocks: the ModuleList of transformer blocks.
        attn: relative to a block, the module whose output (output[0] for a tuple) is attn_out, the summand
            added to the stream: the attention module, or its last linear (BLOOM) or post-norm (Gemma 2).
        mlp: likewise for mlp_out: the FFN module, or its last linear (OPT, BLOOM) or post-norm (Gemma 2).
        final_norm: the norm after the last block (LayerNorm or RMSNorm).
        qkv: query/key/value projections relative to a block: three paths (q, k, v), or one fused path.
        qkv_layout: for a fused projection, how its last axis is laid out: "concat" ([q | k | v], widths
            heads·d_head, kv_heads·d_head, kv_heads·d_head: GPT-2, Phi-3) or "per_head" (per key-value
            head, its group of queries then its key and value, [q_1 .. q_g | k | v] with g = heads /
            kv_heads: GPT-NeoX and BLOOM with g = 1, i.e. [q_h | k_h | v_h]; Falcon, all three of its
            layouts); "" for separate projections. The key-value head count of a fused projection is
            read off its width, (heads + 2 kv_heads)·d_head.

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
        # the masked mixer (models.mixer, S3.12): a causal convolution over positions in attention's place
        Adapter("masked_mixer", None, "transformer.h", "conv", "mlp", "transformer.ln_f"),
        # OPT's FFN is inline in the layer (fc1 -> act -> fc2): fc2's output is mlp_out
        Adapter("opt", "model.decoder.embed_positions", "model.decoder.layers", "self_attn", "fc2", "model.decoder.final_layer_norm",
                ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")),
        Adapter("gpt_neox", None, "gpt_neox.layers", "attention", "mlp", "gpt_neox.final_layer_norm",
                ("attention.query_key_value",), "per_head"),
        Adapter("llama", None, "model.layers", "self_attn", "mlp", "model.norm",
                ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")),
        Adapter("mistral", None, "model.layers", "self_attn", "mlp", "model.norm",
                ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")),
        # Qwen2: Llama's layout; q/k/v have biases (captured, being part of the projections' outputs)
        Adapter("qwen2", None, "model.layers", "self_attn", "mlp", "model.norm",
                ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")),
        # Gemma: Llama's layout; the embedding module scales by √d_model itself, so hook_embed is the scaled
        # embedding and equals blocks.0.hook_resid_pre
        Adapter("gemma", None, "model.layers", "self_attn", "mlp", "model.norm",
                ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")),
        # Gemma 2 RMS-normalises each sublayer's output before adding it: the summands are the post-norms'
        # outputs. (Its "post_attention_layernorm" is that post-norm; the FFN's input norm is
        # "pre_feedforward_layernorm".) Its logits are soft-capped (tanh) after the head.
        Adapter("gemma2", None, "model.layers", "post_attention_layernorm", "post_feedforward_layernorm", "model.norm",
                ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")),
        # Phi-3: fused qkv_proj laid out [q | k | v] (grouped-query widths); residual dropouts are no-ops in eval
        Adapter("phi3", None, "model.layers", "self_attn", "mlp", "model.norm", ("self_attn.qkv_proj",), "concat"),
        # GPT-J: parallel block (attention and FFN both read ln_1(resid_pre)); partial rotary on q and k
        Adapter("gptj", None, "transformer.h", "attn", "mlp", "transformer.ln_f",
                ("attn.q_proj", "attn.k_proj", "attn.v_proj")),
        # Falcon: parallel block (Falcon-7B, and the "new decoder architecture" of Falcon-40B/180B), or
        # sequential; rotary, or ALiBi with alibi=True. The block adds attn_out into the MLP's output tensor in
        # place: models.capture copies sublayer outputs before that. The fused query_key_value is "per_head"
        # in all three layouts (multi-query Falcon-7B: one group, [q_1 .. q_H | k | v])
        Adapter("falcon", None, "transformer.h", "self_attention", "mlp", "transformer.ln_f",
                ("self_attention.query_key_value",), "per_head"),
        # BLOOM: ALiBi (no position embedding); the embedding is LayerNormed (word_embeddings_layernorm) before
        # block 0, so blocks.0.hook_resid_pre is the normed embedding and hook_embed the raw one. Its attention
        # and MLP modules return summand + residual, so the summands are their last linears' outputs
        # (self_attention.dense, mlp.dense_4h_to_h; the pretraining_tp > 1 slicing that slow_but_exact=True
        # selects bypasses them, and the capture then fails loudly). Assumes the released models'
        # apply_residual_connection_post_layernorm=False; with True the residual is the normed input and the
        # identity check at load refuses the model.
        Adapter("bloom", None, "transformer.h", "self_attention.dense", "mlp.dense_4h_to_h", "transformer.ln_f",
                ("self_attention.query_key_value",), "per_head"),
    )
}


def adapter_for(model: nn.Module) -> Adapter:
    """The adapter for a HF causal LM, by its ``config.model_type``.

    Raises:
        UnsupportedArchitectureError: naming the architecture and the supported ones; for a model without
            attention + FFN residual blocks (Mamba, RWKV, hybrids: ``NOT_TRANSFORMERS``), saying why the
            claims do not apply to it.
    """
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type in NOT_TRANSFORMERS:
        raise UnsupportedArchitectureError(
            f"architecture {model_type!r} ({type(model).__name__}) is not supported: {NOT_TRANSFORMERS[model_type]}"
        )
    if model_type not in ADAPTERS:
        raise UnsupportedArchitectureError(
            f"no activation adapter for architecture {model_type!r} ({type(model).__name__}); "
            f"supported: {', '.join(sorted(ADAPTERS))}. Add an Adapter to models/adapters.py "
            "and check it with tests/test_adapters.py"
        )
    return ADAPTERS[model_type]
