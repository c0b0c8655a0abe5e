"""S3.8's measurements: gradient×input and occlusion attributions over a prompt's positions, their rank agreement and
S3.8's estimates from it. test_attribution.py measures with these; attribution_checks.py decides.
"""

import numpy as np
import torch
from scipy.stats import spearmanr

from claims.s3_inversion.attribution_checks import AgreementEstimates
from latent_instruments.stats import bootstrap, sample_mean


def other_frequent_token(ids: torch.Tensor) -> torch.Tensor:
    """Per position, the batch's most frequent token, or its second most frequent where the position holds the
    first: a substitute that always differs from the token it replaces, (batch, T) of (batch, T) ids.

    Raises:
        ValueError: if the batch holds one distinct token (nothing else can occlude it).
    """
    values, counts = torch.unique(ids, return_counts=True)
    order = values[counts.argsort(descending=True, stable=True)]
    if order.numel() < 2:
        raise ValueError("the prompts hold one distinct token: no other token can occlude it")
    return torch.where(ids == order[0], order[1], order[0])


def rank_agreement(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman ρ over positions per prompt of two (batch, T) attributions; NaN where either is constant."""
    return np.array([np.nan if np.ptp(x) == 0 or np.ptp(y) == 0 else spearmanr(x, y).statistic
                     for x, y in zip(a, b)])


def agreement_estimates(rho: np.ndarray, twin_rho: np.ndarray, seed: int) -> AgreementEstimates:
    """S3.8's estimates from per-prompt ρ of defined prompts, (prompts,) each: the means, bootstrapped."""
    return AgreementEstimates(bootstrap(rho, sample_mean, seed=seed),
                              bootstrap(twin_rho, sample_mean, seed=seed))
