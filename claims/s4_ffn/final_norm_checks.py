"""S4.5's checks as a pure function of its estimates: ``final_norm_measures.py`` measures, this decides,
and the self-tests (``tests/test_s4_checks.py``) drive the same function to fail each check.

S4 Appendix III: "The LayerNorm will remove substantial differences in input norms. Norms of the outputs from the
LayerNorm will vary a little depending on how closely aligned the input vectors were." S4 measures "a little" once:
one vector turned to cosine 0.5178 and scaled × 10 moved the output norm by 0.41 % (23.1496 → 23.0546). Since
version 9 the claim is decided on S4's number with the uncertainty of that single draw, without a model of its
distribution (issue 73): a model moves norms "a little" as S4's did where S4's one draw would be an ordinary draw of
its own changes, that is where at least ``ALPHA_ONE_DRAW`` (the suite's 5 %) of this model's vectors move no more than
0.41 %; where fewer do, S4's figure would be a rare low draw here, and this model moves them more than a little. The
bound is S4's figure and the suite's level, fixed whatever our values. Version 8's 10 × 0.41 % (a factor chosen when
our values were known) is gone. S4's ordering (the change at cosine 0.52 above the change at 0.9967) is a reading: on
a norm whose output norm does not depend on direction (an even gain, no bias) it is 0 by construction, where S4's
claim holds best.
"""

from dataclasses import dataclass, field

import numpy as np

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

SCALE, COSINE = 10.0, 0.52  # S4 Appendix III
CLOSE = 0.9967  # S4 Appendix III: the small noise (× 0.1) leaves cosine 0.9967 and moves the output norm 0.08 %
SOURCE_TURNED_CHANGE = abs(23.0546 - 23.1496) / 23.1496  # 0.41 %, S4's one vector at cosine 0.5178
ALPHA_ONE_DRAW = 0.05  # the suite's level: S4's one draw is no rarer than this among a model's own changes
SCALE_IDENTITY = 1e-3  # the implementation check's bound: 250× S4's ×10 change (4e-6), for eps and low precision


@dataclass(frozen=True)
class FinalNormEstimates:
    """What S4.5's test measures on a model's final norm, each over prompts (the bootstrap unit).

    Attributes:
        within_source: the fraction of vectors whose relative output-norm change (|‖n(x')‖ − ‖n(x)‖| / ‖n(x)‖) is at
            most S4's 0.41 % when each input is turned to cosine 0.52 and scaled × 10.
        turned: the mean relative output-norm change under the same turns (shown; S4's figure sits beside it).
        turned_excess: the paired difference, change at cosine 0.52 minus change at 0.9967 (both × 10).
        worst_scale: the largest change hypothesis finds over scales 0.5-1000 (a point: an implementation check).
        examples: how many examples hypothesis tried.
        unnormalised: the least change with the norm replaced by identity, input × 10 (9 by construction).
        concentrated: ``within_source`` with the gain concentrated on 1/16 of the coordinates.
        changes: shown beside the checks, deciding nothing: {"turned", "nearly", "scaled"}: the relative output-norm
            changes (prompts, k) turned to cosine 0.52, to 0.9967 (both × 10), and × 10 alone.
        direction: shown: what makes the output norm depend on direction (the gain's unevenness, the bias's size,
            the mean change with the gain evened and with the bias removed).
        mean_input_norm: shown: the mean norm of the sampled final-block outputs (activation units).
        readings: shown: {"median", "under 1 %", "nearly", "scaled"}: the median change turned to 0.52, the fraction
            of vectors it moves under 1 %, and the mean change turned to 0.9967 and × 10 alone.
    """

    within_source: Estimate
    turned: Estimate
    turned_excess: Estimate
    worst_scale: Estimate
    examples: int
    unnormalised: Estimate
    concentrated: Estimate
    changes: dict[str, np.ndarray] = field(default_factory=dict, compare=False)
    direction: dict = field(default_factory=dict, compare=False)
    mean_input_norm: float = field(default=float("nan"), compare=False)
    readings: dict[str, Estimate] = field(default_factory=dict, compare=False)


def final_norm_checks(e: FinalNormEstimates) -> list[Check]:
    """S4.5's checks: the bound on "a little" (the claim check), S4's ordering (a reading), then the three controls.
    Pure: the same estimates give the same checks.

    Returns:
        one claim check, one reading and three controls, in that order.
    """
    return [
        Check.of("fraction of vectors moved no more than S4's one draw, turned to cosine 0.52 and × 10",
                 e.within_source, "fraction", ">", ALPHA_ONE_DRAW,
                 **catalogued("S4.5/a-little", SOURCE_TURNED_CHANGE=SOURCE_TURNED_CHANGE,
                              ALPHA_ONE_DRAW=ALPHA_ONE_DRAW)),
        Check.of("relative output-norm change, turned to cosine 0.52 minus turned to 0.9967 (both × 10)",
                 e.turned_excess, "fraction", ">", 0.0, role="reading",
                 **catalogued("S4.5/relative-output-norm-change-turned-to-cosine-0-52-minus-turned-to-0")),
        Check.of(f"implementation check: largest relative output-norm change over scales 0.5-1000 (hypothesis, "
                 f"{e.examples} examples)", e.worst_scale, "fraction", "<", SCALE_IDENTITY,
                 role="control",
                 **catalogued("S4.5/implementation-check-largest-relative-output-norm-change-over-scales")),
        Check.of("same measure with the norm replaced by identity, input × 10, least over the vectors",
                 e.unnormalised, "fraction", ">", SCALE_IDENTITY, role="control",
                 **catalogued("S4.5/same-measure-with-the-norm-replaced-by-identity-input-10-least-over")),
        Check.of("fraction of vectors moved no more than S4's one draw, gain concentrated on 1/16 of the coordinates",
                 e.concentrated, "fraction", "<", ALPHA_ONE_DRAW, role="control",
                 **catalogued("S4.5/a-little-control-concentrated-gain", SOURCE_TURNED_CHANGE=SOURCE_TURNED_CHANGE,
                              ALPHA_ONE_DRAW=ALPHA_ONE_DRAW)),
    ]
