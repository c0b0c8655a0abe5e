"""S4.6, S4.7 and S4.8's checks as pure functions of their estimates: ``similar_strings_measures.py`` measures, these
decide, and the self-tests (``tests/cases_s4.py``, ``tests/test_s4_checks.py``) drive the same functions to hold
and to fail each check. Distances are Hellinger distances H between next-token distributions at the last position.
"""

from dataclasses import dataclass, field

import numpy as np

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

SOURCE_APPROXIMATION_H = 0.1677  # S4: mean H of the approximation to the model over 20,000 prompts (± 0.1215 per prompt)
SOURCE_FLOOR = (0.1064, 0.1057, 0.1053)  # S4 Appendix II: mean H between the model and each seed sibling
SOURCE_FLOOR_SD = (0.0823, 0.0817, 0.0828)  # S4 Appendix II: the per-prompt SD of each of those distances
DISTINCT_MODELS = 1e-3  # control: siblings closer than this are the same model (a seed that was not applied)
S4_FLOOR, S4_FLOOR_SD = sum(SOURCE_FLOOR) / 3, sum(SOURCE_FLOOR_SD) / 3


@dataclass(frozen=True)
class ApproximationEstimates:
    """What S4.6's test measures over the evaluation half of the prompts.

    Attributes:
        over_floor: mean H(approximation, model) minus mean H(seed siblings, model), held-out prompts, paired.
        shuffled_over_floor: the same with each prompt given another prompt's approximation (a control).
        in_sample: mean H(approximation, model) on S4's in-sample prompts minus S4's floor (a reading).
        floor_sd: the per-prompt SD of this model's sibling floor on the same prompts (Hellinger): the threshold.
        distances: shown beside the checks, deciding nothing: {"approximation", "seed siblings", "back-off n-gram",
            "in-sample"}: per-prompt H to the model (evaluation half; the last on S4's in-sample prompts).
        over_ngram: shown: mean H(approximation) minus mean H(back-off n-gram), paired.
    """

    over_floor: Estimate
    shuffled_over_floor: Estimate
    in_sample: Estimate
    floor_sd: float
    distances: dict[str, np.ndarray] = field(default_factory=dict, compare=False)
    over_ngram: Estimate | None = field(default=None, compare=False)


def approximation_checks(e: ApproximationEstimates) -> list[Check]:
    """S4.6's claim check (within one SD of the sibling floor), the shuffled control, and S4's-floor reading."""
    return [
        Check.of("mean H(approximation, model) − mean H(seed siblings, model), held-out prompts", e.over_floor,
                 "Hellinger", "<", e.floor_sd,
                 **catalogued("S4.6/mean-h-approximation-model-mean-h-seed-siblings-model-held-out-prompts",
                              floor_sd=e.floor_sd)),
        Check.of("mean H(another prompt's approximation, model) − floor", e.shuffled_over_floor, "Hellinger", ">",
                 e.floor_sd,
                 role="control", **catalogued("S4.6/mean-h-another-prompt-s-approximation-model-floor")),
        Check.of(f"mean H(approximation, model), S4's in-sample prompts, − S4's floor ({S4_FLOOR:.4f})",
                 e.in_sample, "Hellinger", "<", S4_FLOOR_SD, role="reading",
                 **catalogued("S4.6/mean-h-approximation-model-s4-s-in-sample-prompts-s4-s-floor")),
    ]


@dataclass(frozen=True)
class SiblingEstimates:
    """What S4.7's test measures: {seed sibling's name: mean H(model, sibling) over the source prompts}; shown
    beside the checks, deciding nothing: ``per_prompt``, {name: (prompts,) H}, and ``held_out``, {name: mean H on
    the held-out prompts}."""

    distances: dict[str, Estimate]
    per_prompt: dict[str, np.ndarray] = field(default_factory=dict, compare=False)
    held_out: dict[str, float] = field(default_factory=dict, compare=False)


def sibling_checks(e: SiblingEstimates) -> list[Check]:
    """S4.7's claim check (small) and its control (distinct models) for each sibling, in that order."""
    checks = []
    for name, est in e.distances.items():
        checks.append(Check.of(f"mean H(model, {name})", est, "Hellinger", "<", SOURCE_APPROXIMATION_H,
                               **catalogued(f"S4.7/mean-h-model-{name}")))
        checks.append(Check.of(f"mean H(model, {name}) — distinct models", est, "Hellinger", ">", DISTINCT_MODELS, role="control",
                               **catalogued(f"S4.7/mean-h-model-{name}-distinct-models")))
    return checks


@dataclass(frozen=True)
class GainEstimates:
    """What S4.8's test measures over the evaluation half of the held-out prompts.

    Attributes:
        gain: mean H(first block alone) − mean H(all blocks), paired.
        own: that gain on each prompt's own approximations minus on another prompt's (prompt-shuffled).
        first, every: shown beside the checks, deciding nothing: (prompts,) H of the first block's and the
            all-blocks approximation to the model, evaluation half of the held-out prompts.
        means: shown: the mean of each, first block first.
    """

    gain: Estimate
    own: Estimate
    first: np.ndarray | None = field(default=None, compare=False)
    every: np.ndarray | None = field(default=None, compare=False)
    means: list[Estimate] = field(default_factory=list, compare=False)


def gain_checks(e: GainEstimates) -> list[Check]:
    """S4.8's claim check (the first block's mean H minus all blocks') and its prompt-shuffled control.

    The control guards the pass (``guards_pass``): it is the claim's own gain over a null, so where the gain
    genuinely fails it fails too, and the record must read as the claim failing (a finding), not as a failed control.
    """
    return [Check.of("mean H(first block alone) − mean H(all blocks), held-out prompts", e.gain, "Hellinger", ">", 0.0,
                     **catalogued("S4.8/mean-h-first-block-alone-mean-h-all-blocks-held-out-prompts")),
            Check.of("the same gain on each prompt's own approximations minus on another prompt's", e.own,
                     "Hellinger", ">", 0.0, role="control", guards_pass=True,
                     **catalogued("S4.8/the-same-gain-on-each-prompt-s-own-approximations-minus-on-another"))]
