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

import numpy as np
import pytest

from claims.s3_inversion.convergence import continues, settled
from claims.s3_inversion.depth_checks import depth_checks, first_works_check
from claims.s3_inversion.depth_measures import DepthShown, continue_depth, measure_depth
from claims.s3_inversion.inversions import DESCENT_SETTINGS, SOURCE_PROMPT, first_prompt
from fixtures.catalogue_text import procedure
from reports.checks import FAILED, PASSED
from reports.plots import series


def _row(runs: dict, block: int, best: str) -> dict:
    """One block's numbers for the details table: both settings' accuracy, then the headline setting's."""
    row = {f"{s} setting": float(runs[block, s].accuracy.mean()) for s in DESCENT_SETTINGS}
    chosen = runs[block, best]
    return row | {"headline": best, "full vocabulary": float(chosen.full_accuracy.mean()),
                  "exact": float(chosen.exact.mean()), "success test": float(chosen.success.mean()),
                  "‖O(a_g) − O(a)‖ / ‖O(a′) − O(a)‖, median": float(np.median(chosen.distance_ratio)),
                  "seconds": round(sum(runs[block, s].seconds for s in DESCENT_SETTINGS), 2)}


UNTRAINED_DECIDED = ("An untrained model's drop is decided at S3's own N = 200 (no longer descent: S3's untrained blocks "
                     "invert after N = 200).")


def _depth_plot(model_name: str, headline_label: str, shown: DepthShown) -> dict:
    """S3.4's figure: recovery by depth in the headline setting, in each setting, and chance."""
    blocks, per_depth, start, by_setting = shown.blocks, shown.per_depth, shown.start, shown.by_setting
    return {"kind": "lines", "title": f"S3.4 on {model_name}: recovery by depth (restricted vocabulary)",
            "x": blocks, "xlabel": "block whose output is inverted", "ylabel": "token accuracy", "ylim": [-0.02, 1.02],
            "series": {headline_label: series(per_depth), "S3's own setting": series(by_setting["source"]),
                       "adapted setting": series(by_setting["adapted"]),
                       "random start (chance)": {"value": [float(start.mean())] * len(blocks)}}}


# 8: the plateau rule (issue 77); 7: a decided drop's convergence control on a trained model (blocks 1 and L continued to 5N)
@pytest.mark.claim("S3.4", version=8, sample="prompts")  # 8: plateau rule; 6: untrained block 1 a control; 5: exact binomial success
@pytest.mark.models("trained", "hf")
def test_inversion_degrades_with_depth(model_name, subject, inversions, claim):
    """S3.4: token accuracy recovered from block 1's output exceeds that from the last block's (headline settings)."""
    check_depth(model_name, subject, inversions, claim)


@pytest.mark.claim("S3.4", version=8, sample="prompts")  # 8: plateau rule; 6: untrained block 1 a control; 5: exact binomial success
@pytest.mark.models("untrained", "reference")
@pytest.mark.source_scale  # on a CPU the 12-block references cost minutes per depth, the twins double the budget
def test_untrained_inversion_degrades_with_depth(model_name, subject, inversions, claim):
    """S3.4 on random-init models ("untrained small models ... only for one or at most two blocks")."""
    check_depth(model_name, subject, inversions, claim)


def check_depth(model_name, subject, inversions, claim) -> None:
    """S3.4's record on one model, trained or not: ``measure_depth``'s estimates, on an untrained model its block-1
    control recorded alone where it does not pass, on a trained one a decided drop continued to 5N
    (``continue_depth``), ``depth_checks`` on them, and the details and figure (see the module docstring)."""
    e, context, shown = measure_depth(model_name, subject, inversions, claim)
    problem, scale, untrained = inversions.problem(model_name, subject), inversions.scale, subject.entry.random_init
    blocks, best, runs, accuracy = shown.blocks, shown.best, shown.runs, shown.accuracy
    if e.first_works is not None and not (works := first_works_check(e.first_works)).passed:  # S3: it inverts
        claim.record([works], procedure=procedure("S3.4/inversion-degrades-with-depth/descent-fails-on-block-1",
                                                  prompts=accuracy.shape[0]), details=shown.by_block)
    if not untrained:  # a decided drop: blocks 1 and L's headline descents continued (a hold rests on L's failure)
        e = settled(e, lambda e: depth_checks(e, context)[0],
                    lambda e: continue_depth(e, shown, model_name, subject, inversions, claim), when=(FAILED, PASSED))
    claim.record(
        depth_checks(e, context),
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
            "random start (chance)": float(shown.start.mean()),
            **{f"examples, block {b} ({best[i]} setting; top-5 per position, as S3 shows them)":
               first_prompt(runs[b, best[i]].examples) for i, b in enumerate(blocks)},
        },
        plot=_depth_plot(model_name, scale.headline_label, shown),
    )
