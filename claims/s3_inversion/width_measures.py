"""S3.5's measurements: the width gain of a ladder's rungs and the gate on their widths and training. test_width.py
measures with these; width_checks.py decides.
"""


import numpy as np

from claims.s3_inversion.scale import Scale


GAIN_ONSET = 4096  # S3: gains appear from 4096 wide (GPT-J, Llama-7B); 768 -> 1600 is "no noticeably better"


LOSS_TOLERANCE = 0.0  # bits per character a wider rung may end above a narrower one (none: the ordering itself)


def width_gain(units: np.ndarray, scale: Scale, chosen: np.ndarray) -> float:
    """S3.5's statistic: token accuracy of the widest rung minus the narrowest, each its headline setting.

    Args:
        units: (prompts, rungs, settings) token accuracy per prompt, rungs narrowest first, ``DESCENT_SETTINGS`` order
            (the reported prompts, :meth:`Scale.reported`).
        scale: reads the headline setting's mean (:meth:`Scale.headline`).
        chosen: (rungs,) each rung's headline setting, :meth:`Scale.chosen` of the whole units.
    Returns:
        the difference, in fraction of tokens.
    """
    best = scale.headline(units, chosen)
    return float(best[-1] - best[0])


def reordered_rungs(rungs_by_seed: dict[int, list[str]], losses: dict[str, float]) -> list[str]:
    """S3.5's convergence gate: each wider rung with a higher held-out loss than the next narrower rung of its
    training seed, as "wide loss > narrow loss" (empty when the ladder is ordered by width).

    Args:
        rungs_by_seed: {training seed (or declared seed set): rung names, narrowest first}.
        losses: {rung name: held-out loss, bits per character (``models.evaluation``)}.
    Raises:
        KeyError: if a rung has no loss.
    """
    return [f"{wide} {losses[wide]:.3f} > {narrow} {losses[narrow]:.3f}"
            for rungs in rungs_by_seed.values() for narrow, wide in zip(rungs, rungs[1:])
            if losses[wide] > losses[narrow] + LOSS_TOLERANCE]


def ladder_gate(widths: dict[str, int], rungs_by_seed: dict[int, list[str]], losses: dict[str, float]) -> str | None:
    """Why S3.5 decides nothing on a ladder, or None where its checks run: the width gate (the widest rung below
    ``GAIN_ONSET``), then the convergence gate (:func:`reordered_rungs`).

    Args:
        widths: {rung name: d_model}.
        rungs_by_seed: {training seed or declared seed set: rung names, narrowest first}.
        losses: {rung name: held-out loss, bits per character}.
    """
    widest = max(widths.values())
    if widest < GAIN_ONSET:
        return (f"the ladder's widest rung is {widest} wide, below the {GAIN_ONSET} from which S3 sees wider models "
                "invert better (GPT-2 768 -> GPT-2 XL 1600: 'no noticeably better'): S3 predicts no ordering here, so "
                "a gain or its absence says nothing about the claim. At these widths the rungs' accuracies also follow "
                "how well each trained in its common step count, and the W_E⁺ decoding of a vocabulary smaller than "
                "the width improves with width for any weights")
    reordered = reordered_rungs(rungs_by_seed, losses)
    if reordered:
        return ("convergence gate: a wider rung has a higher held-out loss than a narrower one of its seed "
                f"({'; '.join(reordered)} bits per character), so the ladder orders by training, not width")
    return None
