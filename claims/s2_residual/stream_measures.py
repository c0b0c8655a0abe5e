"""S2.1 and S2.2's statistics: the residual stream's norm growth and the consecutive layers' cosine over a
mismatched-token null, and S2.1's rate reading beside Mistral-7B's. test_stream.py records what these measure;
stream_checks.py decides; the numbers both read (S2's Table 1 and scope) are in the topic's home, stream.toml.
"""

from dataclasses import dataclass, field

import numpy as np
import torch

from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.geometry import (
    consecutive_cosines, cross_token_cosine, growth_per_layer, mean_norm_by_layer, mismatched_consecutive_cosines,
    token_norm_ratio,
)
from latent_instruments.stats import Estimate, sample_mean

RESIDUAL_NEEDS = ("blocks.0.hook_resid_pre", "blocks.*.hook_resid_post")

# S2 Table 1 (Mistral-7B instruct, SOURCE_LAYERS layers): the norm grows by nearly SOURCE_RATIO, a constant rate of
# SOURCE_FACTOR per layer. The claim S2 states is that it "keeps growing" (the check); the rate is a magnitude of a
# 7B model, a scaled reading beside it: within "about" it (a factor of ABOUT either way in the whole ratio, RATE_LOW ..
# RATE_HIGH per layer) or not, never a bound (version 4; versions 1-3 failed four models that grow at every step on
# that two-sided band alone). S2.2 is not informative below SOURCE_LAYERS blocks.
SOURCE_RATIO, SOURCE_LAYERS, SOURCE_FACTOR, RATE_LOW, RATE_HIGH = numbers(
    __file__, "SOURCE_RATIO", "SOURCE_LAYERS", "SOURCE_FACTOR", "RATE_LOW", "RATE_HIGH")


@dataclass(frozen=True)
class StreamContext:
    """What S2.1 and S2.2's checks read beside their estimates: the names of the stream's layers.

    Attributes:
        labels: the layers' labels, block 1's input first ("embed" or "embed+pos", then "block 1" .. "block L").
    """

    labels: tuple[str, ...]

    @property
    def steps(self) -> list[str]:
        """The L transitions' names, "embed → block 1" .. "block L−1 → block L"."""
        return [f"{a} → {b}" for a, b in zip(self.labels, self.labels[1:])]


@dataclass(frozen=True)
class GrowthEstimates:
    """What S2.1's checks decide on, measured over prompts (ratios of mean L2 norms).

    Attributes:
        keeps_growing: the smallest step ratio of the mean norm, layer l + 1 / layer l.
        typical: the median token's norm ratio, last block / block 1.
    """

    keeps_growing: Estimate
    typical: Estimate


@dataclass(frozen=True)
class GrowthShown:
    """What S2.1's record shows beside its checks, deciding nothing (issue 79: report-only, out of the estimates).

    Attributes:
        labels: the layers' labels, block 1's input first (L + 1).
        norms, twin_norms: (prompts, L + 1) mean L2 norm per layer, the model's and its untrained twin's.
        rate, twin_rate: the growth factor per block from block 1's output to the last (the scaled reading).
        per_layer, twin_per_layer: the mean norm of each layer over prompts.
    """

    labels: list[str] = field(default_factory=list)
    norms: np.ndarray | None = None
    twin_norms: np.ndarray | None = None
    rate: Estimate | None = None
    twin_rate: Estimate | None = None
    per_layer: list[Estimate] = field(default_factory=list)
    twin_per_layer: list[Estimate] = field(default_factory=list)


@dataclass(frozen=True)
class DirectionEstimates:
    """What S2.2's checks decide on, measured over prompts (cosines), over every transition after the first block's.

    Attributes:
        floor: the smallest consecutive-layer cosine of a token's states.
        above_null: the smallest margin of that cosine over the mismatched-token null (paired).
    """

    floor: Estimate
    above_null: Estimate


@dataclass(frozen=True)
class DirectionShown:
    """What S2.2's record shows beside its checks, deciding nothing (issue 79: report-only, out of the estimates).

    Attributes:
        labels: the layers' labels, block 1's input first (L + 1).
        per_step, per_null, per_cross, per_twin: per transition (per layer for ``per_cross``), the mean
            consecutive cosine, its mismatched-token null, the cross-token cosine and the untrained twin's
            consecutive cosine.
    """

    labels: list[str] = field(default_factory=list)
    per_step: list[Estimate] = field(default_factory=list)
    per_null: list[Estimate] = field(default_factory=list)
    per_cross: list[Estimate] = field(default_factory=list)
    per_twin: list[Estimate] = field(default_factory=list)


def mean_by_layer(u: np.ndarray) -> np.ndarray:
    """The mean over prompts of each layer's (or transition's) value: units (batch, layers) -> (layers,)."""
    return u.mean(axis=0)


def min_step_ratio(norms: np.ndarray) -> float:
    """Smallest ratio of mean norm, layer l + 1 over layer l; norms (batch, n_layers) → a ratio."""
    m = mean_by_layer(norms)
    return float((m[1:] / m[:-1]).min())


def rate_reading(rate) -> str:
    """Where a per-block growth rate's interval lies against "about" Table 1's (a reading beside S2.1's check)."""
    if rate.low > RATE_HIGH:
        return "faster than"
    if rate.high < RATE_LOW:
        return "slower than"
    return "within" if RATE_LOW < rate.low and rate.high < RATE_HIGH else "overlapping"


def median_token_growth(ratios: np.ndarray) -> float:
    """Median over every (prompt, position) of the token's norm ratio, last block over block 1; ratios (batch, seq)."""
    return float(np.median(ratios))


def null_margin(units: np.ndarray, n_blocks: int) -> np.ndarray:
    """Per transition l → l + 1: consecutive cosine minus the mismatched-token cosine of the same two layers.

    units: (batch, 2 L), the L consecutive cosines then the L mismatched-token cosines, per prompt → (L,).
    """
    return mean_by_layer(units[:, :n_blocks]) - mean_by_layer(units[:, n_blocks:])


def residual_stream(captured) -> tuple[list[str], list[torch.Tensor]]:
    """Labels and hidden states by depth, each (batch, seq, d_model): block 1's input, then every block's output.

    Needs ``RESIDUAL_NEEDS``. The first label is "embed+pos" where the model adds learned
    positions before block 1, else "embed"; then "block 1" .. "block L".
    """
    cache = captured.cache
    labels = ["embed+pos" if cache.learned_positions else "embed"] + [f"block {i + 1}" for i in range(cache.n_blocks)]
    layers = [cache["blocks.0.hook_resid_pre"]] + [cache[f"blocks.{i}.hook_resid_post"] for i in range(cache.n_blocks)]
    return labels, layers


def block_rate(norms: np.ndarray) -> float:
    """Growth factor per block of the mean norm from block 1's output to the last block's, × per block.

    norms: (batch, L + 1), column 0 block 1's input (left out: see S2.1's procedure), L ≥ 2.
    """
    return float(growth_per_layer(torch.from_numpy(mean_by_layer(norms)[1:])))


def _per_column(x: np.ndarray, claim) -> list:
    """The mean over prompts of each column of x (prompts, columns), with its bootstrap interval."""
    return [claim.bootstrap(x[:, i], sample_mean) for i in range(x.shape[1])]


def measure_growth(captured, twin_captured, claim) -> tuple[GrowthEstimates, GrowthShown]:
    """S2.1's measurement over prompts (the unit: a prompt's mean L2 norm over positions, first left out, at each
    layer): the smallest step ratio of the mean norm, and the median token's growth from block 1 to the last (the
    control: a mean lifted by a few outlier tokens would pass with most tokens not growing): (the checks'
    estimates, what the record shows beside them).

    Args:
        captured, twin_captured: the model's and its untrained twin's captures with ``RESIDUAL_NEEDS``.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` for a one-block model (no rate between blocks).
    """
    labels, layers = residual_stream(captured)
    _, twin_layers = residual_stream(twin_captured)
    if len(layers) < 3:
        claim.not_informative(gate("S2.1/hidden-state-norm-grows-with-depth/one-block"))
    norms = mean_norm_by_layer(layers).numpy()  # (batch, L + 1)
    twin_norms = mean_norm_by_layer(twin_layers).numpy()
    ratios = token_norm_ratio(layers[1], layers[-1]).numpy()  # (batch, seq − 1)
    return GrowthEstimates(
        claim.bootstrap(norms, min_step_ratio), claim.bootstrap(ratios, median_token_growth),
    ), GrowthShown(
        labels=labels, norms=norms, twin_norms=twin_norms, rate=claim.bootstrap(norms, block_rate),
        twin_rate=claim.bootstrap(twin_norms, block_rate), per_layer=_per_column(norms, claim),
        twin_per_layer=_per_column(twin_norms, claim))


def measure_direction(captured, twin_captured, claim) -> tuple[DirectionEstimates, DirectionShown]:
    """S2.2's measurement over prompts (the unit: a prompt's mean over positions, first left out, of
    cos(h_l[t], h_{l+1}[t]) per transition), over every transition after block 1's: the smallest consecutive cosine
    and its smallest margin over the mismatched-token null, cos(h_l[t], h_{l+1}[s]), t ≠ s (paired per prompt):
    (the checks' estimates, what the record shows beside them).

    Args:
        captured, twin_captured: the model's and its untrained twin's captures with ``RESIDUAL_NEEDS``.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` for a one-block model (its only transition is
            embedding → block 1, which S2 lets stabilise), and below S2's scope of SOURCE_LAYERS layers (issue 73):
            S2's figure is a per-layer cosine of models of SOURCE_LAYERS layers and more, and how much a shallower
            model's block turns is nothing S2 says.
    """
    labels, layers = residual_stream(captured)
    _, twin_layers = residual_stream(twin_captured)
    n_blocks = len(layers) - 1
    if n_blocks < 2:
        claim.not_informative(gate("S2.2/consecutive-layers-point-the-same-way/one-block"))
    if n_blocks < SOURCE_LAYERS:
        claim.not_informative(gate("S2.2/consecutive-layers-point-the-same-way/shallow", blocks=n_blocks))
    consecutive = consecutive_cosines(layers).numpy()  # (batch, L)
    mismatched = mismatched_consecutive_cosines(layers).numpy()  # (batch, L): the null
    units = np.concatenate([consecutive, mismatched], axis=1)  # paired per prompt
    counted = slice(1, n_blocks)  # block l → block l + 1: every transition after the first block's
    return DirectionEstimates(
        claim.bootstrap(consecutive, lambda u: float(mean_by_layer(u)[counted].min())),
        claim.bootstrap(units, lambda u: float(null_margin(u, n_blocks)[counted].min())),
    ), DirectionShown(
        labels=labels, per_step=_per_column(consecutive, claim), per_null=_per_column(mismatched, claim),
        per_cross=_per_column(cross_token_cosine(layers).numpy(), claim),  # (batch, L + 1), reported
        per_twin=_per_column(consecutive_cosines(twin_layers).numpy(), claim))
