"""A small masked mixer (S3.12): our GPT-2 with attention replaced by a causal convolution over positions.

After the author's flat masked mixer (github.com/blbadger/maskedmixers, ``mixer_lm``'s ``MixerBlock`` with
``expand_conv=False``): a ``Conv1d(length, length, 1)`` whose channels are the sequence positions, its weight
masked lower-triangular, so position i's output is a learned weighted sum of the (normed) inputs at positions
j ≤ i, the same weight for every feature. There is no position embedding (the weights are per position).
Kept from our GPT-2 recipe so that the mixing is the only difference at equal width: pre-LN blocks, the FFN
(4 × d_model, ReLU; the author's is GELU), a final LayerNorm (the author's has none), an untied head, and GPT-2's
initialisation (N(0, 0.02²) embeddings and linears; the author's embedding is PyTorch's N(0, 1)). The mixing's
bias starts at zero (Conv1d's starts uniform).

Registered with transformers' Auto classes as model type "masked_mixer" on import, so checkpoints save and
load as HF folders (safetensors) without remote code.
"""

import torch
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput


class MaskedMixerConfig(PretrainedConfig):
    """The masked mixer's shape."""

    model_type = "masked_mixer"

    def __init__(self, vocab_size: int = 65, n_embd: int = 96, n_layer: int = 4, n_positions: int = 128,
                 dropout: float = 0.0, layer_norm_epsilon: float = 1e-5, **kwargs):
        self.vocab_size = vocab_size  # tokens
        self.n_embd = n_embd  # residual stream width d_model
        self.n_layer = n_layer  # mixer blocks
        self.n_positions = n_positions  # longest sequence: the convolution has one channel per position
        self.dropout = dropout  # on the residual branches
        self.layer_norm_epsilon = layer_norm_epsilon
        kwargs.setdefault("tie_word_embeddings", False)
        super().__init__(**kwargs)

    @property
    def hidden_size(self) -> int:
        """d_model, under the name other code reads."""
        return self.n_embd

    @property
    def num_hidden_layers(self) -> int:
        """Blocks, under the name other code reads."""
        return self.n_layer


class MaskedConv(nn.Module):
    """Causal mixing over positions: out[b, i] = Σ_{j ≤ i} W[i, j] x[b, j] + c[i], (batch, seq, d_model) in and out.

    The weight is (n_positions, n_positions), used lower-triangular; a sequence of T < n_positions uses its
    top-left T × T block, which for a causal mixing is exactly what the first T positions of a longer one see.
    """

    def __init__(self, n_positions: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_positions, n_positions))
        self.bias = nn.Parameter(torch.zeros(n_positions))
        nn.init.kaiming_uniform_(self.weight, a=5 ** 0.5)  # as nn.Conv1d(length, length, 1) initialises it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        if t > self.weight.shape[0]:
            raise ValueError(f"sequence of {t} positions; this mixer has {self.weight.shape[0]}")
        mix = torch.tril(self.weight[:t, :t])  # (T, T)
        return torch.einsum("ij,bjf->bif", mix, x) + self.bias[:t, None]


class MaskedMixerBlock(nn.Module):
    """x + conv(ln_1(x)), then + mlp(ln_2(·)): (batch, seq, d_model) in and out."""

    def __init__(self, config: MaskedMixerConfig):
        super().__init__()
        d = config.n_embd
        self.ln_1 = nn.LayerNorm(d, eps=config.layer_norm_epsilon)
        self.conv = MaskedConv(config.n_positions)
        self.ln_2 = nn.LayerNorm(d, eps=config.layer_norm_epsilon)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(config.dropout)

    def forward(self, hidden_states: torch.Tensor, **_) -> tuple[torch.Tensor]:
        x = hidden_states + self.drop(self.conv(self.ln_1(hidden_states)))
        return (x + self.drop(self.mlp(self.ln_2(x))),)


class MaskedMixerBody(nn.Module):
    """Token embedding, blocks, final norm: ids (batch, seq) or embeddings -> (batch, seq, d_model)."""

    def __init__(self, config: MaskedMixerConfig):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.h = nn.ModuleList(MaskedMixerBlock(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)


class MaskedMixerForCausalLM(PreTrainedModel):
    """The masked mixer with its untied output head: logits (batch, seq, vocab)."""

    config_class = MaskedMixerConfig
    base_model_prefix = "transformer"

    def __init__(self, config: MaskedMixerConfig):
        super().__init__(config)
        self.transformer = MaskedMixerBody(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)  # GPT-2's
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.transformer.wte

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def forward(self, input_ids: torch.Tensor | None = None, inputs_embeds: torch.Tensor | None = None,
                **_) -> CausalLMOutput:
        """Logits for ids (batch, seq) or embeddings (batch, seq, d_model); other HF arguments are ignored."""
        x = self.transformer.wte(input_ids) if inputs_embeds is None else inputs_embeds
        for block in self.transformer.h:
            x = block(x)[0]
        return CausalLMOutput(logits=self.lm_head(self.transformer.ln_f(x)))


AutoConfig.register(MaskedMixerConfig.model_type, MaskedMixerConfig)
AutoModelForCausalLM.register(MaskedMixerConfig, MaskedMixerForCausalLM)
