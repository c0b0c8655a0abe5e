"""S0's shared work: the residual stream's power spectra by layer, computed once per model."""

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from latent_instruments.spectra import power_spectral_density
from models.zoo import resolve

RESIDUAL_NEEDS = ("hook_embed", "blocks.0.hook_resid_pre", "blocks.*.hook_resid_post")  # what the spectra read


@dataclass(frozen=True)
class LayerSpectra:
    """Per-sequence power spectra of the residual stream by depth (S0 Fig 2/3).

    Attributes:
        labels: layer labels, "embed", "embed+pos" (learned positions only), "block 1" .. "block L".
        freqs: (n_freq,) frequencies in cycles per token, from ``torch.fft.rfftfreq``.
        psd: (batch, n_layers, n_freq) power, |rfft|² averaged over d_model, first token dropped.
    """

    labels: list[str]
    freqs: torch.Tensor
    psd: np.ndarray


def layer_spectra(captured) -> LayerSpectra:
    """The :class:`LayerSpectra` of a captured prompt batch (needs ``RESIDUAL_NEEDS``)."""
    layers = captured.cache.hidden_states()
    spectra = [power_spectral_density(h.float().cpu()) for _, h in layers]
    return LayerSpectra([label for label, _ in layers], spectra[0][0],
                        torch.stack([psd for _, psd in spectra], dim=1).numpy())


@pytest.fixture(scope="session")
def residual_spectra(pool, model_name) -> LayerSpectra:
    """The subject's residual-stream spectra, computed once per model for every S0 test."""
    return layer_spectra(pool.capture(model_name))


@pytest.fixture(scope="session")
def twin_residual_spectra(pool, model_name) -> LayerSpectra:
    """The same for the subject's untrained twin (S0.5's control)."""
    return layer_spectra(pool.capture(resolve(model_name).twin))
