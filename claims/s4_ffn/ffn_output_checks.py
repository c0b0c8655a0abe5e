"""S4.3's checks as a pure function of its estimates: ``ffn_output_measures.py`` measures, this decides, and
the self-test (``tests/test_s4_checks.py``) drives the same function to fail each check. Every number it decides
with is in the topic's home, ``ffn_output.toml``, with its derivation.

Version 4 (issue 64, item 4): the cosine bound SAME_DIRECTION is a bound read off S4's own numbers (its notebook's
mean cosines, SOURCE_COSINE_1 ... SOURCE_COSINE_6, all positive, are what S4 calls "roughly the same direction"):
provenance "source's numbers", not a calibration. The placebo of versions 1-3 (a second unrelated prompt's pairing
against the first's) compared two pairings interchangeable by construction, so it could not fail; it is replaced by
the untrained twin. At random init the two outputs already have a mean cosine of up to ±0.13 per block on the tiny
zoo, all of it shared by every token (the twin's same-token and cross-token cosines agree to 0.004): the shared
directions a random model's projections give. A positive mean cosine is evidence of what training made only where
it exceeds the twin's, so that control, on the same token ids and paired per prompt, guards every pass
(``guards_pass``): in each block the mean cosine above the untrained twin's.
"""

from claims.s4_ffn.ffn_output_measures import SOURCE_COSINE, SOURCE_RATIO, FfnOutputEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

LONGER, SAME_DIRECTION = numbers(__file__, "LONGER", "SAME_DIRECTION")


def ffn_output_checks(e: FfnOutputEstimates) -> list[Check]:
    """S4.3's checks: per block the norm ratio (above LONGER) and the mean cosine (above SAME_DIRECTION) (claim
    checks), the cross-token excess (a reading), and the untrained-twin control guarding a pass. Pure: the same
    estimates give the same checks.

    Returns:
        2 × n_blocks claim checks, n_blocks readings, one control, in that order.
    """
    n_blocks = len(e.ratios)
    checks = [
        Check.of(f"block {b + 1}: mean FFN output norm / mean attention output norm", e.ratios[b], "ratio", ">",
                 LONGER,
                 **catalogued(f"S4.3/block-{b + 1}/norm-ratio",
                              source_ratios=", ".join(f"{r:.2f}" for r in SOURCE_RATIO),
                              least_source_excess=min(SOURCE_RATIO) - LONGER))
        for b in range(n_blocks)
    ] + [
        Check.of(f"block {b + 1}: mean cos(attention output, FFN output)", e.cosines[b], "cosine", ">",
                 SAME_DIRECTION,
                 **catalogued(f"S4.3/block-{b + 1}/cosine",
                              source_cosines=", ".join(f"{c:.2f}" for c in SOURCE_COSINE),
                              least_source_cosine=min(SOURCE_COSINE)))
        for b in range(n_blocks)
    ] + [
        Check.of(f"block {b + 1}: cos(attention output, FFN output) minus cross-token baseline", e.excess[b], "cosine",
                 ">", 0.0, role="reading",
                 **catalogued(f"S4.3/block-{b + 1}/cross-token-excess"))
        for b in range(n_blocks)
    ]
    checks.append(Check.of(
        "least over blocks of mean cos(attention output, FFN output) minus the untrained twin's", e.above_twin,
        "cosine", ">", 0.0,
        role="control", guards_pass=True,
        **catalogued("S4.3/twin-control")))
    return checks
