"""S4.6 - S4.8's statistics over the approximation's distances. test_similar_strings.py measures with these;
similar_strings_checks.py decides.
"""

import numpy as np


def gain_over_shuffled(u: np.ndarray) -> float:
    """S4.8's control: the all-blocks gain over the first block, on each prompt's own approximations minus on another
    prompt's, in Hellinger distance. units (P, 4) per prompt: H(first), H(all) on its own approximations, then the
    same with the approximations of the previous prompt (prompt-shuffled)."""
    return float((u[:, 0] - u[:, 1]).mean() - (u[:, 2] - u[:, 3]).mean())
