"""S0.6 - S0.10: the spectra of what each block adds, its attention and MLP residuals.

S0.6 — untrained attention residuals already follow a nearly straight power law, layer 1 excepted (Fig 4).
S0.7 — untrained MLP residual spectra are close to the untrained hidden-state spectra (Fig 5).
S0.8 — trained attention residuals: spikes in the first three layers, smooth in the middle, a low-frequency
       spike in the last layer (Fig 6).
S0.9 — trained MLP residuals: a large spike in layer 1, smooth afterwards (Fig 7).
S0.10 — early layers add disproportionately more low-frequency power than later layers.

Depth mapping: S0's OPT-125m has 12 blocks. "The first three layers" are the
first quarter of the blocks (``early_blocks``: 1 of 4, 2 of 6, 3 of 12), "the
last layer" is the last block, "the middle" the blocks in between; "layer 1"
is block 1 at any depth. A spike is the largest rise of the full-resolution
spectrum above its fitted log-log law, in decades.
"""

import numpy as np
import pytest

from claims.s0_spectra.conftest import SPECTRA_NEEDS, early_blocks, estimate, loglog_panels, mean_fit
from latent_instruments.spectra import largest_excess, low_band_share
from reports.plots import series
from reports.records import Check

pytestmark = pytest.mark.gpu

# "Nearly straight" / "pretty close" (S0 Fig 4, 5) have no number. A law whose wiggles are a twentieth of the
# one decade S0's straight final-layer law spans (S0.4) reads as straight: 0.05 decades RMS (±12 % in power).
NEARLY_STRAIGHT = 0.05


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
    return (f"{spectra.attn.shape[0]} held-out sequences of {spectra.positions} tokens (S0: 8 × 2048), first token "
            f"dropped, |rfft|² of {what} averaged over d_model then sequences; {spectra.bins.centers.size} log-spaced "
            f"bins over {spectra.bins.band_decades:.2f} decades. Depth mapping: first {early_blocks(spectra.n_blocks)} "
            f"of {spectra.n_blocks} blocks stand for S0's first three of 12.")


@pytest.mark.claim("S0.6", version=2, sample="prompts")  # 2: more prompts while inconclusive (fixtures.rounds)
@pytest.mark.models("untrained", "reference")
@pytest.mark.needs(*SPECTRA_NEEDS)
def test_untrained_attention_residuals_are_nearly_straight(model_name, spectra, claim, settings):
    """S0.6: blocks 2..L's attention residuals scatter little about a power law; block 1 scatters most."""
    if spectra.n_blocks < 2:
        claim.not_informative("one block: there is no 'layer 1 excepted' to compare with")
    bins, attn = spectra.bins, spectra.attn
    rest = estimate(attn, lambda u: float(mean_fit(bins, u[:, 1:]).deviation.max()), settings.seed)
    outlier = estimate(attn, lambda u: _outlier(mean_fit(bins, u).deviation), settings.seed)
    deviation = mean_fit(bins, attn).deviation
    claim.record(
        [
            Check.of("largest scatter about a power law, blocks 2..L", rest, "decades", "<", NEARLY_STRAIGHT,
                     "S0 Fig 4: 'not a completely straight line, but it's pretty close'; nearly straight = scatter "
                     f"under {NEARLY_STRAIGHT} decades RMS, a twentieth of the one decade S0's straight laws span "
                     "(S0.4); the interval's high end must be under it"),
            Check.of("block 1's scatter minus the largest of blocks 2..L", outlier, "decades", ">", 0.0,
                     "S0 Fig 4: 'layer 1 is our outlier friend': block 1 scatters more than any later block"),
        ],
        procedure=_procedure(spectra, "each block's attention residual (attn_out)"),
        details={"scatter by block (decades)": dict(zip(_blocks(spectra.n_blocks), map(float, deviation)))},
        plot=_figure(model_name, "attention residuals (S0 Fig 4)", bins, attn),
    )


@pytest.mark.claim("S0.7", version=2, sample="prompts")  # 2: more prompts while inconclusive (fixtures.rounds)
@pytest.mark.models("untrained", "reference")
@pytest.mark.needs(*SPECTRA_NEEDS)
def test_untrained_mlp_residuals_match_hidden_states(model_name, spectra, claim, settings):
    """S0.7: each block's MLP residual has the spectral shape of the block's output hidden state.

    Shape distance: RMS difference of the log-binned spectra after removing each
    one's mean level (MLP residuals are smaller; S0 compares the curves' shapes).
    Where the hidden states themselves are within the tolerance of white noise,
    any two such spectra are "close": the claim is then not informative.
    """
    bins, mlp, n = spectra.bins, spectra.mlp, spectra.n_blocks
    hidden = spectra.hidden[:, -n:]  # each block's output
    shape = _shape_distance(bins, hidden, np.ones_like(hidden))  # (n_blocks,) distance from a flat spectrum
    if shape.mean() < NEARLY_STRAIGHT:
        claim.not_informative(
            f"the hidden states are featureless: their shape differs from white noise by {shape.mean():.3f} decades "
            f"RMS (mean over blocks), under the {NEARLY_STRAIGHT}-decade tolerance, so any two such spectra are close",
            details={"hidden-state shape distance from white, by block (decades)": dict(zip(_blocks(n), map(float, shape)))})
    paired = np.stack([mlp, hidden], axis=1)  # (batch, 2, n_blocks, n_freq)
    close = estimate(paired, lambda u: float(_shape_distance(bins, u[:, 0], u[:, 1]).mean()), settings.seed)
    claim.record(
        [
            Check.of("shape distance, MLP residual to hidden state, mean over blocks", close, "decades", "<",
                     NEARLY_STRAIGHT, "S0 Fig 5: 'the initial MLP residuals are pretty close to the initial hidden "
                     f"states'; close = under {NEARLY_STRAIGHT} decades RMS, the tolerance of S0.6"),
        ],
        procedure=_procedure(spectra, "each block's MLP residual (mlp_out) and output (resid_post)")
        + f" Hidden states' shape distance from white: {shape.mean():.3f} decades (must exceed the tolerance).",
        details={"shape distance by block (decades)": {
            b: {"MLP residual to hidden state": float(d), "hidden state to white": float(w)}
            for b, d, w in zip(_blocks(n), _shape_distance(bins, mlp, hidden), shape)}},
        plot={**_figure(model_name, "MLP residuals (S0 Fig 5)", bins, mlp),
              "panels": {  # beside the hidden states they are compared with
                  **loglog_panels(f"{model_name}: MLP residuals (S0 Fig 5)", _blocks(n), mlp),
                  **loglog_panels(f"{model_name}: hidden states (S0 Fig 3)", spectra.labels, spectra.hidden)}},
    )


@pytest.mark.claim("S0.8", version=2, sample="prompts")  # 2: more prompts while inconclusive (fixtures.rounds)
@pytest.mark.models("trained", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
def test_trained_attention_residual_spikes(model_name, spectra, claim, settings):
    """S0.8: the early blocks' attention residuals spike more than the middle ones; the last spikes at low frequency."""
    n, e = spectra.n_blocks, early_blocks(spectra.n_blocks)
    if n - e < 2:
        claim.not_informative(f"{n} blocks: after the first {e} and the last there is no middle to compare")
    bins, attn = spectra.bins, spectra.attn
    early = estimate(attn, lambda u: _over_middle(_spikes(bins, u)[0], slice(0, e), e), settings.seed)
    last = estimate(attn, lambda u: _over_middle(_spikes(bins, u)[0], slice(-1, None), e), settings.seed)
    low = estimate(attn[:, -1], lambda u: _low_band_excess(bins, u), settings.seed)
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
        ],
        procedure=_procedure(spectra, "each block's attention residual (attn_out)"),
        details={"spikes by block": {b: {"size (decades)": float(s), "at (cycles/token)": float(f)}
                                     for b, s, f in zip(_blocks(n), size, freq)}},
        plot=_figure(model_name, "attention residuals (S0 Fig 6)", bins, attn),
    )


@pytest.mark.claim("S0.9", version=2, sample="prompts")  # 2: more prompts while inconclusive (fixtures.rounds)
@pytest.mark.models("trained", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
def test_trained_mlp_residual_spike_in_block_one(model_name, spectra, claim, settings):
    """S0.9: block 1's MLP residual spikes more than any later block's."""
    if spectra.n_blocks < 2:
        claim.not_informative("one block: no later block to compare with")
    bins, mlp = spectra.bins, spectra.mlp
    first = estimate(mlp, lambda u: _outlier(_spikes(bins, u)[0]), settings.seed)
    size, freq = _spikes(bins, mlp)
    claim.record(
        [
            Check.of("block 1's spike minus the largest of blocks 2..L", first, "decades", ">", 0.0,
                     "S0 Fig 7: 'the first layer here has a big spike again, and then things smoothen out with no "
                     "spike at the end': block 1's spike exceeds every later block's"),
        ],
        procedure=_procedure(spectra, "each block's MLP residual (mlp_out)"),
        details={"spikes by block": {b: {"size (decades)": float(s), "at (cycles/token)": float(f)}
                                     for b, s, f in zip(_blocks(spectra.n_blocks), size, freq)}},
        plot=_figure(model_name, "MLP residuals (S0 Fig 7)", bins, mlp),
    )


@pytest.mark.claim("S0.10", version=2, sample="prompts")  # 2: more prompts while inconclusive (fixtures.rounds)
@pytest.mark.models("trained", "hf")
@pytest.mark.needs(*SPECTRA_NEEDS)
def test_early_blocks_add_low_frequencies(model_name, spectra, claim, settings):
    """S0.10: the early blocks' updates put a larger share of their power in the low band than later blocks'."""
    n, e = spectra.n_blocks, early_blocks(spectra.n_blocks)
    if n - e < 1:
        claim.not_informative(f"{n} blocks: no later block to compare with")
    bins, update = spectra.bins, spectra.update

    def early_over_late(u) -> float:
        share = low_band_share(bins, u.mean(axis=0))  # (n_blocks,)
        return float(np.log10(share[:e].mean() / share[e:].mean()))

    ratio = estimate(update, early_over_late, settings.seed)
    per_block = [estimate(update[:, i], lambda u: float(low_band_share(bins, u.mean(axis=0))), settings.seed)
                 for i in range(n)]
    claim.record(
        [
            Check.of(f"log10 of the low-band share of blocks 1..{e}'s updates over later blocks'", ratio, "decades",
                     ">", 0.0, "S0 after Fig 7: early layers 'disproportionately add smooth long range structure'; "
                     "disproportionate = a larger share of the update's power in the low band (lowest third of log "
                     "frequency) than later blocks give, i.e. a log ratio above 0; no figure for a margin"),
        ],
        procedure=_procedure(spectra, "each block's update resid_post − resid_pre (attention + MLP residual)"),
        details={"low-band share by block": dict(zip(_blocks(n), (e_.value for e_ in per_block)))},
        plot={"kind": "bars", "title": f"S0.10 on {model_name}: low-band share of each block's update",
              "categories": _blocks(n), "xlabel": "block", "ylabel": "share of power in the low band",
              "series": {"low-band share": series(per_block)}},
    )
