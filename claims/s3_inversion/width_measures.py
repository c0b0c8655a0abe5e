"""S3.5's measurements: the width gain of a ladder's rungs and the gate on their widths and training. test_width.py
records what these measure; width_checks.py decides; the numbers both read are in the topic's home, width.toml.
"""

from dataclasses import dataclass, field
from itertools import groupby

import numpy as np

from claims.s3_inversion.depth_measures import depths
from claims.s3_inversion.inversions import DESCENT_SETTINGS
from claims.s3_inversion.scale import Scale
from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.stats import Estimate
from models.evaluation import held_out_bits_per_character
from models.zoo import resolve

# the width gate's onset (S3: gains from GPT-J's width) and the convergence gate's tolerance, bits per character
GAIN_ONSET, LOSS_TOLERANCE = numbers(__file__, "GAIN_ONSET", "LOSS_TOLERANCE")


@dataclass(frozen=True)
class WidthEstimates:
    """What S3.5's checks decide on, measured on a ladder of widths over the reported prompts.

    Attributes:
        gains: {(training seed, block): token accuracy of the widest rung minus the narrowest, paired}.
        success: {training seed: fraction of the narrowest rung's prompts passing S3's success test} (exact).
        widths: {training seed: the rungs' d_model, narrowest first}.
    """

    gains: dict[tuple[int, int], Estimate]
    success: dict[int, Estimate]
    widths: dict[int, list[int]]


@dataclass(frozen=True)
class WidthShown:
    """What S3.5's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        seeds: {training seed: its rungs (``LoadedModel``), narrowest first}.
        blocks: the blocks inverted (1-based); losses: {rung: held-out bits per character}.
        per_rung: {(training seed, block): each rung's headline token accuracy}.
        prompts: the prompts each rung was inverted on.
    """

    seeds: dict[int, list] = field(default_factory=dict)
    blocks: list[int] = field(default_factory=list)
    losses: dict[str, float] = field(default_factory=dict)
    per_rung: dict[tuple[int, int], list[Estimate]] = field(default_factory=dict)
    prompts: int = 0


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
        return gate("S3.5/wider-models-invert-better/below-gain-onset", widest=widest)
    reordered = reordered_rungs(rungs_by_seed, losses)
    if reordered:
        return gate("S3.5/wider-models-invert-better/reordered", reordered="; ".join(reordered))
    return None


def _accuracy(inversions, rung, block: int, vocabulary: str) -> np.ndarray:
    """(prompts, settings) token accuracy of one rung at one block (1-based), in the chosen decoding."""
    runs = inversions.runs_of(rung.name, rung, [(block - 1, s) for s in DESCENT_SETTINGS])
    return np.stack([r.full_accuracy if vocabulary == "full-vocabulary" else r.accuracy for r in runs], -1)


def _success(inversions, rung):
    """The fraction of the rung's prompts passing S3's success test at block 1 in its better setting (exact)."""
    units = np.stack([r.success for r in inversions.runs_of(rung.name, rung, [(0, s) for s in DESCENT_SETTINGS])], -1)
    return inversions.scale.reported_fraction(units, inversions.scale.chosen(units))


def headline_setting(inversions, rung) -> str:
    """S3.5: the rung's headline setting at block 1 ("source" or "adapted"; on a CPU the better by restricted token
    accuracy, ``Scale.chosen``), for its decoded examples.

    Args:
        inversions: the S3 family's inversion runner; rung: the rung (``LoadedModel``).
    """
    units = np.column_stack([inversions.run(rung.name, rung, 0, s).accuracy for s in DESCENT_SETTINGS])
    return DESCENT_SETTINGS[int(inversions.scale.chosen(units))]


def measure_width(model_name: str, group: list, variant: str, inversions, corpus,
                  claim) -> tuple[WidthEstimates, WidthShown]:
    """S3.5's measurement on a ladder of widths: at each training seed, from block 1 and from ⌈L/3⌉, the widest rung's
    token accuracy minus the narrowest's (each its headline setting), and the narrowest rung's success test (a
    control); the ladder gated on its widths and its rungs' training first: (the checks' estimates, what the record
    shows beside them).

    Args:
        model_name: the ladder's zoo name; group: its rungs (``LoadedModel``), by seed then width.
        variant: "full-vocabulary" or "restricted", the decoding.
        inversions: the S3 family's inversion runner; corpus: the corpus (its validation split rates the rungs).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where the ladder cannot measure width
            (:func:`ladder_gate`).
    """
    entry = resolve(model_name)
    seed_of = dict(zip(entry.members, entry.member_seeds))  # the zoo's training seeds; a user's declared seed sets
    seeds = {seed: list(rungs) for seed, rungs in groupby(group, key=lambda m: seed_of[m.name])}
    blocks = depths(len(group[0].adapter.block_list(group[0].model)))[:2]  # block 1 and S3's "4 of 12"
    losses = {m.name: round(held_out_bits_per_character(m, corpus.validation), 4) for m in group}
    why = ladder_gate({m.name: m.d_model for m in group}, {seed: [m.name for m in rungs] for seed, rungs in seeds.items()},
                      losses)
    if why:
        claim.not_informative(why, details={"held-out loss (bits per character)": losses,
                                            "widths": {m.name: m.d_model for m in group}})
    units = {(seed, b): np.stack([_accuracy(inversions, r, b, variant) for r in rungs], 1)  # (prompts, rungs, s)
             for seed, rungs in seeds.items() for b in blocks}
    scale = inversions.scale
    chosen = {key: scale.chosen(u) for key, u in units.items()}  # (rungs,) each, chosen once
    return WidthEstimates(
        {key: claim.bootstrap(scale.reported(u), lambda v, c=chosen[key]: width_gain(v, scale, c))
         for key, u in units.items()},
        {seed: _success(inversions, rungs[0]) for seed, rungs in seeds.items()},  # the narrowest rung's
        {seed: [m.d_model for m in rungs] for seed, rungs in seeds.items()},
    ), WidthShown(
        seeds=seeds, blocks=blocks, losses=losses,
        per_rung={key: [claim.bootstrap(scale.reported(u[:, i]), lambda v, c=chosen[key][i]: float(scale.headline(v, c)))
                        for i in range(u.shape[1])] for key, u in units.items()},
        prompts=units[next(iter(units))].shape[0])
