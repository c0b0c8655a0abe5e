"""S4.3's checks as a pure function of its estimates: ``ffn_output_measures.py`` measures, this decides, and
the self-test (``tests/test_s4_checks.py``) drives the same function to fail each check.

Version 4 (issue 64, item 4): the cosine bound 0 is a bound read off S4's own numbers (its notebook's mean cosines,
0.31 ... 0.04, all positive, are what S4 calls "roughly the same direction"): provenance "source's numbers", not a
calibration. The placebo of versions 1-3 (a second unrelated prompt's pairing against the first's) compared two
pairings interchangeable by construction, so it could not fail; it is replaced by the untrained twin. At random
init the two outputs already have a mean cosine of up to ±0.13 per block on the tiny zoo, all of it shared by every
token (the twin's same-token and cross-token cosines agree to 0.004): the shared directions a random model's
projections give. A positive mean cosine is evidence of what training made only where it exceeds the twin's, so
that control, on the same token ids and paired per prompt, guards every pass (``guards_pass``): in each block the
mean cosine above the untrained twin's.
"""

from dataclasses import dataclass, field

import numpy as np

from claims.s4_ffn.block_vectors import SOURCE_ATTN_NORM, SOURCE_COSINE, SOURCE_FFN_NORM
from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

SOURCE_RATIO = [f / a for f, a in zip(SOURCE_FFN_NORM, SOURCE_ATTN_NORM)]  # S4's FFN / attention norm per block


@dataclass(frozen=True)
class FfnOutputEstimates:
    """What S4.3's test measures on the attention and FFN outputs of every block, each over prompts (the bootstrap
    unit), one estimate per block where a list.

    Attributes:
        ratios: mean FFN output norm / mean attention output norm (a ratio of means).
        cosines: mean cos(attention output, FFN output) of the same token (cosine units).
        excess: that cosine minus the cross-token baseline (the FFN output of another prompt's token at the same
            position).
        above_twin: least over blocks of the mean cosine minus the untrained twin's, on the same token ids.
        units, twin_units: shown beside the checks, deciding nothing: the model's and its twin's per-prompt readings
            (prompts, n_blocks, 4) of ``ffn_output_measures.block_readings``.
        twin_ratios: shown: the twin's norm ratio per block.
    """

    ratios: list[Estimate]
    cosines: list[Estimate]
    excess: list[Estimate]
    above_twin: Estimate
    units: np.ndarray | None = field(default=None, compare=False)
    twin_units: np.ndarray | None = field(default=None, compare=False)
    twin_ratios: list[Estimate] = field(default_factory=list, compare=False)


def ffn_output_checks(e: FfnOutputEstimates) -> list[Check]:
    """S4.3's checks: per block the norm ratio and the mean cosine (claim checks), the cross-token excess
    (a reading), and the untrained-twin control guarding a pass. Pure: the same estimates give the same checks.

    Returns:
        2 × n_blocks claim checks, n_blocks readings, one control, in that order.
    """
    n_blocks = len(e.ratios)
    checks = [
        Check.of(f"block {b + 1}: mean FFN output norm / mean attention output norm", e.ratios[b], "ratio", ">", 1.0,
                 **catalogued(f"S4.3/block-{b + 1}-mean-ffn-output-norm-mean-attention-output-norm",
                              source_ratios=", ".join(f"{r:.2f}" for r in SOURCE_RATIO),
                              least_source_excess=min(SOURCE_RATIO) - 1))
        for b in range(n_blocks)
    ] + [
        Check.of(f"block {b + 1}: mean cos(attention output, FFN output)", e.cosines[b], "cosine", ">", 0.0,
                 **catalogued(f"S4.3/block-{b + 1}-mean-cos-attention-output-ffn-output",
                              source_cosines=", ".join(f"{c:.2f}" for c in SOURCE_COSINE),
                              least_source_cosine=min(SOURCE_COSINE)))
        for b in range(n_blocks)
    ] + [
        Check.of(f"block {b + 1}: cos(attention output, FFN output) minus cross-token baseline", e.excess[b], "cosine",
                 ">", 0.0, role="reading",
                 **catalogued(f"S4.3/block-{b + 1}-cos-attention-output-ffn-output-minus-cross-token"))
        for b in range(n_blocks)
    ]
    checks.append(Check.of(
        "least over blocks of mean cos(attention output, FFN output) minus the untrained twin's", e.above_twin,
        "cosine", ">", 0.0,
        role="control", guards_pass=True,
        **catalogued("S4.3/least-over-blocks-of-mean-cos-attention-output-ffn-output-minus-the")))
    return checks
