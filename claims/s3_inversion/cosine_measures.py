"""S3.13's statistic: the cosine distance reached over its start. test_cosine.py measures with it; cosine_checks.py
decides.
"""


import numpy as np


def reached_over_start(units: np.ndarray, reached: int, start: int) -> float:
    """Mean cosine distance reached over the mean at the start: columns of (prompts, …) units."""
    return float(units[:, reached].mean() / units[:, start].mean())
