"""S4.6 - S4.8's measurements: their estimates from the approximation's distances (``approximation.Approximation``).
test_similar_strings.py records what these measure; similar_strings_checks.py decides.
"""

import numpy as np

from claims.s4_ffn.approximation import Approximation
from claims.s4_ffn.similar_strings_checks import S4_FLOOR, ApproximationEstimates, GainEstimates, SiblingEstimates
from latent_instruments.stats import paired_difference, sample_mean


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


def measure_approximation(a: Approximation, claim) -> ApproximationEstimates:
    """S4.6's measurement on the evaluation half: the approximation's H to the model against the seed-sibling floor
    (and, as controls and readings, another prompt's approximation, the back-off n-gram, S4's in-sample prompts).

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
        distances={"approximation": h, "seed siblings": floor, "back-off n-gram": ngram, "in-sample": in_sample},
        over_ngram=claim.bootstrap(np.stack([h, ngram], axis=1), paired_difference))


def measure_siblings(a: Approximation, claim) -> SiblingEstimates:
    """S4.7's measurement: each seed sibling's H to the model over S4's prompts (and, shown, the held-out ones).

    Args:
        a, claim: as :func:`measure_approximation`.
    """
    v, held = a.variants["source"], a.variants["held-out"]
    per_prompt = {name: v.distance(probs) for name, probs in zip(a.siblings, v.sibling_probs)}
    return SiblingEstimates(
        {name: claim.bootstrap(d, sample_mean) for name, d in per_prompt.items()}, per_prompt,
        {name: float(held.distance(probs).mean()) for name, probs in zip(a.siblings, held.sibling_probs)})


def measure_gain(a: Approximation, claim) -> GainEstimates:
    """S4.8's measurement on the evaluation half of the held-out prompts: the first block's approximation's H minus
    the all-blocks one's, and that gain on each prompt's own approximations minus another prompt's (the control).

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
                         first, every, [claim.bootstrap(first, sample_mean), claim.bootstrap(every, sample_mean)])
