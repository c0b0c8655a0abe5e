"""S3.5 — larger (wider) trained models invert better, also from deeper layers.

What S3 shows (decoded examples of 'The sky is blue.', no rates): trained GPT-2 (768 wide) fails from its
first block; GPT-2 XL (1600) is "no noticeably better"; gains appear only from 4096 wide (GPT-J 6B
recovers part, Llama-7B more), and differ between families at one width (GPT-J against Llama-7B, both
4096). Llama-13B and 30B (5120, 6656) come close, not exact: their first blocks give 'The sky is blue''
and 'blue<s>'. Deeper blocks degrade less in the larger models (Llama-30B at 4 blocks as at 1).

Where S3 says width helps: from 4096 wide. Its one step below that, 768 → 1600, is "no noticeably better", so
on a ladder whose widest rung is narrower than 4096 S3 predicts nothing, a gain and its absence are both
consistent with it, and the claim is not informative (version 3). That covers every ladder this suite trains
(``tiny-ladder``: 96-192 wide; ``full-ladder``: 192-768): their rungs also train for a common number of steps,
so a rung's accuracy follows how well it trained (the validation losses differ between seeds of one rung by
as much as between rungs), and a character vocabulary smaller than every width makes the W_E⁺ decoding itself
better with width for any weights. Version 2's "holds" on the tiny ladder measured those. The test runs, with
the checks below, on a ladder that reaches S3's widths.

Guards, each reported:

* convergence gate: a width ladder measures width only if its rungs are trained alike to comparable
  convergence. Same recipe and steps by construction; the gate asks that no wider rung ends with a higher
  validation loss than a narrower one of its seed. Otherwise the ladder measures which rung trained best,
  and the claim is not informative on it (a ladder retrained on another corpus reorders, and its gain
  vanished with it);
* stability: every check holds at each training seed, not only at one;
* control: S3's success test ‖O(a_g) − O(a)‖₁ < ‖O(a′) − O(a)‖₁, with S3's shift σ = 1/20 per element,
  on most prompts of the narrowest rung: else its lower accuracy is the optimiser stopping short.
"""

from itertools import groupby

import numpy as np
import pytest

from claims.s3_inversion.inversions import DESCENT_SETTINGS, SOURCE_PROMPT, first_prompt
from claims.s3_inversion.test_depth import depths
from claims.s3_inversion.width_checks import WidthEstimates, width_checks
from fixtures.catalogue_text import procedure
from models.evaluation import held_out_bits_per_character
from models.zoo import resolve
from reports.plots import series
from claims.s3_inversion.width_measures import ladder_gate, width_gain


def _accuracy(inversions, rung, block: int, vocabulary: str) -> np.ndarray:
    """(prompts, settings) token accuracy of one rung at one block (1-based), in the chosen decoding."""
    runs = inversions.runs_of(rung.name, rung, [(block - 1, s) for s in DESCENT_SETTINGS])
    return np.stack([r.full_accuracy if vocabulary == "full-vocabulary" else r.accuracy for r in runs], -1)


DECODING_BY_VARIANT = {"full-vocabulary": "the whole vocabulary",  # the decoding of each variant, in the procedure
              "restricted": "each prompt's allowed vocabulary (the distinct tokens of its continuation to the length "
                            "of S3's 13-token sentence; −inf outside)"}


@pytest.mark.claim("S3.5", version=6)  # 6: exact binomial success; 24 CPU prompts, a third choose
@pytest.mark.models("ladder")
@pytest.mark.parametrize("variant", ["full-vocabulary", "restricted"])
def test_wider_models_invert_better(model_name, variant, group, inversions, claim, settings, corpus):
    """S3.5: at each training seed, the widest rung recovers more tokens than the narrowest, from the first
    block and from a deeper one (⌈L/3⌉, S3's 4 of 12)."""
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
    gains = {key: claim.bootstrap(scale.reported(u), lambda v, c=chosen[key]: width_gain(v, scale, c))
             for key, u in units.items()}
    success = {seed: _success(inversions, rungs[0]) for seed, rungs in seeds.items()}  # the narrowest rung's
    per_rung = {key: [claim.bootstrap(scale.reported(u[:, i]), lambda v, c=chosen[key][i]: float(scale.headline(v, c))) for i in range(u.shape[1])]
                for key, u in units.items()}

    widths = {seed: [m.d_model for m in rungs] for seed, rungs in seeds.items()}
    checks = width_checks(WidthEstimates(gains, success, widths), scale.headline_label)
    example_rungs = [seeds[next(iter(seeds))][i] for i in (0, -1)]
    claim.record(
        checks,
        procedure=procedure("S3.5/wider-models-invert-better", prompts=units[next(iter(units))].shape[0],
                            SOURCE_PROMPT=SOURCE_PROMPT, blocks=', '.join(map(str, blocks)),
                            steps=inversions.run(group[0].name, group[0], 0, 'source').steps,
                            headline_label=scale.headline_label,
                            vocabulary=DECODING_BY_VARIANT[variant]),
        scaled=" ".join(filter(None, [
            "S3 compares GPT-2 (768), GPT-2 XL (1600), GPT-J and Llama-7B (4096), Llama-13B/30B (5120/6656) on one "
            f"prompt; here {', '.join(m.name for m in group)} ({', '.join(str(m.d_model) for m in group)} wide), "
            "a 2x range below the widths where S3 sees gains.", inversions.scale.note()])),
        details={
            "variant": variant,
            "held-out loss (bits per character) by rung": losses,
            f"token accuracy by rung ({scale.headline_label})": {
                f"seed {seed}, block {b}": {m.name: e.value for m, e in zip(seeds[seed], per_rung[seed, b])}
                for seed, b in units},
            **{f"examples, {m.name} block 1 (top-5 per position, as S3 shows them)":
               first_prompt(inversions.run(m.name, m, 0, _headline(inversions, m)).examples) for m in example_rungs},
        },
        plot={"kind": "lines", "title": f"S3.5 on {model_name} ({variant}): recovery by width",
              "x": widths[next(iter(seeds))], "xlabel": "d_model", "ylabel": "token accuracy", "ylim": [-0.02, 1.02],
              "series": {f"seed {seed}, block {b}": series(per_rung[seed, b]) | {"x": widths[seed]}
                         for seed, b in units}},
    )


def _success(inversions, rung):
    """The fraction of the rung's prompts passing S3's success test at block 1 in its better setting (exact)."""
    units = np.stack([r.success for r in inversions.runs_of(rung.name, rung, [(0, s) for s in DESCENT_SETTINGS])], -1)
    return inversions.scale.reported_fraction(units, inversions.scale.chosen(units))


def _headline(inversions, rung) -> str:
    """The rung's headline setting at block 1 (on a CPU the better by restricted token accuracy)."""
    units = np.column_stack([inversions.run(rung.name, rung, 0, s).accuracy for s in DESCENT_SETTINGS])
    return DESCENT_SETTINGS[int(inversions.scale.chosen(units))]
