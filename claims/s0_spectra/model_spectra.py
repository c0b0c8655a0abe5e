"""S0's shared work: every spectrum the family reads, computed once per model (the fixtures that hand them to the
tests, ``spectra`` and ``twin_spectra``, are in conftest.py).

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

import functools

import numpy as np
import pytest
import torch

from latent_instruments.spectra import LogBins, PowerLawFit, fit_power_law, power_spectral_density
from latent_instruments.stats import Estimate, bootstrap

SPECTRA_NEEDS = ("hook_embed", "blocks.*.hook_resid_pre", "blocks.*.hook_resid_post", "blocks.*.hook_attn_out",
                 "blocks.*.hook_mlp_out")  # what every S0 test declares (the shared fixture reads them all)


class Shuffled:
    """The same states with positions 1..T−1 shuffled within each sequence (one permutation per sequence, shared by
    every layer; the dropped first token stays first): white by construction, with every token's state kept.

    Attributes (each computed on first use): hidden, hidden_nopos (batch, n_layers, n_freq), attn, mlp
    (batch, n_blocks, n_freq), as in :class:`ModelSpectra`.
    """

    def __init__(self, spectra: "ModelSpectra"):
        self._of = spectra

    def _stack(self, tensors) -> np.ndarray:
        order = self._of.keep_first[:, :, None]
        return _stack([torch.take_along_dim(t.float(), order.to(t.device), dim=1) for t in tensors])

    @functools.cached_property
    def hidden(self) -> np.ndarray:
        return self._stack(self._of.hidden_states)

    @functools.cached_property
    def hidden_nopos(self) -> np.ndarray:
        return self._stack(self._of.hidden_states_nopos) if self._of.learned_positions else self.hidden

    @functools.cached_property
    def attn(self) -> np.ndarray:
        return self._stack(self._of.block_outputs("attn_out"))

    @functools.cached_property
    def mlp(self) -> np.ndarray:
        return self._stack(self._of.block_outputs("mlp_out"))


def _psd(x: torch.Tensor, window: str | None = None) -> torch.Tensor:
    """(batch, n_freq) power of (batch, seq, d_model) states, computed where they are (a GPU's rfft), on the CPU."""
    return power_spectral_density(x.float(), window=window)[1].cpu()


def _stack(tensors, window: str | None = None) -> np.ndarray:
    """(batch, len(tensors), n_freq) power spectra of a list of (batch, seq, d_model) states."""
    return torch.stack([_psd(t, window) for t in tensors], dim=1).numpy()


class ModelSpectra:
    """One model's spectra on its held-out prompt batch (S0 Fig 2-7), each computed on first use (a later look's
    larger batch needs only what its undecided claims read).

    Attributes:
        bins: log-spaced frequency bins of the spectra.
        labels: hidden-state layer labels: "embed", "embed+pos" (learned positions only), "block 1" .. "block L".
        positions: tokens per sequence before the first is dropped.
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
    """

    def __init__(self, cache, seed: int, rows: slice | None = None, batch: int | None = None):
        """Args: cache: one model's activations (``ActivationCache`` with ``SPECTRA_NEEDS``) of a batch of sequences,
        or of ``rows`` of a larger batch of ``batch`` sequences (a later look's :class:`Spectra`); seed: seeds the
        position shuffles, drawn for the whole batch so that a sequence is shuffled alike whether its chunk or the
        whole batch was captured at once."""
        self._cache = cache
        layers = self._cache.hidden_states()
        self.labels = [label for label, _ in layers]
        self.hidden_states = [h for _, h in layers]
        self._embed = self._cache["hook_embed"].float().cpu()  # (chunk, seq, d_model)
        chunk, seq = self._embed.shape[:2]
        batch, rows = batch or chunk, rows or slice(0, chunk)
        generator = torch.Generator().manual_seed(seed)
        self._order = torch.stack([torch.randperm(seq, generator=generator) for _ in range(batch)])[rows]
        rest = torch.stack([1 + torch.randperm(seq - 1, generator=generator) for _ in range(batch)])[rows]
        self.keep_first = torch.cat([torch.zeros(chunk, 1, dtype=torch.long), rest], dim=1)  # position 0 stays
        self.bins = LogBins.of(power_spectral_density(self._embed[:1])[0])
        self.positions = seq
        self.learned_positions = "embed+pos" in self.labels
        self.shuffled = Shuffled(self)

    @property
    def n_blocks(self) -> int:
        """Number of transformer blocks L."""
        return self._cache.n_blocks

    @property
    def start(self) -> int:
        """Index in ``labels`` of the first block's input: "embed+pos" where positions are learned, else "embed"."""
        return self.labels.index("embed+pos") if self.learned_positions else 0

    @property
    def hidden_states_nopos(self) -> list[torch.Tensor]:
        """The hidden states minus the learned position embedding, (batch, seq, d_model) each."""
        positions = self.hidden_states[self.start] - self.hidden_states[0]
        return [h - positions for h in self.hidden_states]

    def block_outputs(self, hook: str) -> list[torch.Tensor]:
        """Each block's ``blocks.{i}.hook_{hook}`` activation, (batch, seq, d_model) each."""
        return [self._cache[f"blocks.{i}.hook_{hook}"] for i in range(self.n_blocks)]

    def _updates(self) -> list[torch.Tensor]:
        return [post - pre for post, pre in zip(self.block_outputs("resid_post"), self.block_outputs("resid_pre"))]

    @functools.cached_property
    def hidden(self) -> np.ndarray:
        return _stack(self.hidden_states)

    @functools.cached_property
    def hidden_hann(self) -> np.ndarray:
        return _stack(self.hidden_states, window="hann")

    @functools.cached_property
    def hidden_nopos(self) -> np.ndarray:
        return _stack(self.hidden_states_nopos) if self.learned_positions else self.hidden

    @functools.cached_property
    def attn(self) -> np.ndarray:
        return _stack(self.block_outputs("attn_out"))

    @functools.cached_property
    def mlp(self) -> np.ndarray:
        return _stack(self.block_outputs("mlp_out"))

    @functools.cached_property
    def update(self) -> np.ndarray:
        return _stack(self._updates())

    @functools.cached_property
    def update_hann(self) -> np.ndarray:
        return _stack(self._updates(), window="hann")

    @functools.cached_property
    def shuffled_embed(self) -> np.ndarray:
        return _psd(torch.take_along_dim(self._embed, self._order[:, :, None], dim=1)).numpy()


SPECTRA_ARRAYS = ("hidden", "hidden_hann", "hidden_nopos", "attn", "mlp", "update", "update_hann", "shuffled_embed",
                  "shuffled hidden", "shuffled hidden_nopos", "shuffled attn", "shuffled mlp")
BATCH_FACTS = ("bins", "labels", "positions", "learned_positions", "n_blocks", "start")


class _Declared:
    """Arrays an S0 test declared, by name; reading an undeclared array of ``SPECTRA_ARRAYS`` raises
    :func:`_undeclared`'s error (``prefix``: "shuffled " for :class:`Spectra`'s ``shuffled``)."""

    def __init__(self, arrays: dict, prefix: str, declared: list[str]):
        self.__dict__.update(arrays)
        self._prefix, self._names = prefix, declared

    def __getattr__(self, name: str):  # only for what __init__ did not set
        if name.startswith("_"):  # not an array (copy and pickle probe these before __init__ has run)
            raise AttributeError(name)
        return _undeclared(name, self._prefix, self._names)


class Spectra(_Declared):
    """The spectra one S0 test reads at one look: the arrays its ``@pytest.mark.spectra(...)`` declares, over the
    look's batch, and the batch-wide facts of :class:`ModelSpectra` (bins, labels, positions, learned_positions,
    n_blocks, start), which are the first look's.

    The first look's arrays come from the model's shared :class:`ModelSpectra` (each computed once, for every test
    that reads it). A later look (the batch ``scale`` times the first, ``fixtures.rounds``) is streamed: one chunked
    pass (``ModelPool.stream``: chunks of the first batch's size, one chunk's activations held at a time) computes
    only the declared arrays of each chunk, concatenated along sequences; another test's later look that declares
    other arrays streams its own pass. Each sequence's spectrum is the one the whole batch would give (the position
    shuffles are drawn for the whole batch; equal row by row in ``tests/test_s0_checks.py``). S0.6 alone on
    ref-opt-125m peaked at 6.2 GB captured at once, 2.7 GB streamed.

    Attributes:
        sequences: the look's batch, sequences.
        <array>: (sequences, n_layers or n_blocks, n_freq) for each declared array of :class:`ModelSpectra`;
        shuffled.<array>: the same for each declared "shuffled <array>" (:class:`Shuffled`).
    Raises:
        AttributeError: on reading an array the test did not declare, naming the marker to add.
    """

    def __init__(self, first: "ModelSpectra", arrays: dict[str, np.ndarray]):
        declared = sorted(arrays)
        super().__init__({a: v for a, v in arrays.items() if not a.startswith("shuffled ")}, "", declared)
        for fact in BATCH_FACTS:
            setattr(self, fact, getattr(first, fact))
        self.sequences = next(iter(arrays.values())).shape[0]
        self.shuffled = _Declared({a.removeprefix("shuffled "): v for a, v in arrays.items()
                                   if a.startswith("shuffled ")}, "shuffled ", declared)


def _undeclared(name: str, prefix: str, declared: list[str]):
    if f"{prefix}{name}" not in SPECTRA_ARRAYS:
        raise AttributeError(name)
    raise AttributeError(f"this S0 test reads spectra.{prefix.replace(' ', '.')}{name} but does not declare it: add "
                         f"{prefix + name!r} to its @pytest.mark.spectra(...) (declared: {', '.join(declared)})")


def arrays_of(spectra: ModelSpectra, arrays) -> dict[str, np.ndarray]:
    """The named arrays of one batch's (or chunk's) spectra, computed now ("shuffled x" is ``spectra.shuffled.x``)."""
    return {array: getattr(spectra.shuffled, array.removeprefix("shuffled ")) if array.startswith("shuffled ")
            else getattr(spectra, array) for array in arrays}


def declared_arrays(item: pytest.Item) -> tuple[str, ...]:
    """The spectra an S0 test reads, from its ``@pytest.mark.spectra(*arrays)`` (names of ``SPECTRA_ARRAYS``).

    Raises:
        pytest.UsageError: if the marker is missing, empty, or names an array ModelSpectra does not have.
    """
    marker = item.get_closest_marker("spectra")
    arrays = tuple(marker.args) if marker else ()
    unknown = [a for a in arrays if a not in SPECTRA_ARRAYS]
    if not arrays or unknown:
        raise pytest.UsageError(f"{item.nodeid}: declare the spectra it reads with @pytest.mark.spectra(...), names "
                                f"from {', '.join(SPECTRA_ARRAYS)}" + (f"; unknown: {', '.join(unknown)}" if unknown
                                                                       else ""))
    return arrays


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
