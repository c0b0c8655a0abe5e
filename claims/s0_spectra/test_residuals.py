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
from claims.s0_spectra.residual_checks import (
    AttentionSpikeEstimates, BendEstimates, ClosenessEstimates, LowBandEstimates,
    MlpSpikeEstimates, attention_spike_checks, bend_checks, closeness_checks, low_band_checks, mlp_spike_checks,
)
from claims.s0_spectra.bends import bends, calibration_figure, largest_later_bend, straight_bends
from fixtures.catalogue import load_catalogue
from models.zoo import resolve
from latent_instruments.clean_law import CLEAN_LAW_QUANTILE, clean_law_scatter, periodograms_averaged
from latent_instruments.spectra import largest_excess, low_band_share
from reports.plots import series


# S0.6 v7: "pretty close" calibrated out of sample (issue 64): the 95 % point of S0.6's statistic over 16 random inits of
# S0's subject's architecture (OPT-125m) at seeds no run uses, on training-split windows no run's prompts come from
# (claims/s0_spectra/calibrate_pretty_close.py writes them into the catalogue's [[claims.calibrations]]). Version 6
# took the margin from ref-opt-125m at seed 0 and then judged that same model at that seed against it. The bend depends
# on the length, so each margin names its length; a length without one (S0's 2048 until a GPU runs the script) is
# not informative.
CALIBRATIONS = {c.positions: c for c in load_catalogue().claims["S0.6"].calibrations if c.name == "pretty close"}
PRETTY_CLOSE = {positions: c.margin for positions, c in CALIBRATIONS.items()}  # tokens per sequence → margin


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
    straight = straight_bends(bins, attn)  # what leakage alone bends, per block
    later = claim.bootstrap(attn, lambda u: largest_later_bend(bins, u, straight))
    outlier = claim.bootstrap(attn, lambda u: _outlier(np.abs(bends(bins, u, straight))))
    not_white = beyond_null(attn, spectra.shuffled.attn, lambda u: flattest_law(bins, u), settings.seed)
    tolerance = clean_law_tolerance(bins, attn, spectra.shuffled.attn, settings.seed)
    deviation = mean_fit(bins, attn).deviation
    claim.record(
        bend_checks(BendEstimates(later, outlier, not_white), calibration),
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
        closeness_checks(ClosenessEstimates(close, apart)),
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
        attention_spike_checks(AttentionSpikeEstimates(early, last, low, above_noise), e),
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
        mlp_spike_checks(MlpSpikeEstimates(first, above_noise)),
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
        low_band_checks(LowBandEstimates(ratio, windowed), e),
        procedure=_procedure(spectra, "each block's update resid_post − resid_pre (attention + MLP residual)"),
        details={"low-band share by block": dict(zip(_blocks(n), (e_.value for e_ in per_block)))},
        plot={"kind": "bars", "title": f"S0.10 on {model_name}: low-band share of each block's update",
              "categories": _blocks(n), "xlabel": "block", "ylabel": "share of power in the low band",
              "series": {"low-band share": series(per_block)}},
    )
