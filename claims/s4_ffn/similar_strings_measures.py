"""S4.6 - S4.8's measurements: their estimates from the approximation's distances (``approximation.Approximation``).
test_similar_strings.py records what these measure; similar_strings_checks.py decides; S4's figures are in the
topic's home, similar_strings.toml.
"""

from dataclasses import dataclass

import numpy as np

from claims.s4_ffn.approximation import Approximation
from fixtures.homes import numbers
from latent_instruments.stats import Estimate, paired_difference, sample_mean

# S4 Appendix II: mean H between the model and each seed sibling, and the per-prompt SD of each of those distances;
# S4's floor and its SD are their means
SOURCE_FLOOR = numbers(__file__, "SOURCE_FLOOR_1", "SOURCE_FLOOR_2", "SOURCE_FLOOR_3")
SOURCE_FLOOR_SD = numbers(__file__, "SOURCE_FLOOR_SD_1", "SOURCE_FLOOR_SD_2", "SOURCE_FLOOR_SD_3")
S4_FLOOR, S4_FLOOR_SD = numbers(__file__, "S4_FLOOR", "S4_FLOOR_SD")


@dataclass(frozen=True)
class ApproximationEstimates:
    """What S4.6's checks decide on, measured over the evaluation half of the prompts.

    Attributes:
        over_floor: mean H(approximation, model) minus mean H(seed siblings, model), held-out prompts, paired.
        shuffled_over_floor: the same with each prompt given another prompt's approximation (a control).
        in_sample: mean H(approximation, model) on S4's in-sample prompts minus S4_FLOOR (a reading).
        floor_sd: the per-prompt SD of this model's sibling floor on the same prompts (Hellinger): the threshold.
    """

    over_floor: Estimate
    shuffled_over_floor: Estimate
    in_sample: Estimate
    floor_sd: float


@dataclass(frozen=True)
class ApproximationShown:
    """What S4.6's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        distances: {"approximation", "seed siblings", "back-off n-gram", "in-sample"}: per-prompt H to the model
            (evaluation half; the last on S4's in-sample prompts).
        over_ngram: mean H(approximation) minus mean H(back-off n-gram), paired.
    """

    distances: dict[str, np.ndarray]
    over_ngram: Estimate


@dataclass(frozen=True)
class SiblingEstimates:
    """What S4.7's checks decide on: {seed sibling's name: mean H(model, sibling) over the source prompts}."""

    distances: dict[str, Estimate]


@dataclass(frozen=True)
class SiblingShown:
    """What S4.7's record shows beside its checks, deciding nothing: ``per_prompt``, {sibling's name: (prompts,) H},
    and ``held_out``, {sibling's name: mean H on the held-out prompts}."""

    per_prompt: dict[str, np.ndarray]
    held_out: dict[str, float]


@dataclass(frozen=True)
class GainEstimates:
    """What S4.8's checks decide on, measured over the evaluation half of the held-out prompts.

    Attributes:
        gain: mean H(first block alone) − mean H(all blocks), paired.
        own: that gain on each prompt's own approximations minus on another prompt's (prompt-shuffled).
    """

    gain: Estimate
    own: Estimate


@dataclass(frozen=True)
class GainShown:
    """What S4.8's record shows beside its checks, deciding nothing.

    Attributes:
        first, every: (prompts,) H of the first block's and the all-blocks approximation to the model, evaluation
            half of the held-out prompts.
        means: the mean of each, first block first.
    """

    first: np.ndarray
    every: np.ndarray
    means: list[Estimate]


def gain_over_shuffled(u: np.ndarray) -> float:
    """S4.8's control: the all-blocks gain over the first block, on each prompt's own approximations minus on another
    prompt's, in Hellinger distance. units (P, 4) per prompt: H(first), H(all) on its own approximations, then the
    same with the approximations of the previous prompt (prompt-shuffled)."""
    return float((u[:, 0] - u[:, 1]).mean() - (u[:, 2] - u[:, 3]).mean())


def sibling_distances(a: Approximation, variant: str) -> np.ndarray:
    """S4.6's seed-sibling floor, per prompt: (P,) Hellinger distance between the model's next-token distribution and
    its seed siblings' on the prompt ``variant`` ("source" or "held-out"), averaged over the siblings."""
    v = a.variants[variant]
    return np.mean([v.distance(s) for s in v.sibling_probs], axis=0)


def measure_approximation(a: Approximation, claim) -> tuple[ApproximationEstimates, ApproximationShown]:
    """S4.6's measurement on the evaluation half: the approximation's H to the model against the seed-sibling floor
    (and, as controls and readings, another prompt's approximation, the back-off n-gram, S4's in-sample prompts):
    (the checks' estimates, what the record shows beside them).

    Args:
        a: the similar-strings approximation of a seed-sibling group (the ``approximation`` fixture).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``), whose ``bootstrap`` gives the intervals.
    """
    half, held = a.eval_half, a.variants["held-out"]
    h = held.distance(a.probs("held-out"))[half]
    floor = sibling_distances(a, "held-out")[half]
    ngram = held.distance(held.backoff_probs[a.backoff_order])[half]
    shuffled = held.distance(a.probs("held-out")[np.roll(np.arange(a.n_prompts), 1)])[half]  # another prompt's
    in_sample = a.variants["source"].distance(a.probs("source"))[half]  # S4's procedure, values tuned to the model
    return ApproximationEstimates(
        claim.bootstrap(np.stack([h, floor], axis=1), paired_difference),
        claim.bootstrap(np.stack([shuffled, floor], axis=1), paired_difference),
        claim.bootstrap(in_sample - S4_FLOOR, sample_mean), float(floor.std()),
    ), ApproximationShown(
        distances={"approximation": h, "seed siblings": floor, "back-off n-gram": ngram, "in-sample": in_sample},
        over_ngram=claim.bootstrap(np.stack([h, ngram], axis=1), paired_difference))


def measure_siblings(a: Approximation, claim) -> tuple[SiblingEstimates, SiblingShown]:
    """S4.7's measurement: each seed sibling's H to the model over S4's prompts (and, shown, the held-out ones): (the
    checks' estimates, what the record shows beside them).

    Args:
        a, claim: as :func:`measure_approximation`.
    """
    v, held = a.variants["source"], a.variants["held-out"]
    per_prompt = {name: v.distance(probs) for name, probs in zip(a.siblings, v.sibling_probs)}
    return SiblingEstimates({name: claim.bootstrap(d, sample_mean) for name, d in per_prompt.items()}), SiblingShown(
        per_prompt, {name: float(held.distance(probs).mean()) for name, probs in zip(a.siblings, held.sibling_probs)})


def measure_gain(a: Approximation, claim) -> tuple[GainEstimates, GainShown]:
    """S4.8's measurement on the evaluation half of the held-out prompts: the first block's approximation's H minus
    the all-blocks one's, and that gain on each prompt's own approximations minus another prompt's (the control):
    (the checks' estimates, what the record shows beside them).

    Args:
        a, claim: as :func:`measure_approximation`.
    """
    v, half = a.variants["held-out"], a.eval_half
    every = v.distance(a.probs("held-out"))[half]
    first = v.distance(a.probs("held-out", blocks=slice(0, 1)))[half]
    other = np.roll(np.arange(a.n_prompts), 1)  # prompt i paired with prompt i − 1's approximations
    shuffled = [v.distance(a.probs("held-out", blocks=b)[other])[half] for b in (slice(0, 1), slice(None))]
    return GainEstimates(claim.bootstrap(np.stack([first, every], axis=1), paired_difference),
                         claim.bootstrap(np.stack([first, every, *shuffled], axis=1), gain_over_shuffled),
                         ), GainShown(first, every, [claim.bootstrap(first, sample_mean),
                                                     claim.bootstrap(every, sample_mean)])
