"""Numerical instruments for latent-claims.

Model-agnostic measurements that no general library provides: power spectral
density along the sequence axis and its power-law fit (S0), Hellinger distance
(S4), input representation (inversion) by gradient descent (S3), sub-module
output ablation (S4.2), normalisation scale checks (S4.5), and the bootstrap
helpers every claim uses for its uncertainty.

Each module is self-tested on synthetic data of known answer under ``tests/``.
"""

from latent_instruments.errors import NonFiniteError

__all__ = ["NonFiniteError"]
