"""S4.5's measurements: the paired excess of two turns and the hypothesis search for the largest change over scales.
test_layernorm.py measures with these; final_norm_checks.py decides.
"""


import numpy as np
import torch
from hypothesis import given, settings as hypothesis_settings, strategies as st

from latent_instruments.normalization import relative_norm_change


def paired_excess(u: np.ndarray) -> float:
    """Mean over prompts and vectors of the first change minus the second; units (batch, k, 2)."""
    return float((u[..., 0] - u[..., 1]).mean())


PROPERTY_EXAMPLES = 60  # hypothesis examples: (row of the sampled final-block outputs, scale in [0.5, 1000])


def worst_scale_change(norm: torch.nn.Module, x: torch.Tensor) -> tuple[float, int]:
    """The largest relative output-norm change hypothesis finds over rows of x (vectors, d_model) and scales in
    [0.5, 1000] (derandomised: the same examples every run), and the number of examples tried."""
    seen: list[float] = []

    @hypothesis_settings(max_examples=PROPERTY_EXAMPLES, derandomize=True, database=None, deadline=None)
    @given(row=st.integers(0, x.shape[0] - 1), scale=st.floats(0.5, 1000.0))
    def keeps_norm(row, scale):
        vector = x[row : row + 1]
        seen.append(relative_norm_change(norm, vector, vector * scale).item())
        assert seen[-1] < 1e-3

    try:
        keeps_norm()
    except AssertionError:
        pass  # hypothesis shrank a counterexample; its change is in `seen`
    return max(seen), len(seen)
