"""S1.5's checks as a pure function of its estimates: ``probe_measures.py`` measures, this decides, and the self-tests
(``tests/cases_s1.py``) drive the same function to hold and to fail each check. Its rows, with their derivations,
and the one number it decides with (CONTROL_ERRORS) are in the topic's home, ``probe.toml``.

The claim's threshold is its own null (the probe with the play labels shuffled), not a number of the source's:
S1 gives no accuracy.
"""

import math

from claims.s1_attention.probe_measures import ProbeEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

CONTROL_ERRORS = numbers(__file__, "CONTROL_ERRORS")


def probe_checks(e: ProbeEstimates) -> list[Check]:
    """S1.5's claim check (above the shuffled-label null's high end) and its control (the null at chance: the
    majority rate plus CONTROL_ERRORS binomial standard errors of an accuracy over ``e.n`` windows). Pure.

    Returns:
        one claim check and one control, in that order.
    """
    null, chance = e.null, e.chance
    noise = CONTROL_ERRORS * math.sqrt(chance * (1 - chance) / e.n)
    return [
        Check.of("cross-validated accuracy of the best block's pooled features (37 plays)",
                 e.best, "fraction", ">", null.high,
                 **catalogued("S1.5/above-null", shuffles=e.shuffles, null=null.value, null_low=null.low,
                              null_high=null.high, chance=chance)),
        Check.of(f"the same with the play labels shuffled, mean of {e.shuffles} shufflings (the claim's best block)",
                 null, "fraction", "<", chance + noise,
                 role="control",
                 **catalogued("S1.5/null-control", n=e.n, floor=chance + noise, shuffles=e.shuffles)),
    ]
