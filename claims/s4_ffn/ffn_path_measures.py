"""S4.4's statistics: paired differences and the cosine excess over the cross-token baseline. test_ffn_path.py measures
with these; ffn_path_checks.py decides.
"""


import numpy as np
import torch

from latent_instruments.geometry import excess_over_baseline


def excess_over_cross_token(units: np.ndarray) -> float:
    """(c − b) / (1 − b) of the mean same-token cosine c and cross-token cosine b; units (batch, 2) = [c, b]."""
    c, b = units.mean(axis=0)
    return float(excess_over_baseline(torch.tensor(c), torch.tensor(b)))
