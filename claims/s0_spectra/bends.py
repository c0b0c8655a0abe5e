"""S0.6's bend: how far each block's attention-residual spectrum curves away from a straight power law in log-log, net
of the curvature a straight law shows through the same cut (leakage). Shared by S0.6's measure
(``residual_measures.measure_bends``) and the calibration of its margin (``calibrate_pretty_close.py``), so both
measure the same.
"""

import numpy as np

from claims.s0_spectra.model_spectra import mean_fit
from latent_instruments.clean_law import straight_law_bend
from latent_instruments.spectra import power_law_bend


def straight_bends(bins, units: np.ndarray) -> np.ndarray:
    """The bend a straight law shows through the cut, per block, at each block's fitted slope of the whole sample
    (:func:`~latent_instruments.clean_law.straight_law_bend`); units (batch, n_blocks, n_freq) → (n_blocks,). Fixed
    within a bootstrap: a resample's slope moves it by far less than the interval's width."""
    return np.array([straight_law_bend(bins, float(s)) for s in mean_fit(bins, units).slope])


def bends(bins, units: np.ndarray, straight: np.ndarray | float = 0.0) -> np.ndarray:
    """Each block's bend (:func:`~latent_instruments.spectra.power_law_bend`) of the mean spectrum over sequences,
    less ``straight`` (:func:`straight_bends`); units (batch, n_blocks, n_freq) → (n_blocks,), decades per decade²."""
    return power_law_bend(bins, units.mean(axis=0)) - straight


def largest_later_bend(bins, units: np.ndarray, straight: np.ndarray | float = 0.0) -> float:
    """The largest |bend| of blocks 2..L beyond a straight law's; units (batch, n_blocks, n_freq), the attention
    residuals of blocks 1..L."""
    return float(np.abs(bends(bins, units, straight)[1:]).max())


def calibration_figure(calibration, measured, label: str) -> dict:
    """S0.6's margin drawn against its out-of-sample calibration (issues 64, 73): the K inits' high ends sorted by
    rank, the margin (their largest, rounded up) as a flat line, and this record's statistic with its interval beside
    them at rank K + 1; a "lines" figure (``reports.plots``).

    Args:
        calibration: the catalogue's ``Margin`` at this shape (its ``values``, ``seeds``, ``blocks``, ``margin``;
            decades per decade²).
        measured: this record's largest later bend (an ``Estimate``).
        label: the subject's name, for the legend.
    """
    k = len(calibration.values)
    ranks = list(range(1, k + 1))
    return {"kind": "lines", "title": f"S0.6: 'pretty close' at {calibration.positions} tokens, out of sample",
            "x": ranks, "xlabel": f"rank among {k} other inits of OPT-125m (seeds {calibration.seeds[0]}-"
                                  f"{calibration.seeds[-1]}), then this subject",
            "ylabel": f"largest |bend| of blocks 2..{calibration.blocks}, high end (decades/decade²)",
            "series": {"calibration inits' high ends (sorted)": {"value": sorted(calibration.values)},
                       f"margin: their largest, rounded up (a {calibration.coverage * 100:.0f}/"
                       f"{calibration.tolerance_confidence * 100:.0f} tolerance bound)": {
                           "x": [1, k + 1], "value": [calibration.margin, calibration.margin]},
                       f"{label} (95 % interval)": {"x": [k + 1], "value": [measured.value], "low": [measured.low],
                                                    "high": [measured.high]}}}
