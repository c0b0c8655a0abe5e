"""S4.4's checks as a pure function of its estimates: ``ffn_path_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s4.py``) drive the same function to hold and to fail each check.

S4 Appendix III: cosine 0.9967 is "not perfectly aligned in direction, though still quite close" (4.7°); 0.5178
gives "quite different directions" (58.8°). "Nearly the same way" is taken as nearer in angle to the first than to
the second: below the mid-angle, 31.7° (``NEARLY_SAME_WAY``). The control (version 6): the cosine above what any two
final states share, (c − b) / (1 − b), must clear the cosine S4 calls "quite different directions" (``EXCESS_FLOOR``):
discounting the shared direction, the FFN-only state is not "quite different" from its own final state.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

NEARLY_SAME_WAY = float(math.cos((math.acos(0.9967) + math.acos(0.5178)) / 2))  # 0.851
EXCESS_FLOOR = 0.5178
READOUT_TOLERANCE = 1e-3  # control: H between the model's logits and the final norm + head applied to its final state


@dataclass(frozen=True)
class FfnPathEstimates:
    """What S4.4's test measures at the last block, over sequences (the bootstrap unit).

    Attributes:
        ratio: ‖input + Σ FFN outputs‖ / ‖final state‖.
        cos: cos(input + Σ FFN outputs, final state).
        excess: that cosine's excess over the cross-token baseline, (c − b) / (1 − b) (fraction).
        input_cos: cos(input alone, final state).
        readout: largest H of the final norm + head applied to the captured final state to the model's logits
            (per prompt, Hellinger).
        below_siblings: mean H(prediction from input + Σ FFN outputs, model's) minus the seed siblings' (a reading;
            None without siblings).
        siblings: how many seed siblings ``below_siblings`` is measured against.
        h: shown beside the checks, deciding nothing: H of the final FFN-only state's prediction to the model's.
        readings, twin_readings: shown: ``ffn_path_measures.path_readings`` of the model and of its untrained twin.
        floor: shown: (prompts,) H between the model's prediction and its seed siblings' (None without siblings).
        by_depth: shown: {"cos", "ratio"}: per block, the FFN-only state's estimates against the stream.
    """

    ratio: Estimate
    cos: Estimate
    excess: Estimate
    input_cos: Estimate
    readout: Estimate
    below_siblings: Estimate | None = None
    siblings: int = 0
    h: Estimate | None = field(default=None, compare=False)
    readings: dict[str, np.ndarray] = field(default_factory=dict, compare=False)
    twin_readings: dict[str, np.ndarray] = field(default_factory=dict, compare=False)
    floor: np.ndarray | None = field(default=None, compare=False)
    by_depth: dict[str, list[Estimate]] = field(default_factory=dict, compare=False)


def ffn_path_checks(e: FfnPathEstimates) -> list[Check]:
    """S4.4's claim checks (shorter; nearly the same way), the sibling-floor reading where there are siblings, and
    three controls (the cross-token excess, the input alone, the readout)."""
    floor_checks = [] if e.below_siblings is None else [Check.of(
        "mean H(prediction from input + Σ FFN outputs, model's) − mean H(seed siblings', model's)",
        e.below_siblings, "Hellinger", "<", 0.0, role="reading",
        **catalogued("S4.4/mean-h-prediction-from-input-ffn-outputs-model-s-mean-h-seed-siblings",
                     siblings=e.siblings))]
    return [
        Check.of("‖input + Σ FFN outputs‖ / ‖final state‖", e.ratio, "ratio", "<", 1.0,
                 **catalogued("S4.4/input-ffn-outputs-final-state")),
        Check.of("cos(input + Σ FFN outputs, final state) (a reading of S4's words: see the details for others)", e.cos,
                 "cosine", ">", NEARLY_SAME_WAY,
                 **catalogued("S4.4/cos-input-ffn-outputs-final-state-a-reading-of-s4-s-words-see-the")),
        *floor_checks,
        Check.of("cosine excess over the cross-token baseline, (c − b) / (1 − b)", e.excess, "fraction", ">",
                 EXCESS_FLOOR, role="control",
                 **catalogued("S4.4/cosine-excess-over-the-cross-token-baseline-c-b-1-b", EXCESS_FLOOR=EXCESS_FLOOR)),
        Check.of("cos(input alone, final state)", e.input_cos, "cosine", "<", NEARLY_SAME_WAY,
                 role="control", **catalogued("S4.4/cos-input-alone-final-state")),
        Check.of("largest H(final norm + head applied to the captured final state, model's logits) over the prompts",
                 e.readout, "Hellinger", "<", READOUT_TOLERANCE, role="control",
                 **catalogued("S4.4/largest-h-final-norm-head-applied-to-the-captured-final-state-model-s")),
    ]
