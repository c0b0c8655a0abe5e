"""S4.1's measurements: parameters by module of a model, and S4's own model rebuilt from its code. test_parameters.py
records what these count; parameters_checks.py decides; S4's figures are in the topic's home, parameters.toml.
"""

from dataclasses import dataclass

import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel

from fixtures.homes import numbers
from latent_instruments.stats import Estimate
from models.adapters import Adapter, adapter_for

SOURCE_TOTAL, SOURCE_FFN = numbers(__file__, "SOURCE_TOTAL", "SOURCE_FFN")  # S4 Appendix I


# The FFN's modules where the adapter's ``mlp`` names only the summand module: OPT's FFN is inline (fc1, fc2),
# BLOOM's and Gemma 2's summand is the FFN's last linear / post-norm, their FFN is "mlp". Norms before or after
# the FFN are not FFN parameters (S4 counts its ``ffwd`` Sequential: the two linears and their biases).
FFN_MODULES = {"opt": ("fc1", "fc2"), "bloom": ("mlp",), "gemma2": ("mlp",)}


@dataclass(frozen=True)
class ParameterEstimates:
    """What S4.1's checks decide on (exact counts: no interval).

    Attributes:
        ffn_share: FFN parameters / all parameters of the model (fraction).
        source_miss: |FFN parameters of S4's shape built as the zoo's GPT-2 − S4's figure| (parameters).
    """

    ffn_share: Estimate
    source_miss: Estimate


@dataclass(frozen=True)
class ParameterCount:
    """A model's parameters by part (a tensor shared by two modules, e.g. tied embeddings, counted once).

    Attributes:
        total: every parameter.
        ffn: those of the blocks' FFNs.
        embeddings: the token embedding and, where learned, the position embedding.
        head: the output head where it is not the token embedding (untied), else 0.
    """

    total: int
    ffn: int
    embeddings: int
    head: int

    @property
    def ffn_share(self) -> float:
        """FFN parameters / all parameters, in [0, 1]."""
        return self.ffn / self.total

    @property
    def ffn_share_of_blocks(self) -> float:
        """FFN parameters / parameters outside embeddings and head (the blocks and final norm), in [0, 1]."""
        return self.ffn / (self.total - self.embeddings - self.head)


def ffn_modules(adapter: Adapter) -> tuple[str, ...]:
    """Paths, relative to a block, of the modules that make up its FFN."""
    return FFN_MODULES.get(adapter.model_type, (adapter.mlp,))


def _numel(modules: list[nn.Module]) -> int:
    unique = {id(p): p for m in modules for p in m.parameters()}
    return sum(p.numel() for p in unique.values())


def count_parameters(model: nn.Module, adapter: Adapter) -> ParameterCount:
    """A Hugging Face causal LM's parameters by part (S4.1); works on the meta device.

    Args:
        model: the model; its weights may be on the meta device.
        adapter: its adapter (``models.adapters.adapter_for``).
    Returns:
        the :class:`ParameterCount`.
    Raises:
        AttributeError: if a module the adapter or ``FFN_MODULES`` names is missing.
    """
    ffn = [block.get_submodule(path) for block in adapter.block_list(model) for path in ffn_modules(adapter)]
    embeddings = [model.get_input_embeddings()]
    if adapter.pos_embed:
        embeddings.append(model.get_submodule(adapter.pos_embed))
    head = model.get_output_embeddings()
    tied = head is not None and head.weight is model.get_input_embeddings().weight
    return ParameterCount(total=_numel([model]), ffn=_numel(ffn), embeddings=_numel(embeddings),
                          head=0 if head is None or tied else _numel([head]))


class _Head(nn.Module):
    def __init__(self, n_embed: int, head_size: int):
        super().__init__()
        self.key = nn.Linear(n_embed, head_size, bias=False)
        self.query = nn.Linear(n_embed, head_size, bias=False)
        self.value = nn.Linear(n_embed, head_size, bias=False)


class _Block(nn.Module):
    def __init__(self, n_embed: int, n_head: int):
        super().__init__()
        self.sa = nn.Module()
        self.sa.heads = nn.ModuleList([_Head(n_embed, n_embed // n_head) for _ in range(n_head)])
        self.sa.proj = nn.Linear(n_embed, n_embed)
        self.ffwd = nn.Sequential(nn.Linear(n_embed, 4 * n_embed), nn.ReLU(), nn.Linear(4 * n_embed, n_embed))
        self.ln1, self.ln2 = nn.LayerNorm(n_embed), nn.LayerNorm(n_embed)


def s4_source_model(vocab_size: int = 65, n_embed: int = 384, n_head: int = 6, n_layer: int = 6,
                    block_size: int = 256) -> nn.Module:
    """S4's model's parameters, as its code declares them, on the meta device (no forward pass).

    Mirrors ``TransformerLanguageModel`` of spather/transformer-experiments (models/transformer.py,
    Karpathy's nanoGPT-lecture model): token and position embeddings; per block, bias-free key, query and
    value projections per head, an output projection with bias, an FFN of two linears with biases
    (n_embed → 4 n_embed → n_embed, ReLU), two LayerNorms; a final LayerNorm; an untied output head with bias.
    Defaults: S4's vocabulary (65 TinyShakespeare characters), n_embed 384, 6 heads, 6 blocks, context 256.
    """
    with torch.device("meta"):
        model = nn.Module()
        model.token_embedding_table = nn.Embedding(vocab_size, n_embed)
        model.position_embedding_table = nn.Embedding(block_size, n_embed)
        model.blocks = nn.Sequential(*[_Block(n_embed, n_head) for _ in range(n_layer)])
        model.ln_f = nn.LayerNorm(n_embed)
        model.lm_head = nn.Linear(n_embed, vocab_size)
    return model


def s4_source_count() -> ParameterCount:
    """S4's model rebuilt from its code, counted by part (FFN: every block's ``ffwd``, as S4 Appendix I counts)."""
    model = s4_source_model()
    return ParameterCount(total=_numel([model]), ffn=_numel([block.ffwd for block in model.blocks]),
                          embeddings=_numel([model.token_embedding_table, model.position_embedding_table]),
                          head=_numel([model.lm_head]))


def s4_shape_as_gpt2() -> nn.Module:
    """S4's shape as a Hugging Face GPT-2 (the zoo's architecture) on the meta device.

    It differs from S4's code in two places only: GPT-2's fused q/k/v projection has biases (+3 × 384 per
    block) and its output head has none (−65), so it has SOURCE_TOTAL + 6,912 − 65 = 10,795,776 parameters, with
    the same SOURCE_FFN in the FFNs.
    """
    config = GPT2Config(vocab_size=65, n_embd=384, n_layer=6, n_head=6, n_positions=256, n_inner=4 * 384,
                        activation_function="relu", tie_word_embeddings=False, bos_token_id=0, eos_token_id=0)
    with torch.device("meta"):
        return GPT2LMHeadModel(config)


@dataclass(frozen=True)
class ParameterShown:
    """What S4.1's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        count: the model's :class:`ParameterCount`.
        gpt2_count: S4's shape built as the zoo's GPT-2 (:func:`s4_shape_as_gpt2`), counted the same way.
    """

    count: ParameterCount
    gpt2_count: ParameterCount


def _exact(value: float) -> Estimate:
    """A count as an estimate: exact, no interval."""
    return Estimate(value, value, value, 1.0, 1)


def measure_parameters(subject) -> tuple[ParameterEstimates, ParameterShown]:
    """S4.1's measurement (exact counts): the model's FFN share, and how far the same count is from S4's figure on
    S4's shape built as the zoo's GPT-2 (the count's control): (the checks' estimates, the counts the record shows).

    Args:
        subject: the loaded model (``LoadedModel``).
    Raises:
        ValueError: as :func:`count_parameters`.
    """
    count = count_parameters(subject.model, subject.adapter)
    gpt2 = s4_shape_as_gpt2()
    gpt2_count = count_parameters(gpt2, adapter_for(gpt2))
    return (ParameterEstimates(_exact(count.ffn_share), _exact(abs(gpt2_count.ffn - SOURCE_FFN))),
            ParameterShown(count, gpt2_count))
