"""S3.4 — inversion degrades with depth (1 block → 4 → 12).

S3 ("Restricted Vocabulary Input Representation", "Big models exhibit accurate input representations"):
a trained GPT-2 recovers 'The sky is blue.' from its first block, "with some learning rate tuning and
a sufficiently large N ... even for 4 transformer blocks, but for all 12 blocks it is rare"; Llama-7B's
representation at block 12 is much poorer than at block 1, and even Llama-30B's degrades (1 and 4
blocks exact or nearly, 12 'The sky Stage blueInd', 21 'Finally sky established blue instead');
untrained small models invert accurately "only for one or at most two transformer blocks".

Block 1 must invert above chance for depth to degrade anything. On a trained model where it does not, the claim
is not informative, and the record quotes S3's sentences on small trained blocks (``scope.SMALL_TRAINED``); on an
untrained model (``--source-scale on``) it is a control (version 6), since S3 says an untrained block 1 inverts.

GPT-2's depths 1, 4 and 12 of 12 map to blocks 1, ⌈L/3⌉ and L of an L-block model (1, 2, 4 of the
tiny models' 4). Each depth is inverted under S3's setting and the adapted one (S3 tuned its learning
rate for the deeper runs); each depth's statistic is its headline setting's (``Scale.headline``: S3's own at
source scale, the better of the two on a CPU).
"""

import math
from dataclasses import replace

import numpy as np
import pytest

from claims.s3_inversion.convergence import continues
from claims.s3_inversion.depth_checks import DepthEstimates, depth_checks, first_works_check
from claims.s3_inversion.inversions import DESCENT_SETTINGS, SOURCE_PROMPT, first_prompt
from claims.s3_inversion.scope import SMALL_TRAINED
from fixtures.catalogue_text import procedure
from latent_instruments.stats import bootstrap, proportion, sample_mean
from reports.plots import series
from reports.checks import INCONCLUSIVE


def depths(n_blocks: int) -> list[int]:
    """Blocks (1-based) S3's 1 → 4 → 12 of GPT-2's 12 map to: 1, ⌈L/3⌉, L (deduplicated, in order)."""
    return sorted({1, math.ceil(n_blocks / 3), n_blocks})


def _row(runs: dict, block: int, best: str) -> dict:
    """One block's numbers for the details table: both settings' accuracy, then the headline setting's."""
    row = {f"{s} setting": float(runs[block, s].accuracy.mean()) for s in DESCENT_SETTINGS}
    chosen = runs[block, best]
    return row | {"headline": best, "full vocabulary": float(chosen.full_accuracy.mean()),
                  "exact": float(chosen.exact.mean()), "success test": float(chosen.success.mean()),
                  "‖O(a_g) − O(a)‖ / ‖O(a′) − O(a)‖, median": float(np.median(chosen.distance_ratio)),
                  "seconds": round(sum(runs[block, s].seconds for s in DESCENT_SETTINGS), 2)}


def _by_depth(units: np.ndarray, statistic, seed: int) -> list:
    """One bootstrap estimate per depth: units (prompts, depths, ...) -> [Estimate] of statistic(units[:, i])."""
    return [bootstrap(units[:, i], statistic, seed=seed) for i in range(units.shape[1])]


UNTRAINED_DECIDED = ("An untrained model's drop is decided at S3's own N = 200 (no longer descent: S3's untrained blocks "
                     "invert after N = 200).")


def _continued(model_name, subject, inversions, blocks: list[int], best: list[str], chosen, accuracy: np.ndarray
               ) -> np.ndarray:
    """S3.4's convergence control on a trained model: blocks 1 and L's headline descents continued to 5N, in place of
    theirs in the reported (prompts, depth, settings) ``accuracy``."""
    first, last = inversions.runs_of(model_name, subject, [(blocks[0] - 1, best[0]), (blocks[-1] - 1, best[-1])],
                                     continued=True)
    continued = inversions.scale.reported(accuracy).copy()
    continued[:, 0, chosen[0]], continued[:, -1, chosen[-1]] = first.accuracy, last.accuracy
    return continued


def _depth_plot(model_name: str, blocks: list[int], headline_label: str, per_depth: list, accuracy: np.ndarray,
                start: np.ndarray, seed: int) -> dict:
    """S3.4's figure: recovery by depth in the headline setting, in each setting, and chance; accuracy (prompts,
    depth, settings), start (prompts,)."""
    by_setting = {s: _by_depth(accuracy[..., DESCENT_SETTINGS.index(s)], sample_mean, seed) for s in ("source", "adapted")}
    return {"kind": "lines", "title": f"S3.4 on {model_name}: recovery by depth (restricted vocabulary)",
            "x": blocks, "xlabel": "block whose output is inverted", "ylabel": "token accuracy", "ylim": [-0.02, 1.02],
            "series": {headline_label: series(per_depth), "S3's own setting": series(by_setting["source"]),
                       "adapted setting": series(by_setting["adapted"]),
                       "random start (chance)": {"value": [float(start.mean())] * len(blocks)}}}


# 7: a decided drop's convergence control on a trained model (blocks 1 and L continued to 5N)
@pytest.mark.claim("S3.4", version=7, sample="prompts")  # 6: untrained block 1 a control; 5: exact binomial success
@pytest.mark.models("trained", "hf")
def test_inversion_degrades_with_depth(model_name, subject, inversions, claim, settings):
    """S3.4: token accuracy recovered from block 1's output exceeds that from the last block's (headline settings)."""
    check_depth(model_name, subject, inversions, claim, settings)


@pytest.mark.claim("S3.4", version=7, sample="prompts")  # 6: untrained block 1 a control; 5: exact binomial success
@pytest.mark.models("untrained", "reference")
@pytest.mark.source_scale  # on a CPU the 12-block references cost minutes per depth, the twins double the budget
def test_untrained_inversion_degrades_with_depth(model_name, subject, inversions, claim, settings):
    """S3.4 on random-init models ("untrained small models ... only for one or at most two blocks")."""
    check_depth(model_name, subject, inversions, claim, settings)


def check_depth(model_name, subject, inversions, claim, settings) -> None:
    """S3.4's measurement and checks on one model (see the module docstring)."""
    problem, scale = inversions.problem(model_name, subject), inversions.scale
    blocks = depths(len(subject.adapter.block_list(subject.model)))
    if len(blocks) < 2:
        claim.not_informative(f"{model_name} has one block: there is no depth to degrade over")
    targets = [(b, s) for b in blocks for s in DESCENT_SETTINGS]
    runs = dict(zip(targets, inversions.runs_of(model_name, subject, [(b - 1, s) for b, s in targets])))
    accuracy = np.stack([np.stack([runs[b, s].accuracy for s in DESCENT_SETTINGS], -1) for b in blocks], 1)  # (p, depth, s)
    start = runs[blocks[0], DESCENT_SETTINGS[0]].start_accuracy  # (prompts,): a₀ decoded, chance
    chosen = scale.chosen(accuracy)  # each depth's headline setting, chosen once (on a third of the prompts on a CPU)
    first_over_chance = claim.bootstrap(scale.reported(np.column_stack([accuracy[:, 0], start[:, None]])),
                                  lambda u: float(scale.headline(u[:, :-1], chosen[0]) - u[:, -1].mean()))
    per_depth = [claim.bootstrap(scale.reported(accuracy[:, i]), lambda u, c=c: float(scale.headline(u, c))) for i, c in enumerate(chosen)]
    by_block = {f"token accuracy by block ({scale.headline_label})": {f"block {b}": e.value for b, e in zip(blocks, per_depth)}}
    untrained = subject.entry.random_init
    works = proportion(scale.reported(accuracy[:, 0, chosen[0]] > start))
    first_works = first_works_check(works)
    if untrained and not first_works.passed:  # S3 says an untrained block 1 inverts: the descent failed
        claim.record([first_works], procedure=procedure("S3.4/inversion-degrades-with-depth/descent-fails-on-block-1",
                                                        prompts=accuracy.shape[0]),
                     details=by_block)
    if not untrained and first_over_chance.low <= 0:
        claim.not_informative(
            f"block 1 is not invertible here already: its token accuracy {per_depth[0].value:.3f} is not above the "
            f"random start's {start.mean():.3f} (chance), so depth has nothing to degrade. {SMALL_TRAINED}",
            details=by_block)

    def first_minus_last(u: np.ndarray) -> float:
        return float(scale.headline(u, chosen)[0] - scale.headline(u, chosen)[-1])

    drop = claim.bootstrap(scale.reported(accuracy), first_minus_last)
    best = [DESCENT_SETTINGS[i] for i in chosen]
    deepest = best[-1]
    success = scale.reported_fraction(runs[blocks[-1], deepest].success)
    estimates = DepthEstimates(drop, success, works if untrained else None)
    context = (blocks[-1], scale.headline_label, scale.headline_reading, deepest, scale.steps(model_name))
    if not untrained and depth_checks(estimates, *context)[0].status != INCONCLUSIVE:  # a hold rests on the deepest
        # block's failure to recover, a failure on the first's: both continued
        continued = _continued(model_name, subject, inversions, blocks, best, chosen, accuracy)
        estimates = replace(estimates, longer=claim.bootstrap(continued, first_minus_last))
    claim.record(
        depth_checks(estimates, *context),
        procedure=procedure("S3.4/inversion-degrades-with-depth", prompts=accuracy.shape[0], tokens=problem.tokens,
                            SOURCE_PROMPT=SOURCE_PROMPT, blocks=', '.join(map(str, blocks)),
                            steps=runs[blocks[0], 'source'].steps, headline_label=scale.headline_label,
                            convergence=UNTRAINED_DECIDED if untrained else continues(
                                "the drop", "blocks 1 and L's headline descents", holds=True)),
        scaled=" ".join(filter(None, [
            "S3 inverts one prompt from GPT-2 (12 blocks, 768 wide) and Llama 7B/30B (32/60 blocks); here "
            f"{model_name} ({len(subject.adapter.block_list(subject.model))} blocks, {subject.d_model} wide) at "
            "the same depth fractions.", inversions.scale.note()])),
        details={
            "by block": {f"block {b}": _row(runs, b, best[i]) for i, b in enumerate(blocks)},
            "random start (chance)": float(start.mean()),
            **{f"examples, block {b} ({best[i]} setting; top-5 per position, as S3 shows them)":
               first_prompt(runs[b, best[i]].examples) for i, b in enumerate(blocks)},
        },
        plot=_depth_plot(model_name, blocks, scale.headline_label, per_depth, accuracy, start, settings.seed),
    )
