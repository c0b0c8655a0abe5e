"""S0.6-S0.10's measurements: from the spectra of what each block adds (``residual_spectra.py``'s statistics), each
claim's estimates. test_residual_untrained.py (S0.6, S0.7) and test_residual_trained.py (S0.8-S0.10) record what these
measure; residual_checks.py decides; the numbers the checks decide with are in the topic's home, residual.toml.
"""

from dataclasses import dataclass, field

import numpy as np

from claims.s0_spectra.bends import bends, largest_later_bend, straight_bends
from claims.s0_spectra.model_spectra import beyond_null, early_blocks
from claims.s0_spectra.residual_spectra import (
    apart_over_clean_law, block_labels, clean_law_tolerance, closeness_ratio, early_over_late,
    flattest_law, low_band_excess, outlier_lead, over_middle, pretty_close, shape_distance, spikes, spikes_over_null,
)
from fixtures.calibration import Margin
from fixtures.catalogue_text import gate
from fixtures.rounds import rounds_of
from latent_instruments.spectra import low_band_share
from latent_instruments.stats import Estimate
from models.zoo import resolve


@dataclass(frozen=True)
class BendEstimates:
    """What S0.6's checks decide on, measured on a random-init model's attention residuals, over sequences (decades
    per decade², the curvature in log-log net of a straight law's leakage bend).

    Attributes:
        later: the largest |bend| of blocks 2..L.
        outlier: block 1's |bend| minus the largest of blocks 2..L.
        not_white: the flattest exponent of blocks 2..L minus that of their position-shuffled states (log-log slope).
    """

    later: Estimate
    outlier: Estimate
    not_white: Estimate


@dataclass(frozen=True)
class BendContext:
    """What S0.6's checks are told beside their estimates: ``calibration``, the home's ``Margin`` of "pretty close"
    at this record's shape (length, last look, depth), not a measurement."""

    calibration: Margin


@dataclass(frozen=True)
class BendShown:
    """What S0.6's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        straight: per block, what leakage alone bends a straight law of its slope (decades per decade²).
        tolerance: per block, a clean law's scatter (decades; version 4's tolerance).
    """

    straight: np.ndarray | None = None
    tolerance: np.ndarray | None = None


@dataclass(frozen=True)
class ClosenessEstimates:
    """What S0.7's checks decide on, measured on a random-init model, over sequences.

    Attributes:
        close: shape distance, MLP residual to hidden state, over the attention residual's (means over blocks; ratio).
        apart: shape distance, attention residual to hidden state, minus a clean law's scatter (decades).
    """

    close: Estimate
    apart: Estimate


@dataclass(frozen=True)
class ClosenessContext:
    """What S0.7's checks are told beside their estimates: ``calibration``, the home's ``Margin`` of S0.7's "pretty
    close" at this record's shape, not a measurement."""

    calibration: Margin


@dataclass(frozen=True)
class ClosenessShown:
    """What S0.7's record shows beside its checks, deciding nothing (issue 79, item 3).

    Attributes:
        by_block: a clean law's scatter per block (decades).
        white: per block, the hidden states' shape distance from their position-shuffled spectra (decades).
    """

    by_block: np.ndarray | None = None
    white: np.ndarray | None = None


@dataclass(frozen=True)
class AttentionSpikeEstimates:
    """What S0.8's checks decide on, measured on a trained model's attention residuals, over sequences (decades).

    Attributes:
        early: the mean spike of the early blocks minus the middle blocks'.
        last: the last block's spike minus the middle blocks'.
        low: the last block's largest excess in the low band minus the largest elsewhere.
        above_noise: spike minus its position-shuffled null, the smaller of the early blocks and the last.
    """

    early: Estimate
    last: Estimate
    low: Estimate
    above_noise: Estimate


@dataclass(frozen=True)
class AttentionSpikeContext:
    """What S0.8's checks are told beside their estimates: ``early_blocks``, how many first blocks stand for S0's
    first three of 12 (``model_spectra.early_blocks``)."""

    early_blocks: int


@dataclass(frozen=True)
class MlpSpikeEstimates:
    """What S0.9's checks decide on, measured on a trained model's MLP residuals, over sequences (decades).

    Attributes:
        first: block 1's spike minus the largest of blocks 2..L.
        above_noise: block 1's spike minus its position-shuffled null.
    """

    first: Estimate
    above_noise: Estimate


@dataclass(frozen=True)
class LowBandEstimates:
    """What S0.10's checks decide on, measured on a trained model's block updates, over sequences (decades).

    Attributes:
        ratio: log10 of the early blocks' mean low-band share of their updates over the later blocks'.
        windowed: the same of the Hann-windowed, mean-removed updates.
    """

    ratio: Estimate
    windowed: Estimate


@dataclass(frozen=True)
class LowBandContext:
    """What S0.10's checks are told beside their estimates: ``early_blocks``, how many first blocks stand for S0's
    early layers (``model_spectra.early_blocks``)."""

    early_blocks: int


@dataclass(frozen=True)
class LowBandShown:
    """What S0.10's record shows beside its checks, deciding nothing (issue 79, item 3).

    Attributes:
        per_block: each block's low-band share of its update's power.
    """

    per_block: list[Estimate] = field(default_factory=list)


def margin_at_shape(claim_id: str, spectra, claim) -> tuple[Margin | None, int]:
    """``claim_id``'s calibrated "pretty close" margin at this record's shape (its length, its last look's sequences,
    its depth) and at its looks' interval level (``residual_spectra.pretty_close``), None where none was calibrated
    there; and those sequences (--prompts' N times the largest scale --max-prompts allows)."""
    rounds = rounds_of(claim.item.config)
    sequences = rounds.first * rounds.scales[-1]
    return pretty_close(claim_id, spectra.positions, sequences, spectra.n_blocks, rounds.confidence), sequences


def on_calibration_seed(model_name: str, seed: int, margin: Margin) -> bool:
    """Whether the subject is an init of S0's subject (OPT-125m) at one of the seeds ``margin`` was calibrated on:
    its own sample is among those that set the margin."""
    return (resolve(model_name.removesuffix(":untrained")).source == resolve("ref-opt-125m").source
            and seed in margin.seeds)


def measure_bends(model_name: str, spectra, claim) -> tuple[BendEstimates, BendContext, BendShown]:
    """S0.6's measurement over sequences, on a random-init model's attention residuals (batch, n_blocks, n_freq):
    the largest bend of blocks 2..L beyond a straight law's, block 1's lead over it, and the flattest law beyond the
    position-shuffled states' (the control).

    Args:
        model_name: the model's zoo name (an init S0.6's margin was calibrated on is not judged by it).
        spectra: its spectra (``claims.s0_spectra.model_spectra``) with ``attn`` and ``shuffled.attn``.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap`` and ``seed``.
    Returns:
        (the checks' estimates, their context: the calibrated margin at this shape, what the record shows beside
        them: each block's straight-law bend and a clean law's scatter).
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` for one block, too few bins, or an init the margin
            was calibrated on; ``ClaimInconclusive`` through ``claim.undecided`` at a shape without a calibrated margin.
    """
    if spectra.n_blocks < 2:
        claim.not_informative(gate("S0.6/untrained-attention-residuals-are-nearly-straight/one-block"))
    bins, attn = spectra.bins, spectra.attn
    if bins.centers.size < 4:
        claim.not_informative(gate("S0.6/untrained-attention-residuals-are-nearly-straight/too-few-bins",
                                   positions=spectra.positions, bins=bins.centers.size))
    calibration, sequences = margin_at_shape("S0.6", spectra, claim)
    if calibration is None:
        claim.undecided(gate("S0.6/untrained-attention-residuals-are-nearly-straight/not-calibrated",
                             positions=spectra.positions, sequences=sequences, blocks=spectra.n_blocks))
    if on_calibration_seed(model_name, claim.seed, calibration):
        claim.not_informative(gate("S0.6/untrained-attention-residuals-are-nearly-straight/calibration-seed",
                                   seed=claim.seed, inits=len(calibration.seeds)))
    straight = straight_bends(bins, attn)  # what leakage alone bends, per block
    return BendEstimates(
        claim.bootstrap(attn, lambda u: largest_later_bend(bins, u, straight)),
        claim.bootstrap(attn, lambda u: outlier_lead(np.abs(bends(bins, u, straight)))),
        beyond_null(attn, spectra.shuffled.attn, lambda u: flattest_law(bins, u), claim.seed),
    ), BendContext(calibration), BendShown(straight=straight,
                                           tolerance=clean_law_tolerance(bins, attn, spectra.shuffled.attn, claim.seed))


def measure_closeness(model_name: str, spectra, claim) -> tuple[ClosenessEstimates, ClosenessContext, ClosenessShown]:
    """S0.7's measurement over sequences, on a random-init model: the MLP residuals' shape distance to the hidden
    states over the attention residuals', and the attention residuals' beyond a clean law's scatter (the control).

    Args:
        model_name: the model's zoo name (an init S0.7's margin was calibrated on is not judged by it).
        spectra: its spectra with ``mlp``, ``attn``, ``hidden`` and ``shuffled.hidden``.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap`` and ``seed``.
    Returns:
        (the checks' estimates, their context: the calibrated margin at this shape, what the record shows beside
        them: a clean law's scatter and the hidden states' distance from white, per block).
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where the hidden states are within a clean law's
            scatter of their position-shuffled (white) spectra: any two such spectra are "close"; or for an init the
            margin was calibrated on. ``ClaimInconclusive`` through ``claim.undecided`` at a shape without a margin.
    """
    calibration, sequences = margin_at_shape("S0.7", spectra, claim)
    if calibration is None:
        claim.undecided(gate("S0.7/untrained-mlp-residuals-match-hidden-states/not-calibrated",
                             positions=spectra.positions, sequences=sequences, blocks=spectra.n_blocks))
    if on_calibration_seed(model_name, claim.seed, calibration):
        claim.not_informative(gate("S0.7/untrained-mlp-residuals-match-hidden-states/calibration-seed",
                                   seed=claim.seed, inits=len(calibration.seeds)))
    bins, mlp, n = spectra.bins, spectra.mlp, spectra.n_blocks
    hidden = spectra.hidden[:, -n:]  # each block's output
    by_block = clean_law_tolerance(bins, hidden, spectra.shuffled.hidden[:, -n:], claim.seed)
    clean = float(by_block.mean())
    white = shape_distance(bins, hidden, spectra.shuffled.hidden[:, -n:])  # (n_blocks,)
    if white.mean() < clean:
        claim.not_informative(
            gate("S0.7/untrained-mlp-residuals-match-hidden-states/featureless", white=white.mean(), clean=clean),
            details={"hidden-state shape distance from shuffled, by block (decades)": dict(zip(block_labels(n), map(float, white)))})
    return ClosenessEstimates(
        claim.bootstrap(np.concatenate([mlp, spectra.attn, hidden], axis=1), lambda u: closeness_ratio(bins, u, n)),
        claim.bootstrap(np.concatenate([spectra.attn, hidden], axis=1),
                        lambda u: apart_over_clean_law(bins, u, n, clean)),
    ), ClosenessContext(calibration), ClosenessShown(by_block=by_block, white=white)


def measure_attention_spikes(spectra, claim) -> AttentionSpikeEstimates:
    """S0.8's measurement over sequences, on a trained model's attention residuals: the early and the last blocks'
    spikes over the middle blocks', the last block's low-band excess, and the spikes over the position-shuffled null.

    Args:
        spectra: its spectra with ``attn`` and ``shuffled.attn`` (batch, n_blocks, n_freq).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where there is no middle block to compare.
    """
    n, e = spectra.n_blocks, early_blocks(spectra.n_blocks)
    if n - e < 2:
        claim.not_informative(gate("S0.8/trained-attention-residual-spikes/no-middle", n=n, e=e))
    bins, attn = spectra.bins, spectra.attn
    return AttentionSpikeEstimates(
        claim.bootstrap(attn, lambda u: over_middle(spikes(bins, u)[0], slice(0, e), e)),
        claim.bootstrap(attn, lambda u: over_middle(spikes(bins, u)[0], slice(-1, None), e)),
        claim.bootstrap(attn[:, -1], lambda u: low_band_excess(bins, u)),
        claim.bootstrap(np.stack([attn, spectra.shuffled.attn], axis=1),
                        lambda u: spikes_over_null(bins, u, [slice(0, e), slice(-1, None)])))


def measure_mlp_spike(spectra, claim) -> MlpSpikeEstimates:
    """S0.9's measurement over sequences, on a trained model's MLP residuals: block 1's spike over every later
    block's, and over its position-shuffled null (the control).

    Args:
        spectra: its spectra with ``mlp`` and ``shuffled.mlp`` (batch, n_blocks, n_freq).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` for a one-block model.
    """
    if spectra.n_blocks < 2:
        claim.not_informative(gate("S0.9/trained-mlp-residual-spike-in-block-one/one-block"))
    bins, mlp = spectra.bins, spectra.mlp
    return MlpSpikeEstimates(claim.bootstrap(mlp, lambda u: outlier_lead(spikes(bins, u)[0])),
                             claim.bootstrap(np.stack([mlp, spectra.shuffled.mlp], axis=1),
                                             lambda u: spikes_over_null(bins, u, [slice(0, 1)])))


def measure_low_band(spectra, claim) -> tuple[LowBandEstimates, LowBandShown]:
    """S0.10's measurement over sequences, on a trained model's block updates: the early blocks' low-band share over
    the later blocks', unwindowed and Hann-windowed (the control), and (shown) each block's share.

    Args:
        spectra: its spectra with ``update`` and ``update_hann`` (batch, n_blocks, n_freq).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Returns:
        (the checks' estimates, what the record shows beside them: each block's low-band share).
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where no block follows the early ones.
    """
    n, e = spectra.n_blocks, early_blocks(spectra.n_blocks)
    if n - e < 1:
        claim.not_informative(gate("S0.10/early-blocks-add-low-frequencies/no-later-block", n=n))
    bins, update = spectra.bins, spectra.update
    return LowBandEstimates(
        claim.bootstrap(update, lambda u: early_over_late(bins, u, e)),
        claim.bootstrap(spectra.update_hann, lambda u: early_over_late(bins, u, e)),
    ), LowBandShown([claim.bootstrap(update[:, i], lambda u: float(low_band_share(bins, u.mean(axis=0))))
                     for i in range(n)])
