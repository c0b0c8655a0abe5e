"""S4.1's checks as a pure function of its estimates: ``parameters_measures.py`` counts, this decides, and the
self-tests (``tests/cases_s4.py``) drive the same function to hold and to fail each check. Every number it decides
with is in the topic's home, ``parameters.toml``, with its derivation.
"""

from claims.s4_ffn.parameters_measures import ParameterEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

SOURCE_TOTAL, SOURCE_FFN, MOST, SAME_COUNT = numbers(__file__, "SOURCE_TOTAL", "SOURCE_FFN", "MOST", "SAME_COUNT")


def parameters_checks(e: ParameterEstimates) -> list[Check]:
    """S4.1's claim check (the FFN share above MOST) and the count's control (S4's own figure comes back, to within
    SAME_COUNT parameters). Pure: the same estimates give the same checks.

    Returns:
        one claim check and one control, in that order.
    """
    return [
        Check.of("FFN parameters / all parameters", e.ffn_share, "fraction", ">", MOST,
                 **catalogued("S4.1/ffn-share", source_percent=100 * SOURCE_FFN / SOURCE_TOTAL,
                              source_margin=SOURCE_FFN / SOURCE_TOTAL - MOST)),
        Check.of(f"FFN parameters the same count finds in S4's shape built as the zoo's GPT-2, minus {SOURCE_FFN:,}",
                 e.source_miss, "parameters", "<", SAME_COUNT, role="control",
                 **catalogued("S4.1/source-count")),
    ]
