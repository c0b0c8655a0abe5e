"""S4.4's checks as a pure function of its estimates: ``ffn_path_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s4.py``) drive the same function to hold and to fail each check. Every number it decides
with is in the topic's home, ``ffn_path.toml``, with its derivation.

S4 Appendix III: cosine CLOSE is "not perfectly aligned in direction, though still quite close"; DIFFERENT gives
"quite different directions". "Nearly the same way" is taken as nearer in angle to the first than to the second:
below their mid-angle (``NEARLY_SAME_WAY``, the cosine of the mid-angle). The control (version 6): the cosine above
what any two final states share, (c − b) / (1 − b), must clear the cosine S4 calls "quite different directions"
(``EXCESS_FLOOR``): discounting the shared direction, the FFN-only state is not "quite different" from its own final
state.
"""

import math

from claims.s4_ffn.ffn_path_measures import SOURCE_FLOOR, FfnPathEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

SHORTER, CLOSE, DIFFERENT, NEARLY_SAME_WAY, EXCESS_FLOOR, READOUT_TOLERANCE = numbers(
    __file__, "SHORTER", "CLOSE", "DIFFERENT", "NEARLY_SAME_WAY", "EXCESS_FLOOR", "READOUT_TOLERANCE")


def _angles() -> dict[str, float]:
    """The derivation's angles, in degrees: of CLOSE, of DIFFERENT, and their mid-angle (NEARLY_SAME_WAY's)."""
    close, different = math.degrees(math.acos(CLOSE)), math.degrees(math.acos(DIFFERENT))
    return {"close_angle": close, "different_angle": different, "mid_angle": (close + different) / 2}


def ffn_path_checks(e: FfnPathEstimates) -> list[Check]:
    """S4.4's claim checks (shorter: the norm ratio below SHORTER; nearly the same way: the cosine above
    NEARLY_SAME_WAY), the sibling-floor reading where there are siblings, and three controls (the cross-token excess
    above EXCESS_FLOOR, the input alone below NEARLY_SAME_WAY, the readout within READOUT_TOLERANCE). Pure: the same
    estimates give the same checks.

    Returns:
        two claim checks, the reading where ``e.below_siblings`` is measured, then three controls, in that order.
    """
    floor_checks = [] if e.below_siblings is None else [Check.of(
        "mean H(prediction from input + Σ FFN outputs, model's) − mean H(seed siblings', model's)",
        e.below_siblings, "Hellinger", "<", 0.0, role="reading",
        **catalogued("S4.4/sibling-floor", siblings=e.siblings,
                     source_floor=", ".join(f"{f:.4f}" for f in SOURCE_FLOOR)))]
    return [
        Check.of("‖input + Σ FFN outputs‖ / ‖final state‖", e.ratio, "ratio", "<", SHORTER,
                 **catalogued("S4.4/shorter")),
        Check.of("cos(input + Σ FFN outputs, final state) (a reading of S4's words: see the details for others)", e.cos,
                 "cosine", ">", NEARLY_SAME_WAY,
                 **catalogued("S4.4/nearly-same-way", **_angles())),
        *floor_checks,
        Check.of("cosine excess over the cross-token baseline, (c − b) / (1 − b)", e.excess, "fraction", ">",
                 EXCESS_FLOOR, role="control",
                 **catalogued("S4.4/cross-token-excess")),
        Check.of("cos(input alone, final state)", e.input_cos, "cosine", "<", NEARLY_SAME_WAY,
                 role="control", **catalogued("S4.4/input-alone")),
        Check.of("largest H(final norm + head applied to the captured final state, model's logits) over the prompts",
                 e.readout, "Hellinger", "<", READOUT_TOLERANCE, role="control",
                 **catalogued("S4.4/readout")),
    ]
