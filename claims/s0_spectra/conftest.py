"""S0's shared work: every spectrum the family reads, computed once per model.

The spectra follow S0's code: |rfft|² along the sequence, first token dropped,
averaged over d_model (then over sequences, which are the bootstrap unit). They
are taken of the residual stream before the final norm (S0's hidden states), of
each block's attention and MLP residuals (what the block adds), and of
variants: Hann-windowed, mean-removed ones (the leakage checks), the token
embeddings with their positions shuffled within each sequence (white by
construction: S0.1's control), and every state with its positions shuffled
(``Shuffled``: the null of S0.3-S0.9's controls, which keeps each token's state
and destroys only the order along the sequence).
"""

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from latent_instruments.spectra import LogBins, PowerLawFit, fit_power_law, power_spectral_density
from latent_instruments.stats import Estimate, bootstrap
from models.zoo import resolve

SPECTRA_NEEDS = ("hook_embed", "blocks.*.hook_resid_pre", "blocks.*.hook_resid_post", "blocks.*.hook_attn_out",
                 "blocks.*.hook_mlp_out")  # what every S0 test declares (the shared fixture reads them all)


@dataclass(frozen=True)
class Shuffled:
    """The same states with positions 1..T−1 shuffled within each sequence (one permutation per sequence, shared by
    every layer; the dropped first token stays first): white by construction, with every token's state kept.

    Attributes: hidden, hidden_nopos (batch, n_layers, n_freq), attn, mlp (batch, n_blocks, n_freq), as in
    ModelSpectra.
    """

    hidden: np.ndarray
    hidden_nopos: np.ndarray
    attn: np.ndarray
    mlp: np.ndarray


@dataclass(frozen=True)
class ModelSpectra:
    """One model's spectra on its held-out prompt batch (S0 Fig 2-7).

    Attributes:
        bins: log-spaced frequency bins of the spectra.
        labels: hidden-state layer labels: "embed", "embed+pos" (learned positions only), "block 1" .. "block L".
        hidden: (batch, n_layers, n_freq) power of the hidden states, S0's procedure.
        hidden_hann: (batch, n_layers, n_freq) the same, Hann-windowed with each sequence's mean removed.
        hidden_nopos: (batch, n_layers, n_freq) the hidden states with the learned position embedding subtracted
            at every layer (the residual stream carries it unchanged to the end): S0.5 compares without the
            position bump of S0.2. Equal to ``hidden`` where positions are not learned.
        attn: (batch, n_blocks, n_freq) power of each block's attention residual (attn_out).
        mlp: (batch, n_blocks, n_freq) power of each block's MLP residual (mlp_out).
        update: (batch, n_blocks, n_freq) power of each block's whole update, resid_post − resid_pre.
        update_hann: (batch, n_blocks, n_freq) the same, Hann-windowed with each sequence's mean removed.
        shuffled_embed: (batch, n_freq) power of the token embeddings with positions shuffled per sequence.
        shuffled: the hidden states (with and without positions) and the residuals with positions 1..T−1 shuffled
            (:class:`Shuffled`), the controls' null.
        positions: tokens per sequence before the first is dropped.
    """

    bins: LogBins
    labels: list[str]
    hidden: np.ndarray
    hidden_hann: np.ndarray
    hidden_nopos: np.ndarray
    attn: np.ndarray
    mlp: np.ndarray
    update: np.ndarray
    update_hann: np.ndarray
    shuffled_embed: np.ndarray
    shuffled: Shuffled
    positions: int

    @property
    def n_blocks(self) -> int:
        """Number of transformer blocks L."""
        return self.attn.shape[1]

    @property
    def start(self) -> int:
        """Index in ``labels`` of the first block's input: "embed+pos" where positions are learned, else "embed"."""
        return self.labels.index("embed+pos") if "embed+pos" in self.labels else 0


def _psd(x: torch.Tensor, window: str | None = None) -> torch.Tensor:
    return power_spectral_density(x.float().cpu(), window=window)[1]


def model_spectra(captured, seed: int) -> ModelSpectra:
    """The :class:`ModelSpectra` of a captured prompt batch (needs ``SPECTRA_NEEDS``).

    Args:
        captured: the pool's capture of one model (``Captured``).
        seed: seeds the position shuffle of the token embeddings.
    """
    cache = captured.cache
    layers = cache.hidden_states()
    n = cache.n_blocks
    embed = cache["hook_embed"].float().cpu()  # (batch, seq, d_model)
    generator = torch.Generator().manual_seed(seed)
    order = torch.stack([torch.randperm(embed.shape[1], generator=generator) for _ in range(embed.shape[0])])
    shuffled = torch.take_along_dim(embed, order[:, :, None], dim=1)
    batch, seq = embed.shape[:2]
    rest = torch.stack([1 + torch.randperm(seq - 1, generator=generator) for _ in range(batch)])
    keep_first = torch.cat([torch.zeros(batch, 1, dtype=torch.long), rest], dim=1)  # position 0 stays first
    freqs = power_spectral_density(embed[:1])[0]
    hidden = [h for _, h in layers]
    labels = [label for label, _ in layers]
    learned_positions = "embed+pos" in labels
    positions = hidden[labels.index("embed+pos")] - hidden[0] if learned_positions else None
    hidden_nopos = [h - positions for h in hidden] if learned_positions else hidden
    attn = [cache[f"blocks.{i}.hook_attn_out"] for i in range(n)]
    mlp = [cache[f"blocks.{i}.hook_mlp_out"] for i in range(n)]
    update = [cache[f"blocks.{i}.hook_resid_post"] - cache[f"blocks.{i}.hook_resid_pre"] for i in range(n)]

    def stack(tensors, window=None) -> np.ndarray:
        return torch.stack([_psd(t, window) for t in tensors], dim=1).numpy()

    def shuffled_stack(tensors) -> np.ndarray:
        return stack([torch.take_along_dim(t.float().cpu(), keep_first[:, :, None], dim=1) for t in tensors])

    hidden_psd = stack(hidden)
    shuffled_hidden = shuffled_stack(hidden)
    return ModelSpectra(
        bins=LogBins.of(freqs),
        labels=labels,
        hidden=hidden_psd,
        hidden_hann=stack(hidden, window="hann"),
        hidden_nopos=stack(hidden_nopos) if learned_positions else hidden_psd,
        attn=stack(attn),
        mlp=stack(mlp),
        update=stack(update),
        update_hann=stack(update, window="hann"),
        shuffled_embed=_psd(shuffled).numpy(),
        shuffled=Shuffled(shuffled_hidden, shuffled_stack(hidden_nopos) if learned_positions else shuffled_hidden,
                          shuffled_stack(attn), shuffled_stack(mlp)),
        positions=embed.shape[1],
    )


def early_blocks(n_blocks: int) -> int:
    """How many of an L-block model's first blocks stand for S0's "first three layers" of OPT-125m's 12.

    The same fraction, a quarter, rounded and at least one: 1 of 4 blocks, 2 of 6, 3 of 12.
    """
    return max(1, round(n_blocks * 3 / 12))


def mean_fit(bins: LogBins, units: np.ndarray) -> PowerLawFit:
    """The power-law fit of the mean spectrum over sequences; units (batch, ..., n_freq) → fields (...)."""
    return fit_power_law(bins, units.mean(axis=0))


def estimate(units: np.ndarray, statistic, seed: int) -> Estimate:
    """Bootstrap over sequences (the first axis of ``units``) of a statistic of the resampled units."""
    return bootstrap(units, statistic, seed=seed)


def beyond_null(real: np.ndarray, null: np.ndarray, statistic, seed: int) -> Estimate:
    """statistic(real) − statistic(null), bootstrapped over sequences with the pairs kept together.

    Args:
        real, null: (batch, ...) units of the same shape, row i of both from sequence i (e.g. a spectrum and
            the spectrum of the same states with positions shuffled, ``Shuffled``).
        statistic: units (batch, ...) → float.
    Raises:
        ValueError: if the shapes differ.
    """
    if real.shape != null.shape:
        raise ValueError(f"real and null units must have one shape, got {real.shape} and {null.shape}")
    paired = np.stack([real, null], axis=1)
    return estimate(paired, lambda u: statistic(u[:, 0]) - statistic(u[:, 1]), seed)


def loglog_panels(title: str, labels: list[str], psd: np.ndarray) -> dict[str, list[float]]:
    """{title: {label: mean spectrum}} for a "loglog" figure; psd (batch, n_layers, n_freq)."""
    mean = psd.mean(axis=0)
    return {title: {label: mean[i].tolist() for i, label in enumerate(labels)}}


def _spectra_of(pool, name: str, scale: int, seed: int) -> ModelSpectra:
    captured = pool.capture(name, scale)
    return captured.memo("spectra", lambda: model_spectra(captured, seed))


@pytest.fixture
def spectra(pool, model_name, settings, sample_scale) -> ModelSpectra:
    """The subject's :class:`ModelSpectra`, computed once per model (and per look's batch) for every S0 test."""
    return _spectra_of(pool, model_name, sample_scale, settings.seed)


@pytest.fixture
def twin_spectra(pool, model_name, settings, sample_scale) -> ModelSpectra:
    """The same for the subject's untrained twin (the control of S0.2 and S0.5), on the same token ids."""
    return _spectra_of(pool, resolve(model_name).twin, sample_scale, settings.seed)


@pytest.fixture
def trained_spectra(pool, model_name, settings, sample_scale) -> ModelSpectra | None:
    """For an untrained twin, its trained counterpart's spectra on the same token ids (``models(..., trained=True)``):
    S0.6 and S0.7 take their tolerance from its final hidden state, a law S0 calls clean. None for a subject
    without one (a random-init reference)."""
    trained = resolve(model_name).trained
    return None if trained is None else _spectra_of(pool, trained, sample_scale, settings.seed)
