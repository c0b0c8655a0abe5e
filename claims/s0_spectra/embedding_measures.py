"""S0.2's statistic: the low-band minus high-band gain of tok+pos over tok. test_embeddings.py measures with it;
embedding_checks.py decides.
"""

import numpy as np


def position_tilt(bins, pos: np.ndarray, tok: np.ndarray) -> float:
    """Low-band gain minus high-band gain, in decades, of tok+pos over tok; pos, tok (batch, n_freq)."""
    p, t = pos.mean(axis=0), tok.mean(axis=0)
    return float(np.log10(p[bins.low].mean() / t[bins.low].mean()) - np.log10(p[bins.high].mean() / t[bins.high].mean()))
