"""S1.4's checks as a pure function of its estimates: ``trajectory_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s1.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass, field

import numpy as np

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check


@dataclass(frozen=True)
class TrajectoryEstimates:
    """What S1.4's test measures over prompts (cosine units). Excess closeness is cos(state, row of τ_(t+1)) minus
    cos(state, row of a shuffled next token).

    Attributes:
        gain: the final block's excess closeness to the unembedding row W_U[τ_(t+1)] (final norm applied at every
            depth, the logit lens) minus max(earlier layers', 0).
        over_twin: the final layer's excess closeness, the model's minus its untrained twin's (paired).
        readings, twin_readings: shown beside the checks, deciding nothing: {"W_U", "W_E"}: (true, other), each
            (prompts, n_layers) mean cosines with the next token's row and another token's, model and twin.
        input_row: shown: the final gain read on the input-embedding row W_E (a reading since version 3).
        by_layer: shown: {"W_U", "W_E"}: each layer's mean excess closeness.
    """

    gain: Estimate
    over_twin: Estimate
    readings: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, compare=False)
    twin_readings: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, compare=False)
    input_row: Estimate | None = field(default=None, compare=False)
    by_layer: dict[str, list[Estimate]] = field(default_factory=dict, compare=False)


def trajectory_checks(e: TrajectoryEstimates) -> list[Check]:
    """S1.4's claim check (decided on W_U since version 3) and the untrained-twin control."""
    what, space = "the unembedding row W_U[τ_(t+1)]", "the final norm applied at every depth (logit lens)"
    return [
        Check.of(
            f"{what}: final block's excess closeness minus max(earlier layers', 0)",
            e.gain, "cosine", ">", 0.0,
            **catalogued("S1.4/final-block-s-excess-closeness-minus-max-earlier-layers-0", what=what, space=space)),
        Check.of("final-layer excess closeness to W_U[τ_(t+1)], model minus its untrained twin",
                 e.over_twin, "cosine", ">", 0.0, role="control",
                 **catalogued("S1.4/final-layer-excess-closeness-to-w-u-t-1-model-minus-its-untrained-twin")),
    ]
