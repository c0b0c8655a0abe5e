"""S4.2's checks as a pure function of its estimates: ``feedforward_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s4.py``, ``tests/test_s4_checks.py``) drive the same function to hold and to fail. Every
number it decides with is in the topic's home, ``feedforward.toml``, with its derivation.
"""

from claims.s4_ffn.feedforward_measures import SOURCE_NO_ATTN, SOURCE_NO_FFN, SOURCE_RATIO, FeedforwardEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

LARGER, MOST_PRONOUNCED, DEAD_ABLATION = numbers(__file__, "LARGER", "MOST_PRONOUNCED", "DEAD_ABLATION")


def _source_figures() -> dict:
    """The derivations' figures computed from S4's Appendix IV table (the home's SOURCE_NO_ATTN_b, SOURCE_NO_FFN_b):
    its ratios per block, the smallest, block 1's difference and the later blocks' least and largest."""
    later = [f - a for f, a in zip(SOURCE_NO_FFN[1:], SOURCE_NO_ATTN[1:])]
    return {"source_ratios": ", ".join(f"{r:.2f}" for r in SOURCE_RATIO), "source_weakest": min(SOURCE_RATIO),
            "source_lead": SOURCE_NO_FFN[0] - SOURCE_NO_ATTN[0], "source_later_least": min(later),
            "source_later_most": max(later), "source_first_ratio": SOURCE_RATIO[0],
            "source_last_ratio": SOURCE_RATIO[-1]}


def feedforward_checks(e: FeedforwardEstimates) -> list[Check]:
    """S4.2's claim checks (every block's ratio above LARGER; block 1's difference ahead of every later block's by
    more than MOST_PRONOUNCED, where there is one) and the dead-ablation control (above DEAD_ABLATION). Pure: the
    same estimates give the same checks.

    Returns:
        n_blocks claim checks, the lead's claim check where there are two blocks or more, then one control.
    """
    figures = _source_figures()
    checks = [
        Check.of(f"block {b + 1}: H(no FFN) / H(no attention), last position", ratio,
                 "ratio", ">", LARGER, **catalogued(f"S4.2/block-{b + 1}/larger-impact", **figures))
        for b, ratio in enumerate(e.ratios)
    ]
    if e.lead is not None:
        checks.append(Check.of(
            "block 1's H(no FFN) − H(no attention) minus the largest later block's", e.lead,
            "Hellinger", ">", MOST_PRONOUNCED, **catalogued("S4.2/most-pronounced", **figures)))
    checks.append(Check.of(
        "min over blocks of H(no attention)", e.floor, "Hellinger", ">", DEAD_ABLATION, role="control",
        **catalogued("S4.2/dead-ablation")))
    return checks
