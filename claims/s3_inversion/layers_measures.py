"""S3.14's statistic: the share of block 1's advantage over block 3 that blocks 1-3 together recover. test_layers.py
measures with it; layers_checks.py decides.
"""


import numpy as np


def recovered_share(units: np.ndarray, scale, chosen: np.ndarray) -> float:
    """Statistic: the share of block 1's advantage over block 3 that blocks 1-3 together recover, each target its
    headline setting (``scale.headline``); 0 where there is no advantage in the sample.

    Args:
        units: token accuracy per prompt, (prompts, 3 targets: block 1, block 3, together, settings), the reported
            prompts (``Scale.reported``).
        chosen: (3,) each target's headline setting, ``Scale.chosen`` of the whole units.
    """
    best = scale.headline(units, chosen)
    gap = best[0] - best[1]
    return float((best[2] - best[1]) / gap) if gap > 0 else 0.0
