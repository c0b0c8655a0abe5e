"""S4.1's checks as a pure function of its estimates: ``parameters_measures.py`` counts, this decides, and the
self-tests (``tests/cases_s4.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass, field

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

SOURCE_TOTAL, SOURCE_FFN = 10_788_929, 7_089_408  # S4 Appendix I
MOST = 0.5  # "most": more than half


@dataclass(frozen=True)
class ParameterEstimates:
    """What S4.1's test counts (exact: no interval).

    Attributes:
        ffn_share: FFN parameters / all parameters of the model (fraction).
        source_miss: |FFN parameters of S4's shape built as the zoo's GPT-2 − S4's figure| (parameters).
        count, gpt2_count: shown beside the checks, deciding nothing: the model's and S4's shape as GPT-2's
            ``parameters_measures.ParameterCount``.
    """

    ffn_share: Estimate
    source_miss: Estimate
    count: object | None = field(default=None, compare=False)
    gpt2_count: object | None = field(default=None, compare=False)


def parameters_checks(e: ParameterEstimates) -> list[Check]:
    """S4.1's claim check (the FFN share above one half) and the count's control (S4's own figure comes back)."""
    return [
        Check.of("FFN parameters / all parameters", e.ffn_share, "fraction", ">", MOST,
                 **catalogued("S4.1/ffn-parameters-all-parameters", SOURCE_FFN=SOURCE_FFN, SOURCE_TOTAL=SOURCE_TOTAL,
                              source_percent=100 * SOURCE_FFN / SOURCE_TOTAL, MOST=MOST,
                              source_margin=SOURCE_FFN / SOURCE_TOTAL - MOST)),
        Check.of(f"FFN parameters the same count finds in S4's shape built as the zoo's GPT-2, minus {SOURCE_FFN:,}",
                 e.source_miss, "parameters", "<", 0.5, role="control",
                 **catalogued("S4.1/ffn-parameters-the-same-count-finds-in-s4-s-shape-built-as-the-zoo-s")),
    ]
