"""S1's shared helpers: where a model's attention modules are, and per-layer estimates for the figures."""

import numpy as np
from torch import nn

from latent_instruments.stats import Estimate, bootstrap

ALL_ROLES = ("trained", "untrained", "reference", "hf")  # S1.1-S1.3 are about the mechanism: every model


def attention_modules(subject) -> list[nn.Module]:
    """The attention module of each block: the parent of the adapter's q/k/v projection(s).

    Args:
        subject: a ``LoadedModel`` (``.model``, ``.adapter``).
    Returns:
        one module per block, in order (``GPT2Attention``, ``LlamaAttention``, ``FalconAttention``, ...).
    Raises:
        ValueError: for an adapter that names no q/k/v projection.
    """
    if not subject.adapter.qkv:
        raise ValueError(f"the {subject.adapter.model_type!r} adapter names no q/k/v projection")
    path = subject.adapter.qkv[0].rsplit(".", 1)[0]
    return [block.get_submodule(path) for block in subject.adapter.block_list(subject.model)]


def per_layer(units: np.ndarray, statistic, seed: int) -> list[Estimate]:
    """One bootstrap estimate per layer.

    Args:
        units: (batch, n_layers, ...) per-prompt values; prompts are resampled.
        statistic: maps (k, ...) one layer's units to a float.
        seed: the run's seed.
    """
    return [bootstrap(units[:, layer], statistic, seed=seed) for layer in range(units.shape[1])]

