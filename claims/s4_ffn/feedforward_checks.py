"""S4.2's checks as a pure function of its estimates: ``feedforward_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s4.py``, ``tests/test_s4_checks.py``) drive the same function to hold and to fail.
"""

from dataclasses import dataclass, field

import numpy as np

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

LARGER = 1.0  # "always has the larger impact": H(no FFN) / H(no attention) above 1 in every block
MOST_PRONOUNCED = 0.0  # "most pronounced in the first block": block 1's difference minus every later block's, above 0
DEAD_ABLATION = 1e-3  # control: H of an ablation that changed nothing is float rounding, ~1e-7


@dataclass(frozen=True)
class FeedforwardEstimates:
    """What S4.2's test measures at the last position of short prompts, over prompts (Hellinger distances H to the
    full model's prediction).

    Attributes:
        ratios: per block, H(no FFN) / H(no attention) (a ratio of means).
        lead: block 1's H(no FFN) − H(no attention) minus the largest later block's (None for one block).
        floor: the smallest block's mean H(no attention) (a control: a dead ablation gives ~1e-7).
        h, twin_h, context_h: shown beside the checks, deciding nothing: per-prompt H (prompts, n_blocks, 2;
            [..., 0] attention dropped, [..., 1] FFN dropped) at the last position, of the untrained twin there, and
            over every position of full-context prompts (version 3's reading).
        sides: shown: per block, [mean H(no attention), mean H(no FFN)].
        twin_ratios, context_ratios: shown: per block, the twin's ratio and the full-context ratio.
    """

    ratios: list[Estimate]
    lead: Estimate | None
    floor: Estimate
    h: np.ndarray | None = field(default=None, compare=False)
    twin_h: np.ndarray | None = field(default=None, compare=False)
    context_h: np.ndarray | None = field(default=None, compare=False)
    sides: list[list[Estimate]] = field(default_factory=list, compare=False)
    twin_ratios: list[Estimate] = field(default_factory=list, compare=False)
    context_ratios: list[Estimate] = field(default_factory=list, compare=False)


def feedforward_checks(e: FeedforwardEstimates) -> list[Check]:
    """S4.2's claim checks (every block's ratio above 1; block 1's difference ahead of every later block's, where
    there is one) and the dead-ablation control."""
    checks = [
        Check.of(f"block {b + 1}: H(no FFN) / H(no attention), last position", ratio,
                 "ratio", ">", LARGER, **catalogued(f"S4.2/block-{b + 1}-h-no-ffn-h-no-attention-last-position"))
        for b, ratio in enumerate(e.ratios)
    ]
    if e.lead is not None:
        checks.append(Check.of(
            "block 1's H(no FFN) − H(no attention) minus the largest later block's", e.lead,
            "Hellinger", ">", MOST_PRONOUNCED,
            **catalogued("S4.2/block-1-s-h-no-ffn-h-no-attention-minus-the-largest-later-block-s")))
    checks.append(Check.of(
        "min over blocks of H(no attention)", e.floor, "Hellinger", ">", DEAD_ABLATION, role="control",
                           **catalogued("S4.2/min-over-blocks-of-h-no-attention")))
    return checks
