"""S3.4's measurements: the inversions of blocks 1, ⌈L/3⌉ and L under S3's setting and the adapted one, the drop
in token accuracy from the first to the last, and its convergence control. test_depth.py records what these measure;
depth_checks.py decides.
"""

import math
from dataclasses import replace

import numpy as np

from claims.s3_inversion.depth_checks import DepthEstimates, depth_checks, first_works_check
from claims.s3_inversion.inversions import DESCENT_SETTINGS
from claims.s3_inversion.scope import SMALL_TRAINED
from claims.s3_inversion.source_setting import source_chosen
from fixtures.catalogue_text import gate, procedure
from latent_instruments.stats import proportion, sample_mean
from reports.checks import INCONCLUSIVE


def depths(n_blocks: int) -> list[int]:
    """Blocks (1-based) S3's 1 → 4 → 12 of GPT-2's 12 map to: 1, ⌈L/3⌉, L (deduplicated, in order)."""
    return sorted({1, math.ceil(n_blocks / 3), n_blocks})


def _continued(model_name, subject, inversions, blocks: list[int], best: list[str], chosen, accuracy: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """S3.4's convergence control on a trained model: blocks 1 and L's headline descents continued to 5N, in place of
    theirs in the reported (prompts, depth, settings) ``accuracy``; and the deepest block's success test there
    (reported prompts, 0/1: its control at the headline's budget, issue 77)."""
    first, last = inversions.runs_of(model_name, subject, [(blocks[0] - 1, best[0]), (blocks[-1] - 1, best[-1])],
                                     continued=True)
    continued = inversions.scale.reported(accuracy).copy()
    continued[:, 0, chosen[0]], continued[:, -1, chosen[-1]] = first.accuracy, last.accuracy
    return continued, last.success


def measure_depth(model_name: str, subject, inversions, claim) -> DepthEstimates:
    """S3.4's measurement on one model: each depth inverted under both settings; block 1's token accuracy minus the
    last block's (each its headline setting), the deepest block's success test, on an untrained model block 1's
    recovery above chance (a control), and on a trained one the drop after a longer descent where the drop decided.

    Args:
        model_name: the model's zoo name; subject: the loaded model (``LoadedModel``).
        inversions: the S3 family's inversion runner (``claims.s3_inversion.conftest``).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` for a one-block model, or a trained model whose
            block 1 does not invert above chance.
        ControlFailed: through ``claim.record`` on an untrained model whose block 1 does not invert above chance on
            most prompts (S3 says it does: the descent failed).
    """
    scale = inversions.scale
    blocks = depths(len(subject.adapter.block_list(subject.model)))
    if len(blocks) < 2:
        claim.not_informative(gate("S3.4/inversion-degrades-with-depth/one-block", model=model_name))
    targets = [(b, s) for b in blocks for s in DESCENT_SETTINGS]
    runs = dict(zip(targets, inversions.runs_of(model_name, subject, [(b - 1, s) for b, s in targets])))
    accuracy = np.stack([np.stack([runs[b, s].accuracy for s in DESCENT_SETTINGS], -1) for b in blocks], 1)  # (p, depth, s)
    start = runs[blocks[0], DESCENT_SETTINGS[0]].start_accuracy  # (prompts,): a₀ decoded, chance
    chosen = scale.chosen(accuracy)  # each depth's headline setting, chosen once (on a third of the prompts on a CPU)
    first_over_chance = claim.bootstrap(scale.reported(np.column_stack([accuracy[:, 0], start[:, None]])),
                                        lambda u: float(scale.headline(u[:, :-1], chosen[0]) - u[:, -1].mean()))
    per_depth = [claim.bootstrap(scale.reported(accuracy[:, i]), lambda u, c=c: float(scale.headline(u, c)))
                 for i, c in enumerate(chosen)]
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
            gate("S3.4/inversion-degrades-with-depth/block-1-at-chance", value=per_depth[0].value, chance=start.mean(),
                 SMALL_TRAINED=SMALL_TRAINED),
            details=by_block)

    def first_minus_last(u: np.ndarray, chosen: np.ndarray = chosen) -> float:
        return float(scale.headline(u, chosen)[0] - scale.headline(u, chosen)[-1])

    best = [DESCENT_SETTINGS[i] for i in chosen]
    context = (blocks[-1], scale.headline_label, scale.headline_reading, best[-1], scale.steps(model_name))
    estimates = DepthEstimates(
        claim.bootstrap(scale.reported(accuracy), first_minus_last),
        scale.reported_fraction(runs[blocks[-1], best[-1]].success), works if untrained else None,
        source_setting=None if scale.source else claim.bootstrap(  # S3's own setting beside (issue 77)
            scale.reported(accuracy), lambda u: first_minus_last(u, source_chosen(chosen))),
        context=context, blocks=blocks, best=best, runs=runs, accuracy=accuracy, start=start, per_depth=per_depth,
        by_setting={s: [claim.bootstrap(accuracy[:, i, k], sample_mean) for i in range(len(blocks))]
                    for k, s in enumerate(DESCENT_SETTINGS)})
    if not untrained and depth_checks(estimates, *context)[0].status != INCONCLUSIVE:  # a hold rests on the deepest
        # block's failure to recover, a failure on the first's: both continued
        continued, success = _continued(model_name, subject, inversions, blocks, best, chosen, accuracy)
        estimates = replace(estimates, longer=claim.bootstrap(continued, first_minus_last),
                            longer_success=proportion(success))
    return estimates
