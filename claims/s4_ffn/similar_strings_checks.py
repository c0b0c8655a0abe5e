"""S4.6, S4.7 and S4.8's checks as pure functions of their estimates: ``similar_strings_measures.py`` measures, these
decide, and the self-tests (``tests/cases_s4.py``, ``tests/test_s4_checks.py``) drive the same functions to hold
and to fail each check. Distances are Hellinger distances H between next-token distributions at the last position.
Every number they decide with is in the topic's home, ``similar_strings.toml``, with its derivation.
"""

from claims.s4_ffn.similar_strings_measures import (
    S4_FLOOR, S4_FLOOR_SD, ApproximationEstimates, GainEstimates, SiblingEstimates,
)
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

SOURCE_APPROXIMATION_H, DISTINCT_MODELS, SOURCE_FIRST_BLOCK_H, SOURCE_ALL_BLOCKS_H = numbers(
    __file__, "SOURCE_APPROXIMATION_H", "DISTINCT_MODELS", "SOURCE_FIRST_BLOCK_H", "SOURCE_ALL_BLOCKS_H")


def approximation_checks(e: ApproximationEstimates) -> list[Check]:
    """S4.6's claim check (within one SD of the sibling floor, ``e.floor_sd``), the shuffled control, and the reading
    against S4's floor (in-sample H minus S4_FLOOR under S4_FLOOR_SD). Pure: the same estimates give the same checks.

    Returns:
        one claim check, one control and one reading, in that order.
    """
    return [
        Check.of("mean H(approximation, model) − mean H(seed siblings, model), held-out prompts", e.over_floor,
                 "Hellinger", "<", e.floor_sd,
                 **catalogued("S4.6/within-floor-sd", floor_sd=e.floor_sd)),
        Check.of("mean H(another prompt's approximation, model) − floor", e.shuffled_over_floor, "Hellinger", ">",
                 e.floor_sd,
                 role="control", **catalogued("S4.6/shuffled-control")),
        Check.of(f"mean H(approximation, model), S4's in-sample prompts, − S4's floor ({S4_FLOOR:.4f})",
                 e.in_sample, "Hellinger", "<", S4_FLOOR_SD, role="reading",
                 **catalogued("S4.6/s4-floor")),
    ]


def sibling_checks(e: SiblingEstimates) -> list[Check]:
    """S4.7's claim check (small: below SOURCE_APPROXIMATION_H) and its control (distinct models: above
    DISTINCT_MODELS) for each sibling, in that order. Pure: the same estimates give the same checks."""
    checks = []
    for name, est in e.distances.items():
        checks.append(Check.of(f"mean H(model, {name})", est, "Hellinger", "<", SOURCE_APPROXIMATION_H,
                               **catalogued(f"S4.7/sibling-{name}")))
        checks.append(Check.of(f"mean H(model, {name}) — distinct models", est, "Hellinger", ">", DISTINCT_MODELS,
                               role="control", **catalogued(f"S4.7/sibling-{name}-distinct-models")))
    return checks


def gain_checks(e: GainEstimates) -> list[Check]:
    """S4.8's claim check (the first block's mean H minus all blocks') and its prompt-shuffled control. Pure: the same
    estimates give the same checks.

    The control guards the pass (``guards_pass``): it is the claim's own gain over a null, so where the gain
    genuinely fails it fails too, and the record must read as the claim failing (a finding), not as a failed control.
    """
    reduction = 100 * (1 - SOURCE_ALL_BLOCKS_H / SOURCE_FIRST_BLOCK_H)  # S4's one worked prompt, 'hing tremb'
    return [Check.of("mean H(first block alone) − mean H(all blocks), held-out prompts", e.gain, "Hellinger", ">", 0.0,
                     **catalogued("S4.8/all-blocks-gain", source_reduction=reduction)),
            Check.of("the same gain on each prompt's own approximations minus on another prompt's", e.own,
                     "Hellinger", ">", 0.0, role="control", guards_pass=True,
                     **catalogued("S4.8/own-prompt-control"))]
