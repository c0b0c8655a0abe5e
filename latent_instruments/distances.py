"""Distances between probability distributions and vectors (S4)."""

import math

import torch

from latent_instruments.errors import require_finite


def hellinger_distance(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Hellinger distance H(P, Q) = ||sqrt(p) - sqrt(q)||_2 / sqrt(2), in [0, 1].

    As defined in source S4: 0 for identical distributions, 1 for disjoint
    supports. Computed in float64 for stability.

    Args:
        p, q: probabilities over the last axis, shape (..., vocab), broadcastable.
    Returns:
        shape (...), float64.
    Raises:
        ValueError: if an entry is negative.
        NonFiniteError: if an input holds NaN or inf.
    """
    require_finite(p, "first distribution")
    require_finite(q, "second distribution")
    if (p < 0).any() or (q < 0).any():
        raise ValueError("probabilities must be non-negative")
    p, q = p.double(), q.double()
    return (p.sqrt() - q.sqrt()).square().sum(dim=-1).sqrt() / math.sqrt(2)
