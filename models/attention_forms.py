"""What an attention module's scores are made of, and where its heads' outputs go, per architecture (S1.2, S1.3).

The instruments of ``latent_instruments.attention`` take tensors and a :class:`ScoreForm`; this module reads
both from a Hugging Face causal LM: the score scaling and the sliding window from its config, the rotary
embedding from its own rotary module and its modeling module's ``apply_rotary_pos_emb`` (:func:`score_form`),
the output projection whose input is the heads' outputs (:func:`output_projection`) and a hook that records
module inputs (:func:`module_inputs`). A new architecture is added here, not in the instruments.
"""

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from latent_instruments.attention import NotAnOddsRatio, ScoreForm, as_float64


def _modeling_function(model: nn.Module, name: str) -> Callable:
    """A function of the model's transformers modeling module (e.g. ``apply_rotary_pos_emb``), or a clear error.

    Raises:
        ValueError: naming the module, the function and the installed transformers version, if it is gone.
    """
    module = sys.modules[type(model).__module__]
    found = getattr(module, name, None)
    if found is None:
        import transformers

        raise ValueError(f"{module.__name__} has no {name} in transformers {transformers.__version__}: S1.2 rotates "
                         "queries and keys with it; models.attention_forms.score_form needs updating for this "
                         "version (the suite's supported range is in pyproject.toml)")
    return found


def _rotary_module(model: nn.Module) -> nn.Module:
    """The model-level rotary embedding module (``model.model.rotary_emb``, ``gpt_neox.rotary_emb``, ...)."""
    found = [(name, module) for name, module in model.named_modules() if name.split(".")[-1] == "rotary_emb"]
    if not found:
        raise ValueError(f"{type(model).__name__} has no rotary_emb module to rotate its queries and keys with")
    return min(found, key=lambda item: item[0].count("."))[1]


def _hf_rotary(model: nn.Module) -> tuple[Callable, int]:
    """Rotation by the model's rotary module and its modeling module's ``apply_rotary_pos_emb`` (rotate_half;
    GPT-NeoX and Phi-3 turn the first ``cos.shape[-1]`` dimensions and pass the rest)."""
    rotary = _rotary_module(model)
    apply = _modeling_function(model, "apply_rotary_pos_emb")

    def angles(x: torch.Tensor, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = rotary(x, torch.arange(seq, device=x.device)[None])  # (1, seq, rotary dims)
        return cos.double(), sin.double()

    def rotate(q, k):
        q, k = q.double(), k.double()
        cos, sin = angles(q, q.shape[1])
        return apply(q, k, cos, sin, unsqueeze_dim=2)  # q, k are (batch, seq, heads, d): heads on axis 2

    return rotate, angles(torch.zeros(1, dtype=torch.float64), 1)[0].shape[-1]


def _gptj_rotary(model: nn.Module) -> tuple[Callable, int]:
    """GPT-J's rotation: the modeling module's ``create_sinusoidal_positions`` on ``config.rotary_dim`` (else
    the hidden size, as GPT-J builds them) and its rotate_every_two ``apply_rotary_pos_emb``, on the first
    ``rotary_dim`` dimensions of each head (all of them if None)."""
    config = model.config
    sinusoids = _modeling_function(model, "create_sinusoidal_positions")
    apply = _modeling_function(model, "apply_rotary_pos_emb")
    dims = config.rotary_dim or head_dim(config)

    def rotate(q, k):
        sincos = sinusoids(q.shape[1], config.rotary_dim or config.hidden_size)
        sincos = sincos.to(device=q.device, dtype=torch.float64)[None]  # (1, seq, dims)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)  # (1, seq, dims / 2) each
        q, k = q.double(), k.double()
        return tuple(torch.cat([apply(x[..., :dims], sin, cos), x[..., dims:]], dim=-1) for x in (q, k))

    return rotate, dims


ROTARY = ("gpt_neox", "llama", "mistral", "qwen2", "gemma", "gemma2", "phi3", "falcon")  # HF rotate_half rotary


def head_dim(config) -> int:
    """d_head from a transformers config: ``head_dim`` where the config sets it, else hidden size / heads."""
    explicit = getattr(config, "head_dim", None)
    return int(explicit) if explicit else config.hidden_size // config.num_attention_heads


def score_scaling(config, layer: int) -> float:
    """s, the factor on ⟨q_i, k_j⟩ in one layer's attention scores, from the model's config alone.

    1/√d_head for every supported architecture, except: Gemma 2's ``query_pre_attn_scalar``^-½; GPT-2's
    ``scale_attn_weights=False`` (s = 1) and ``scale_attn_by_inverse_layer_idx`` (an extra 1/(layer + 1)).
    These are the configuration fields transformers documents, so the form does not depend on attribute names
    of the attention modules, which change between versions (GPT-J's ``scale_attn`` is ``scaling`` in 5.x).

    Args:
        config: the model's transformers config.
        layer: the block's index, from 0.
    """
    kind = config.model_type
    if kind == "gemma2":
        return float(config.query_pre_attn_scalar) ** -0.5
    scaling = head_dim(config) ** -0.5
    if kind == "gpt2":
        scaling = scaling if config.scale_attn_weights else 1.0
        if config.scale_attn_by_inverse_layer_idx:
            scaling /= float(layer + 1)
    return scaling


def sliding_window(config, layer: int) -> int | None:
    """One layer's sliding window from the config: ``sliding_window`` on the layers ``layer_types`` marks
    "sliding_attention" (Gemma 2, Qwen2), on every layer where the config has no ``layer_types`` (Mistral,
    Phi-3), None where it has no window."""
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None)
    if window is None or types is None:
        return window
    return window if types[layer] == "sliding_attention" else None


def score_form(model: nn.Module, layer: int) -> ScoreForm:
    """The :class:`ScoreForm` of one block's attention in a Hugging Face causal LM (eager attention).

    Handled: GPT-2 and OPT (no rotary; OPT multiplies the query by its scaling inside the module, after the
    q_proj output that is captured), GPT-NeoX (partial rotary), Llama, Mistral, Qwen2, Gemma, Gemma 2 without
    soft-capping, Phi-3 (partial rotary), Falcon with rotary, GPT-J (partial rotary, rotate_every_two). The
    scaling and window come from the config (:func:`score_scaling`, :func:`sliding_window`); the rotation from
    the model's rotary module and its modeling module's functions.

    Args:
        model: the causal LM (for its config and rotary module).
        layer: the block's index, from 0.
    Raises:
        NotAnOddsRatio: for ALiBi (BLOOM, Falcon with alibi=True) and soft-capped scores (Gemma 2 default).
        ValueError: for an architecture this module does not know (never a silent pass), or a modeling module
            that lacks the rotary function (naming the transformers version).
    """
    config = model.config
    kind = config.model_type
    if kind == "bloom" or (kind == "falcon" and getattr(config, "alibi", False)):
        raise NotAnOddsRatio(
            f"{kind} uses ALiBi: its scores are s·⟨q_i, k_j⟩ plus a per-head bias m_h·(j − i) linear in the "
            "distance between positions, a term of neither q nor k, so the pattern is not a Gaussian odds ratio of "
            "q and k alone")
    if kind == "gemma2" and getattr(config, "attn_logit_softcapping", None) is not None:
        raise NotAnOddsRatio(
            f"gemma2 soft-caps its scores, c·tanh(s·⟨q_i, k_j⟩ / c) with c = {config.attn_logit_softcapping}: a "
            "nonlinear squashing of the log odds ratio, so the pattern is not a Gaussian odds ratio of q and k")
    if kind in ("gpt2", "opt"):
        rotate, dims = as_float64, 0
    elif kind in ROTARY:
        rotate, dims = _hf_rotary(model)
    elif kind == "gptj":
        rotate, dims = _gptj_rotary(model)
    else:
        raise ValueError(f"no score form for architecture {kind!r} ({type(model).__name__}): S1.2 cannot "
                         "rebuild its scores from q and k; add it to models.attention_forms.score_form")
    return ScoreForm(score_scaling(config, layer), rotate, dims, sliding_window(config, layer))


OUTPUT_PROJECTION = {"gpt2": "c_proj", "opt": "out_proj", "gptj": "out_proj", "gpt_neox": "dense", "falcon": "dense",
                     "bloom": "dense"}  # the attention module's output projection; "o_proj" elsewhere (Llama family)


def output_projection(model: nn.Module, attention: nn.Module) -> nn.Module:
    """The linear map after an attention module's heads (W_O): its input is the heads' outputs, concatenated.

    Args:
        model: the causal LM (its ``config.model_type`` picks the name).
        attention: one of its attention modules.
    Raises:
        AttributeError: if the module has no projection of that name (an architecture this table lacks).
    """
    return attention.get_submodule(OUTPUT_PROJECTION.get(model.config.model_type, "o_proj"))


@contextmanager
def module_inputs(modules: list[nn.Module]) -> Iterator[list[list[torch.Tensor]]]:
    """Record the first input of each module (e.g. each attention's output projection) while in the context.

    The output projection's input is the heads' outputs before it, concatenated: (batch, seq, heads · d_head)
    for every architecture the suite supports. Each call appends one tensor (a forward pass in micro-batches
    calls it once per micro-batch); read them after the forward pass.

    Args:
        modules: the modules to watch, in order.
    Yields:
        one list per module of the detached inputs it received, in call order.
    """
    seen: list[list[torch.Tensor]] = [[] for _ in modules]

    def keep(index):
        def hook(_module, args, kwargs):
            tensor = args[0] if args else next(iter(kwargs.values()))
            seen[index].append(tensor.detach())
        return hook

    handles = [m.register_forward_pre_hook(keep(i), with_kwargs=True) for i, m in enumerate(modules)]
    try:
        yield seen
    finally:
        for handle in handles:
            handle.remove()
