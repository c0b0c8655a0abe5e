"""S0.6 - S0.10: the spectra of what each block adds, its attention and MLP residuals.

S0.6 — untrained attention residuals already follow a nearly straight power law, layer 1 excepted (Fig 4).
S0.7 — untrained MLP residual spectra are close to the untrained hidden-state spectra (Fig 5).
S0.8 — trained attention residuals: spikes in the first three layers, smooth in the middle, a low-frequency
       spike in the last layer (Fig 6).
S0.9 — trained MLP residuals: a large spike in layer 1, smooth afterwards (Fig 7).
S0.10 — early layers add disproportionately more low-frequency power than later layers.

Why one file of ~340 lines: the five claims read the same residual spectra, depth mapping and controls (the
twin, the shuffled tokens), and each reads top to bottom beside the others; split per claim, each would import
the others' helpers.

Depth mapping: S0's OPT-125m has 12 blocks. "The first three layers" are the
first quarter of the blocks (``early_blocks``: 1 of 4, 2 of 6, 3 of 12), "the
last layer" is the last block, "the middle" the blocks in between; "layer 1"
is block 1 at any depth. A spike is the largest rise of the full-resolution
spectrum above its fitted log-log law, in decades.

Controls: each spectral statistic is computed again on the same states with
their positions shuffled within each sequence (white by construction, every
token's state kept): a spike, a law or a difference that the shuffled states
show as well comes from the estimator's noise or from single tokens, not from
structure along the sequence. S0.10's control is the Hann-windowed update
(leakage).

S0.6 and S0.7 are approximate claims ("pretty close"), decided as equivalence
against a margin that does not shrink as the sample grows, taken from S0's own
contrast (issue 43): S0.6's later blocks must bend less than half as much as
S0's block 1 does on S0's subject, S0.7's MLP residuals must differ from the
hidden states by less than half what the attention residuals do. The scatter of
a clean power law at the measurement's length (``clean_law_tolerance``), the
version-4 tolerance, which falls as the sample grows, is kept beside the verdict
as a reading.
"""


import numpy as np
import pytest

from claims.s0_spectra.conftest import (
    SPECTRA_NEEDS, beyond_null, early_blocks, loglog_panels, mean_fit,
)
from claims.s0_spectra.bends import bends, calibration_figure, largest_later_bend, straight_bends
from fixtures.catalogue import load_catalogue
from models.zoo import resolve
from latent_instruments.clean_law import CLEAN_LAW_QUANTILE, clean_law_scatter, periodograms_averaged
from latent_instruments.spectra import largest_excess, low_band_share
from reports.plots import series
from reports.checks import Check


# "Nearly straight" (S0 Fig 4) and "pretty close" (Fig 5) have no number; S0's own contrast gives the scale.
# S0.6: "this isn't a completely straight line, but it's pretty close (layer 1 is our outlier friend)": block 1 is
# the bent one. Its bend (latent_instruments.spectra.power_law_bend, the fitted curvature in log-log, which an
# estimator's noise does not inflate, less the bend a straight law of its slope shows through the same cut:
# straight_law_bend) on S0's subject at S0's scale, a random-init OPT-125m (ref-opt-125m) at 8 × 2048, is
# S0_BLOCK1_BEND; a later block is "pretty close" to straight when it is nearer straight than that outlier, bending
# less than half as much.
# The margin is fixed: version 4 took an exactly straight law's scatter at the measurement's length, which falls
# as the sample grows (0.031 decades at 100 averaged periodograms, 0.003 at 10,000), so more data could only fail
# S0.6; S0.7 held on ref-opt-125m at 32 × 128 and failed at S0's 8 × 2048.
S0_BLOCK1_BEND = 0.11  # decades per decade²: block 1 of ref-opt-125m at --prompts 8x2048 (its looks: 16 × 2048),
# 0.119 measured, less 0.009 for a straight law of its slope (−0.95) through 2047 positions
BEND_MARGIN = S0_BLOCK1_BEND / 2  # S0.6 v5's bound, a reading since v6: less than half as much as S0's outlier
# S0.6 v7: "pretty close" calibrated out of sample (issue 64): the 95 % point of S0.6's statistic over 16 random inits of
# S0's subject's architecture (OPT-125m) at seeds no run uses, on training-split windows no run's prompts come from
# (claims/s0_spectra/calibrate_pretty_close.py writes them into the catalogue's [[claims.calibrations]]). Version 6
# took the margin from ref-opt-125m at seed 0 and then judged that same model at that seed against it. The bend depends
# on the length, so each margin names its length; a length without one (S0's 2048 until a GPU runs the script) is
# not informative.
CALIBRATIONS = {c.positions: c for c in load_catalogue().claims["S0.6"].calibrations if c.name == "pretty close"}
PRETTY_CLOSE = {positions: c.margin for positions, c in CALIBRATIONS.items()}  # tokens per sequence → margin
# S0.7: "the initial MLP residuals are pretty close to the initial hidden states", after Fig 4 shows the attention
# residuals as a law of their own. The contrast sets the scale: the MLP residuals' shape distance to the hidden
# states must be less than half the attention residuals' (a reading: "pretty close" is more than "closer").
CLOSER = 0.5
# Version 4's tolerance, kept as a reading beside S0.6/S0.7's verdicts: an exactly straight law's scatter at this
# length, Gaussian sequences with the spectrum's own fitted law through the same rfft, bins and fit, as many
# independent periodograms averaged as the measured mean is worth (latent_instruments.clean_law.clean_law_scatter).
CLEAN_LAW = (f"A clean law at this length: the {CLEAN_LAW_QUANTILE:.0%} point of the scatter about its line of Gaussian "
             "sequences whose power is exactly the spectrum's fitted power law, through the same rfft, bins and fit, "
             "averaged over as many independent periodograms as the measured mean is worth (read off the same states "
             "with positions shuffled); whatever scatter it has is the estimator's, so more than it is the law's")


def clean_law_tolerance(bins, units: np.ndarray, shuffled: np.ndarray, seed: int) -> np.ndarray:
    """S0.6/S0.7's tolerance per spectrum, decades: the 95th percentile of an exactly straight law's scatter.

    Args:
        bins: the spectra's :class:`~latent_instruments.spectra.LogBins`.
        units: (batch, n, n_freq) power spectra whose fitted exponents the clean laws take.
        shuffled: (batch, n, n_freq) the same states' spectra with positions shuffled (``Shuffled``): what their
            mean is worth in independent periodograms (:func:`~latent_instruments.clean_law.periodograms_averaged`).
        seed: seeds the draws.
    Returns:
        (n,) scatter, decades.
    """
    slopes = mean_fit(bins, units).slope
    averaged = periodograms_averaged(shuffled.mean(axis=0))
    return np.array([np.quantile(clean_law_scatter(bins, float(s), float(a), seed), CLEAN_LAW_QUANTILE)
                     for s, a in zip(slopes, averaged)])


def _blocks(n: int) -> list[str]:
    return [f"block {i + 1}" for i in range(n)]


def _shape_distance(bins, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """RMS difference of two log-binned mean spectra after removing their mean offset (shape only), decades.

    a, b: (batch, n_blocks, n_freq) → (n_blocks,).
    """
    la, lb = bins.log_power(a.mean(axis=0)), bins.log_power(b.mean(axis=0))
    diff = (la - la.mean(axis=-1, keepdims=True)) - (lb - lb.mean(axis=-1, keepdims=True))
    return np.sqrt(np.mean(diff ** 2, axis=-1))


def _outlier(per_block: np.ndarray) -> float:
    """Block 1's value (scatter or spike) minus the largest of the later blocks', decades."""
    return float(per_block[0] - per_block[1:].max())


def _spikes(bins, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(spike size in decades, its frequency) per block of the mean spectrum; units (batch, n_blocks, n_freq)."""
    mean = units.mean(axis=0)
    return largest_excess(bins, mean, mean_fit(bins, units))


def _over_middle(size: np.ndarray, blocks: slice, e: int) -> float:
    """Mean spike of ``blocks`` minus the mean spike of the middle blocks (after the first e, before the last)."""
    return float(size[blocks].mean() - size[e:-1].mean())


def _low_band_excess(bins, units: np.ndarray) -> float:
    """Largest excess above the law in the low band minus the largest in the rest, decades; units (batch, n_freq)."""
    mean, law = units.mean(axis=0), mean_fit(bins, units)
    return float(largest_excess(bins, mean, law, band=bins.low)[0] - largest_excess(bins, mean, law, band=~bins.low)[0])


def _figure(model_name: str, title: str, bins, psd: np.ndarray) -> dict:
    return {"kind": "loglog", "x": bins.freqs.tolist(), "xlabel": "frequency (cycles/token)", "ylabel": "power",
            "panels": loglog_panels(f"{model_name}: {title}", _blocks(psd.shape[1]), psd)}


def _procedure(spectra, what: str) -> str:
    return (f"{spectra.sequences} held-out sequences of {spectra.positions} tokens (S0: 8 × 2048), first token "
            f"dropped, |rfft|² of {what} averaged over d_model then sequences; {spectra.bins.centers.size} log-spaced "
            f"bins over {spectra.bins.band_decades:.2f} decades. Depth mapping: first {early_blocks(spectra.n_blocks)} "
            f"of {spectra.n_blocks} blocks stand for S0's first three of 12.")


def flattest_law(bins, units: np.ndarray) -> float:
    """The largest (flattest) exponent of blocks 2..L's mean spectra; units (batch, n_blocks, n_freq)."""
    return float(mean_fit(bins, units[:, 1:]).slope.max())


# 7: "pretty close" calibrated out of sample (16 other inits, training-split windows); 6: on S0's subject itself, half
# block 1's a reading; 5: bend under half S0's block 1's (4: a clean law's scatter)
@pytest.mark.claim("S0.6", version=7, sample="prompts")
@pytest.mark.models("untrained", "reference")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("attn", "shuffled attn")
def test_untrained_attention_residuals_are_nearly_straight(model_name, spectra, claim, settings):
    """S0.6: blocks 2..L's attention residuals bend no more than 19 in 20 random inits of S0's subject do at this
    length (S0: "pretty close"; calibrated out of sample, ``CALIBRATIONS``); block 1 bends most. Bending less than half as much as S0's block 1 is a reading beside the verdict.

    Equivalence at a fixed margin (``PRETTY_CLOSE`` at this length): the whole interval of the largest later bend
    below it.
    """
    if spectra.n_blocks < 2:
        claim.not_informative("one block: there is no 'layer 1 excepted' to compare with")
    bins, attn = spectra.bins, spectra.attn
    if bins.centers.size < 4:
        claim.not_informative(f"{spectra.positions} positions give {bins.centers.size} log-spaced bins: too few to "
                              "fit a bend")
    if spectra.positions not in CALIBRATIONS:
        claim.not_informative(
            f"'pretty close' is calibrated out of sample on S0's subject class (random inits of OPT-125m) at "
            f"{', '.join(map(str, CALIBRATIONS))} tokens per sequence, and the bend depends on the length: at "
            f"{spectra.positions} there is no margin. Run at one of those lengths (--prompts NxT), or calibrate this "
            "one: python -m claims.s0_spectra.calibrate_pretty_close --positions T --sequences N --write (a GPU "
            "for S0's 2048)")
    calibration = CALIBRATIONS[spectra.positions]
    if resolve(model_name.removesuffix(":untrained")).source == resolve("ref-opt-125m").source \
            and settings.seed in calibration.seeds:
        claim.not_informative(
            f"this init of OPT-125m (seed {settings.seed}) is one of the {len(calibration.seeds)} the margin was "
            "calibrated on: judged by its own sample, the check could not fail. Run with another --seed")
    margin = calibration.margin
    straight = straight_bends(bins, attn)  # what leakage alone bends, per block
    later = claim.bootstrap(attn, lambda u: largest_later_bend(bins, u, straight))
    outlier = claim.bootstrap(attn, lambda u: _outlier(np.abs(bends(bins, u, straight))))
    not_white = beyond_null(attn, spectra.shuffled.attn, lambda u: flattest_law(bins, u), settings.seed)
    tolerance = clean_law_tolerance(bins, attn, spectra.shuffled.attn, settings.seed)
    deviation = mean_fit(bins, attn).deviation
    claim.record(
        [
            Check.of("largest |bend| of blocks 2..L beyond a straight law's (curvature in log-log)", later,
                     "decades per decade²", "<", margin,
                     "S0 Fig 4: 'not a completely straight line, but it's pretty close (layer 1 is our outlier "
                     "friend)', said of a random-init OPT-125m. Calibrated out of sample on that subject class at "
                     f"this length, {spectra.positions} tokens: the {calibration.quantile:.0%} point of the statistic "
                     f"over {len(calibration.seeds)} other inits (seeds {calibration.seeds[0]}-{calibration.seeds[-1]},"
                     f" training-split windows), rounded up, {margin:.3f}: no more bent than all but the most bent "
                     "twentieth of what S0 calls pretty close, a margin fixed whatever the sample. Each bend is net of the bend a straight law of the block's slope shows through the same cut "
                     "(leakage). Equivalence: the high end of the interval (paired bootstrap over sequences) below it"),
            Check.of("largest |bend| of blocks 2..L, against half S0's block 1's", later, "decades per decade²", "<",
                     BEND_MARGIN,
                     "a reading, stricter than S0's words (version 5 decided on it, and failed S0's own subject): "
                     f"S0's block 1 on S0's subject at 8 × 2048 bends by {S0_BLOCK1_BEND:.3f}; nearer straight than "
                     f"that outlier, bending less than half as much ({BEND_MARGIN:.3f})", role="reading"),
            Check.of("block 1's |bend| minus the largest of blocks 2..L", outlier, "decades per decade²", ">", 0.0,
                     "S0 Fig 4: 'layer 1 is our outlier friend': block 1 bends more than any later block"),
            Check.of("flattest exponent of blocks 2..L minus that of their position-shuffled states", not_white,
                     "log-log slope", "<", 0.0,
                     "control: a white spectrum is straight too, so white residuals would pass vacuously; S0's are a "
                     "law falling with frequency. The same residuals with positions shuffled are white with every "
                     "token's state kept: even the flattest of blocks 2..L must fall more steeply",
                     role="control", guards_pass=True),
        ],
        procedure=_procedure(spectra, "each block's attention residual (attn_out)")
        + " Bend: the curvature c of a parabola fitted to each block's log-binned mean spectrum in log10-log10, less "
        "the curvature a straight law of its fitted slope shows through the same cut (leakage; "
        f"{', '.join(f'{b:.3f}' for b in straight)}), so 0 for an exact power law at any length. Reading beside it (version 4's tolerance): a clean law's scatter "
        f"({CLEAN_LAW_QUANTILE:.0%} point) per block, {', '.join(f'{t:.4f}' for t in tolerance)} decades.",
        details={"'pretty close' calibrated out of sample: S0.6's statistic on other random inits of OPT-125m "
                 f"({calibration.windows}; the margin their {calibration.quantile:.0%} point, rounded up)":
                     {f"seed {s}": v for s, v in zip(calibration.seeds, calibration.values)},
                 "bend beyond a straight law's, by block (decades per decade²)":
                     dict(zip(_blocks(spectra.n_blocks), map(float, bends(bins, attn, straight)))),
                 "scatter about the power law by block (decades)": dict(zip(_blocks(spectra.n_blocks), map(float, deviation))),
                 "reading: a clean law's scatter by block (decades; version 4's tolerance, which shrinks as the "
                 "sample grows)": dict(zip(_blocks(spectra.n_blocks), map(float, tolerance)))},
        plot={"kind": "beside", "figures": [_figure(model_name, "attention residuals (S0 Fig 4)", bins, attn),
                                                  calibration_figure(calibration, later, model_name)]},
    )


def closeness_ratio(bins, units: np.ndarray, n: int) -> float:
    """Mean shape distance over blocks of the MLP residual to the hidden state, as a fraction of the attention
    residual's.

    units: (batch, 3 n, n_freq): the MLP residuals of blocks 1..n, their attention residuals, then the hidden states
    at their outputs.
    """
    mlp, attn, hidden = units[:, :n], units[:, n:2 * n], units[:, 2 * n:]
    return float(_shape_distance(bins, mlp, hidden).mean() / _shape_distance(bins, attn, hidden).mean())


def apart_over_clean_law(bins, units: np.ndarray, n: int, tolerance: float) -> float:
    """Mean shape distance, attention residual to hidden state over blocks, minus a clean law's scatter, decades.

    units: (batch, 2 n, n_freq): the attention residuals of blocks 1..n, then the hidden states at their outputs.
    """
    return float(_shape_distance(bins, units[:, :n], units[:, n:]).mean() - tolerance)


@pytest.mark.claim("S0.7", version=5, sample="prompts")  # 5: within half the attention residuals' distance (4: clean law)
@pytest.mark.models("untrained", "reference")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("attn", "mlp", "hidden", "shuffled hidden")
def test_untrained_mlp_residuals_match_hidden_states(model_name, spectra, claim, settings):
    """S0.7: the MLP residuals' spectral shape is close to the hidden states', by S0's contrast with the attention
    residuals: their shape distance is less than half the attention residuals'.

    Shape distance: RMS difference of the log-binned spectra after removing each
    one's mean level (MLP residuals are smaller; S0 compares the curves' shapes).
    Where the hidden states themselves are within a clean law's scatter of their
    position-shuffled (white) spectra, any two such spectra are "close": the claim
    is then not informative.
    """
    bins, mlp, n = spectra.bins, spectra.mlp, spectra.n_blocks
    hidden = spectra.hidden[:, -n:]  # each block's output
    by_block = clean_law_tolerance(bins, hidden, spectra.shuffled.hidden[:, -n:], settings.seed)
    clean = float(by_block.mean())
    white = _shape_distance(bins, hidden, spectra.shuffled.hidden[:, -n:])  # (n_blocks,)
    if white.mean() < clean:
        claim.not_informative(
            f"the hidden states are featureless: their shape differs from their position-shuffled (white) spectra by "
            f"{white.mean():.3f} decades RMS (mean over blocks), under the {clean:.3f}-decade tolerance (a clean "
            "law's scatter at this length), so any two such spectra are close",
            details={"hidden-state shape distance from shuffled, by block (decades)": dict(zip(_blocks(n), map(float, white)))})
    close = claim.bootstrap(np.concatenate([mlp, spectra.attn, hidden], axis=1),
                            lambda u: closeness_ratio(bins, u, n))
    apart = claim.bootstrap(np.concatenate([spectra.attn, hidden], axis=1),
                            lambda u: apart_over_clean_law(bins, u, n, clean))
    claim.record(
        [
            Check.of("shape distance, MLP residual to hidden state, as a fraction of the attention residual's (means "
                     "over blocks)", close, "ratio", "<", CLOSER,
                     "S0 Fig 5: 'the initial MLP residuals are pretty close to the initial hidden states', after Fig 4 "
                     "shows the untrained attention residuals as a law of their own. S0's contrast sets the scale: "
                     f"'pretty close' is read as less than {CLOSER:g} of the attention residuals' distance from the "
                     "same hidden states (a reading; S0 gives no number), a margin that does not shrink as the sample "
                     "grows. Equivalence: the high end of the interval (paired bootstrap over sequences) below it"),
            Check.of("shape distance, attention residual to hidden state (mean over blocks), minus a clean law's "
                     "scatter", apart, "decades", ">", 0.0,
                     "control: the distance must tell spectra apart, or the ratio would compare two noise floors; "
                     f"the attention residuals, S0's contrast, must differ from the hidden states by more than an "
                     f"exactly straight law scatters at this length. {CLEAN_LAW}; the hidden states' laws, mean over "
                     "blocks", role="control"),
        ],
        procedure=_procedure(spectra, "each block's MLP and attention residuals and output (resid_post)")
        + f" Reading beside the verdict (version 4's tolerance): a clean law's scatter ({CLEAN_LAW_QUANTILE:.0%} "
        f"point) with each block output's fitted exponent, mean over blocks, {clean:.4f} decades; the MLP residuals' "
        f"mean shape distance {float(_shape_distance(bins, mlp, hidden).mean()):.4f} decades. "
        f"Hidden states' shape distance from their shuffled spectra: {white.mean():.3f} decades (must exceed it).",
        details={"shape distance by block (decades)": {
            b: {"MLP residual to hidden state": float(d), "attention residual to hidden state": float(a),
                "hidden state to its shuffled spectrum": float(w)}
            for b, d, a, w in zip(_blocks(n), _shape_distance(bins, mlp, hidden),
                                  _shape_distance(bins, spectra.attn, hidden), white)},
            "reading: a clean law's scatter by block (decades; version 4's tolerance, which shrinks as the sample "
            "grows)": dict(zip(_blocks(n), map(float, by_block)))},

        plot={**_figure(model_name, "MLP residuals (S0 Fig 5)", bins, mlp),
              "panels": {  # beside the hidden states they are compared with
                  **loglog_panels(f"{model_name}: MLP residuals (S0 Fig 5)", _blocks(n), mlp),
                  **loglog_panels(f"{model_name}: hidden states (S0 Fig 3)", spectra.labels, spectra.hidden)}},
    )


def spikes_over_null(bins, units: np.ndarray, blocks: list[slice]) -> float:
    """The smallest, over groups of blocks, of their mean spike minus the same blocks' mean spike with positions
    shuffled, decades; units (batch, 2, n_blocks, n_freq): the residuals, then the shuffled residuals."""
    real, null = _spikes(bins, units[:, 0])[0], _spikes(bins, units[:, 1])[0]
    return float(min(real[b].mean() - null[b].mean() for b in blocks))


@pytest.mark.claim("S0.8", version=3, sample="prompts")  # 3: control, spikes above the position-shuffled null
@pytest.mark.models("trained", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("attn", "shuffled attn")
def test_trained_attention_residual_spikes(model_name, spectra, claim):
    """S0.8: the early blocks' attention residuals spike more than the middle ones; the last spikes at low frequency."""
    n, e = spectra.n_blocks, early_blocks(spectra.n_blocks)
    if n - e < 2:
        claim.not_informative(f"{n} blocks: after the first {e} and the last there is no middle to compare")
    bins, attn = spectra.bins, spectra.attn
    early = claim.bootstrap(attn, lambda u: _over_middle(_spikes(bins, u)[0], slice(0, e), e))
    last = claim.bootstrap(attn, lambda u: _over_middle(_spikes(bins, u)[0], slice(-1, None), e))
    low = claim.bootstrap(attn[:, -1], lambda u: _low_band_excess(bins, u))
    above_noise = claim.bootstrap(np.stack([attn, spectra.shuffled.attn], axis=1),
                           lambda u: spikes_over_null(bins, u, [slice(0, e), slice(-1, None)]))
    size, freq = _spikes(bins, attn)
    claim.record(
        [
            Check.of(f"spike of blocks 1..{e} minus the middle blocks' (mean)", early, "decades", ">", 0.0,
                     "S0 Fig 6: 'the first three layers have some spikes, and then the representations smoothen "
                     "out'; first three of 12 = the first quarter here"),
            Check.of("spike of the last block minus the middle blocks' (mean)", last, "decades", ">", 0.0,
                     "S0 Fig 6: 'until the final layer has another low frequency spike'"),
            Check.of("last block: largest excess in the low band minus largest elsewhere", low, "decades", ">", 0.0,
                     "'low frequency' spike = the largest rise above the law lies in the low band (the lowest third "
                     "of the band in log frequency)"),
            Check.of(f"spike minus its position-shuffled null, smaller of blocks 1..{e} (mean) and the last block",
                     above_noise, "decades", ">", 0.0,
                     "control: the largest rise above a fitted law is never 0, even for white noise; the spikes must "
                     "be structure along the sequence, not the estimator's noise or single tokens' states, so the "
                     "same residuals with positions shuffled must spike less, in the early blocks and in the last",
                     role="control", guards_pass=True),
        ],
        procedure=_procedure(spectra, "each block's attention residual (attn_out)"),
        details={"spikes by block": {b: {"size (decades)": float(s), "at (cycles/token)": float(f)}
                                     for b, s, f in zip(_blocks(n), size, freq)}},
        plot=_figure(model_name, "attention residuals (S0 Fig 6)", bins, attn),
    )


@pytest.mark.claim("S0.9", version=3, sample="prompts")  # 3: control, block 1's spike above the shuffled null
@pytest.mark.models("trained", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("mlp", "shuffled mlp")
def test_trained_mlp_residual_spike_in_block_one(model_name, spectra, claim):
    """S0.9: block 1's MLP residual spikes more than any later block's."""
    if spectra.n_blocks < 2:
        claim.not_informative("one block: no later block to compare with")
    bins, mlp = spectra.bins, spectra.mlp
    first = claim.bootstrap(mlp, lambda u: _outlier(_spikes(bins, u)[0]))
    above_noise = claim.bootstrap(np.stack([mlp, spectra.shuffled.mlp], axis=1),
                           lambda u: spikes_over_null(bins, u, [slice(0, 1)]))
    size, freq = _spikes(bins, mlp)
    claim.record(
        [
            Check.of("block 1's spike minus the largest of blocks 2..L", first, "decades", ">", 0.0,
                     "S0 Fig 7: 'the first layer here has a big spike again, and then things smoothen out with no "
                     "spike at the end': block 1's spike exceeds every later block's"),
            Check.of("block 1's spike minus its position-shuffled null", above_noise, "decades", ">", 0.0,
                     "control: 'a big spike' is structure along the sequence: the same residual with positions "
                     "shuffled (white, every token's state kept) must spike less, or block 1 stands out only by "
                     "its noise (fewer effective dimensions) or by single tokens", role="control", guards_pass=True),
        ],
        procedure=_procedure(spectra, "each block's MLP residual (mlp_out)"),
        details={"spikes by block": {b: {"size (decades)": float(s), "at (cycles/token)": float(f)}
                                     for b, s, f in zip(_blocks(spectra.n_blocks), size, freq)}},
        plot=_figure(model_name, "MLP residuals (S0 Fig 7)", bins, mlp),
    )


def early_over_late(bins, units: np.ndarray, e: int) -> float:
    """log10 of the early blocks' mean low-band share over the later blocks'; units (batch, n_blocks, n_freq)."""
    share = low_band_share(bins, units.mean(axis=0))  # (n_blocks,)
    return float(np.log10(share[:e].mean() / share[e:].mean()))


@pytest.mark.claim("S0.10", version=3, sample="prompts")  # 3: control, the Hann-windowed updates agree
@pytest.mark.models("trained", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
@pytest.mark.spectra("update", "update_hann")
def test_early_blocks_add_low_frequencies(model_name, spectra, claim):
    """S0.10: the early blocks' updates put a larger share of their power in the low band than later blocks'."""
    n, e = spectra.n_blocks, early_blocks(spectra.n_blocks)
    if n - e < 1:
        claim.not_informative(f"{n} blocks: no later block to compare with")
    bins, update = spectra.bins, spectra.update
    ratio = claim.bootstrap(update, lambda u: early_over_late(bins, u, e))
    windowed = claim.bootstrap(spectra.update_hann, lambda u: early_over_late(bins, u, e))
    per_block = [claim.bootstrap(update[:, i], lambda u: float(low_band_share(bins, u.mean(axis=0))))
                 for i in range(n)]
    claim.record(
        [
            Check.of(f"log10 of the low-band share of blocks 1..{e}'s updates over later blocks'", ratio, "decades",
                     ">", 0.0, "S0 after Fig 7: early layers 'disproportionately add smooth long range structure'; "
                     "disproportionate = a larger share of the update's power in the low band (lowest third of log "
                     "frequency) than later blocks give, i.e. a log ratio above 0; no figure for a margin"),
            Check.of("the same log ratio of the Hann-windowed, mean-removed updates", windowed, "decades", ">", 0.0,
                     "control: without a window, a slow drift or an offset along the sequence leaks power into the "
                     "lowest frequencies; long-range structure survives the window, leakage does not, so the "
                     "windowed updates must show the early blocks' larger share too", role="control",
                     guards_pass=True),
        ],
        procedure=_procedure(spectra, "each block's update resid_post − resid_pre (attention + MLP residual)"),
        details={"low-band share by block": dict(zip(_blocks(n), (e_.value for e_ in per_block)))},
        plot={"kind": "bars", "title": f"S0.10 on {model_name}: low-band share of each block's update",
              "categories": _blocks(n), "xlabel": "block", "ylabel": "share of power in the low band",
              "series": {"low-band share": series(per_block)}},
    )
