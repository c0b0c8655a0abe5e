"""S1.4's statistics: the final block's excess closeness to the next token's row and the trained model's over its
twin's. test_trajectory.py measures with these; trajectory_checks.py decides.
"""


import numpy as np


def final_gain(units: np.ndarray) -> float:
    """Statistic of units (prompts, layers): the final layer's mean excess closeness minus the larger of every
    earlier layer's and 0 (other tokens'), in the units' own unit."""
    mean = units.mean(axis=0)
    return float(mean[-1] - max(mean[:-1].max(), 0.0))


def over_twin(paired: np.ndarray) -> float:
    """Control statistic: the model's mean final-layer excess closeness minus its untrained twin's, paired per prompt
    (paired (prompts, 2): model, twin)."""
    return float(paired[:, 0].mean() - paired[:, 1].mean())
