"""S3.5's checks as a pure function of its estimates: ``test_width.py`` measures, this decides, and the self-tests
(``tests/cases_s3.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass

from latent_instruments.stats import Estimate
from reports.checks import Check

SUCCESS_MAJORITY = 0.5  # control: most of the narrowest rung's prompts reach S3's success test
DERIVATION = (
    "S3 gives an ordering of decoded examples, no rate: trained GPT-2 (768 wide) fails from block 1, GPT-2 XL "
    "(1600) is 'no noticeably better', gains appear from 4096 wide (GPT-J recovers part), and Llama-13B/30B come "
    "close without recovering exactly ('The sky is blue'', 'blue<s>'). The threshold is that ordering on our "
    "ladder: the widest rung's token accuracy above the narrowest's, by the low end of the 95 % bootstrap "
    "interval of the paired difference over prompts; no margin is derivable from the source. The ladder "
    "(2x in width, 96 to 192) extrapolates a claim S3 makes between 1600 and 4096+ wide models")


@dataclass(frozen=True)
class WidthEstimates:
    """What S3.5's test measures on a ladder of widths, over the reported prompts.

    Attributes:
        gains: {(training seed, block): token accuracy of the widest rung minus the narrowest, paired}.
        success: {training seed: fraction of the narrowest rung's prompts passing S3's success test} (exact).
        widths: {training seed: the rungs' d_model, narrowest first}.
    """

    gains: dict[tuple[int, int], Estimate]
    success: dict[int, Estimate]
    widths: dict[int, list[int]]


def width_checks(e: WidthEstimates, headline_label: str) -> list[Check]:
    """S3.5's claim checks (a gain at every seed and block) and a success-test control per seed."""
    return [
        Check.of(f"token accuracy, d_model {e.widths[seed][-1]} minus {e.widths[seed][0]}, block {b}, seed {seed} "
                 f"(each rung its {headline_label})", gain, "fraction of tokens", ">", 0.0,
                 DERIVATION + ("" if b == 1 else f"; block {b} is S3's 'also from deeper layers' (4 of GPT-2's 12 "
                                                 "blocks, at the same depth fraction)")
                 + "; every seed must hold (stability across training seeds)",
                 key=f"S3.5/token-accuracy-d-model-minus-block-{b}-seed-{seed}-each-rung-its")
        for (seed, b), gain in e.gains.items()
    ] + [
        Check.of(f"fraction of the narrowest rung's prompts passing S3's success test (block 1, seed {seed}, "
                 f"{headline_label})", est, "fraction of prompts", ">", SUCCESS_MAJORITY,
                 "control: S3 decodes once ‖O(a_g) − O(a)‖₁ < ‖O(a′) − O(a)‖₁ with a′ = a + N(0, 1/20²) per element "
                 "(S3's shift); if most of the narrowest rung's prompts do not reach it, its lower accuracy is the "
                 f"optimiser stopping short, not the width. Floor {SUCCESS_MAJORITY}, by the interval's low end",
                 role="control", key=f"S3.5/narrowest-rung-s3-success-test-block-1-seed-{seed}")
        for seed, est in e.success.items()
    ]
