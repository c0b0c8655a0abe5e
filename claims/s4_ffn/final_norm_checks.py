"""S4.5's checks as a pure function of its estimates: ``final_norm_measures.py`` measures, this decides, and the
self-tests (``tests/test_s4_checks.py``) drive the same function to fail each check. Every number it decides with is
in the topic's home, ``final_norm.toml``, with its derivation.

S4 Appendix III: "The LayerNorm will remove substantial differences in input norms. Norms of the outputs from the
LayerNorm will vary a little depending on how closely aligned the input vectors were." S4 measures "a little" once:
one vector turned by noise and scaled (SOURCE_TURNED_CHANGE, 23.1496 → 23.0546). Since version 9 the claim is decided
on S4's number with the uncertainty of that single draw, without a model of its distribution (issue 73): a model
moves norms "a little" as S4's did where S4's one draw would be an ordinary draw of its own changes, that is where at
least ``ALPHA_ONE_DRAW`` (the suite's level) of this model's vectors move no more than SOURCE_TURNED_CHANGE; where
fewer do, S4's figure would be a rare low draw here. The bound is S4's figure and the suite's level, fixed whatever
our values; version 8's factor over S4's figure (chosen when our values were known) is gone. S4's ordering (the
change at COSINE above the change at CLOSE) is a reading: on a norm whose output norm does not depend on direction
(an even gain, no bias) it is 0 by construction, where S4's claim holds best.
"""

from claims.s4_ffn.final_norm_measures import FinalNormEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

ALPHA_ONE_DRAW, SCALE_IDENTITY = numbers(__file__, "ALPHA_ONE_DRAW", "SCALE_IDENTITY")


def final_norm_checks(e: FinalNormEstimates) -> list[Check]:
    """S4.5's checks: the bound on "a little" (the claim check), S4's ordering (a reading), then the three controls.
    Pure: the same estimates give the same checks.

    Returns:
        one claim check, one reading and three controls, in that order.
    """
    return [
        Check.of("fraction of vectors moved no more than S4's one draw, turned to cosine 0.52 and × 10",
                 e.within_source, "fraction", ">", ALPHA_ONE_DRAW,
                 **catalogued("S4.5/a-little")),
        Check.of("relative output-norm change, turned to cosine 0.52 minus turned to 0.9967 (both × 10)",
                 e.turned_excess, "fraction", ">", 0.0, role="reading",
                 **catalogued("S4.5/ordering")),
        Check.of(f"implementation check: largest relative output-norm change over scales 0.5-1000 (hypothesis, "
                 f"{e.examples} examples)", e.worst_scale, "fraction", "<", SCALE_IDENTITY,
                 role="control",
                 **catalogued("S4.5/scale-identity")),
        Check.of("same measure with the norm replaced by identity, input × 10, least over the vectors",
                 e.unnormalised, "fraction", ">", SCALE_IDENTITY, role="control",
                 **catalogued("S4.5/unnormalised-control")),
        Check.of("fraction of vectors moved no more than S4's one draw, gain concentrated on 1/16 of the coordinates",
                 e.concentrated, "fraction", "<", ALPHA_ONE_DRAW, role="control",
                 **catalogued("S4.5/a-little-control-concentrated-gain")),
    ]
