"""S0.6 - S0.10's measurements: the spectra of what each block adds, read by the residual claim tests
(``test_residual_untrained.py``: S0.6, S0.7; ``test_residual_trained.py``: S0.8 - S0.10), whose checks are in
``residual_checks.py``.

Depth mapping: S0's OPT-125m has 12 blocks. "The first three layers" are the first quarter of the blocks
(``early_blocks``: 1 of 4, 2 of 6, 3 of 12), "the last layer" is the last block, "the middle" the blocks in between;
"layer 1" is block 1 at any depth. A spike is the largest rise of the full-resolution spectrum above its fitted
log-log law, in decades. Shape distance: RMS difference of the log-binned spectra after removing each one's mean
level (MLP residuals are smaller; S0 compares the curves' shapes).
"""

import numpy as np

from claims.s0_spectra.model_spectra import early_blocks, loglog_panels, mean_fit
from fixtures.calibration import Margin
from fixtures.catalogue import load_catalogue
from fixtures.catalogue_text import procedure
from latent_instruments.clean_law import CLEAN_LAW_QUANTILE, clean_law_scatter, periodograms_averaged
from latent_instruments.spectra import largest_excess, low_band_share
from models.zoo import resolve


# S0.6 and S0.7 since issue 73: "pretty close" calibrated out of sample on S0's subject class, a margin per length,
# last-look sample size and depth: the largest of 59 random inits' high ends (a 95 %/95 % tolerance bound), written
# into residual.toml's [[claims.calibrations]] (the topic's home) by claims/s0_spectra/calibrate_pretty_close.py,
# and read back through the catalogue. A shape without one
# (S0's 2048 until a GPU runs the script) has no margin: its record is inconclusive, and says how to calibrate it.
CALIBRATIONS = {(claim, c.positions, c.sequences): c for claim in ("S0.6", "S0.7")
                for c in load_catalogue().claims[claim].calibrations if c.name == "pretty close"}


def pretty_close(claim_id: str, positions: int, sequences: int, blocks: int,
                 confidence: float | None = None) -> Margin | None:
    """The calibrated margin of ``claim_id`` ("S0.6" or "S0.7") for ``positions`` tokens, a last look of ``sequences``
    sequences and ``blocks`` blocks, its inits' high ends taken at the interval level ``confidence`` (None: any), or
    None where none was calibrated at that shape and level."""
    calibration = CALIBRATIONS.get((claim_id, positions, sequences))
    if calibration is None or (confidence is not None and abs(calibration.confidence - confidence) > 1e-6):
        return None
    return calibration.at(blocks)


def instrument_check(model_name: str) -> str:
    """The procedure's note that on S0's own subject class (a random-init OPT-125m, ``ref-opt-125m``) S0.6's and
    S0.7's claim checks are instrument checks: the class their margins were read on; "" on any other subject."""
    same_class = resolve(model_name.removesuffix(":untrained")).source == resolve("ref-opt-125m").source
    return procedure("S0.6/instrument-check") if same_class else ""


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


def block_labels(n: int) -> list[str]:
    """["block 1", ..., "block n"]."""
    return [f"block {i + 1}" for i in range(n)]


def shape_distance(bins, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """RMS difference of two log-binned mean spectra after removing their mean offset (shape only), decades.

    a, b: (batch, n_blocks, n_freq) → (n_blocks,).
    """
    la, lb = bins.log_power(a.mean(axis=0)), bins.log_power(b.mean(axis=0))
    diff = (la - la.mean(axis=-1, keepdims=True)) - (lb - lb.mean(axis=-1, keepdims=True))
    return np.sqrt(np.mean(diff ** 2, axis=-1))


def outlier_lead(per_block: np.ndarray) -> float:
    """Block 1's value (scatter or spike) minus the largest of the later blocks', decades."""
    return float(per_block[0] - per_block[1:].max())


def spikes(bins, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(spike size in decades, its frequency) per block of the mean spectrum; units (batch, n_blocks, n_freq)."""
    mean = units.mean(axis=0)
    return largest_excess(bins, mean, mean_fit(bins, units))


def over_middle(size: np.ndarray, blocks: slice, e: int) -> float:
    """Mean spike of ``blocks`` minus the mean spike of the middle blocks (after the first e, before the last)."""
    return float(size[blocks].mean() - size[e:-1].mean())


def low_band_excess(bins, units: np.ndarray) -> float:
    """Largest excess above the law in the low band minus the largest in the rest, decades; units (batch, n_freq)."""
    mean, law = units.mean(axis=0), mean_fit(bins, units)
    return float(largest_excess(bins, mean, law, band=bins.low)[0] - largest_excess(bins, mean, law, band=~bins.low)[0])


def spectra_figure(model_name: str, title: str, bins, psd: np.ndarray) -> dict:
    """A log-log figure of each block's mean spectrum; psd (batch, n_blocks, n_freq)."""
    return {"kind": "loglog", "x": bins.freqs.tolist(), "xlabel": "frequency (cycles/token)", "ylabel": "power",
            "panels": loglog_panels(f"{model_name}: {title}", block_labels(psd.shape[1]), psd)}


def residual_procedure(spectra, what: str) -> str:
    """The procedure sentence of an S0.6-S0.10 record (the catalogue's "S0.6/residual-spectra"); ``what`` names the
    spectra's states."""
    return procedure("S0.6/residual-spectra", sequences=spectra.sequences, positions=spectra.positions, what=what,
                     bins=spectra.bins.centers.size, band_decades=spectra.bins.band_decades,
                     early=early_blocks(spectra.n_blocks), n_blocks=spectra.n_blocks)


def flattest_law(bins, units: np.ndarray) -> float:
    """The largest (flattest) exponent of blocks 2..L's mean spectra; units (batch, n_blocks, n_freq)."""
    return float(mean_fit(bins, units[:, 1:]).slope.max())


def closeness_ratio(bins, units: np.ndarray, n: int) -> float:
    """Mean shape distance over blocks of the MLP residual to the hidden state, as a fraction of the attention
    residual's.

    units: (batch, 3 n, n_freq): the MLP residuals of blocks 1..n, their attention residuals, then the hidden states
    at their outputs.
    """
    mlp, attn, hidden = units[:, :n], units[:, n:2 * n], units[:, 2 * n:]
    return float(shape_distance(bins, mlp, hidden).mean() / shape_distance(bins, attn, hidden).mean())


def apart_over_clean_law(bins, units: np.ndarray, n: int, tolerance: float) -> float:
    """Mean shape distance, attention residual to hidden state over blocks, minus a clean law's scatter, decades.

    units: (batch, 2 n, n_freq): the attention residuals of blocks 1..n, then the hidden states at their outputs.
    """
    return float(shape_distance(bins, units[:, :n], units[:, n:]).mean() - tolerance)


def spikes_over_null(bins, units: np.ndarray, blocks: list[slice]) -> float:
    """The smallest, over groups of blocks, of their mean spike minus the same blocks' mean spike with positions
    shuffled, decades; units (batch, 2, n_blocks, n_freq): the residuals, then the shuffled residuals."""
    real, null = spikes(bins, units[:, 0])[0], spikes(bins, units[:, 1])[0]
    return float(min(real[b].mean() - null[b].mean() for b in blocks))


def early_over_late(bins, units: np.ndarray, e: int) -> float:
    """log10 of the early blocks' mean low-band share over the later blocks'; units (batch, n_blocks, n_freq)."""
    share = low_band_share(bins, units.mean(axis=0))  # (n_blocks,)
    return float(np.log10(share[:e].mean() / share[e:].mean()))
