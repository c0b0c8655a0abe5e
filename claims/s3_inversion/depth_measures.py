"""S3.4's measurements: the inversions of blocks 1, ⌈L/3⌉ and L under S3's setting and the adapted one, the drop
in token accuracy from the first to the last, and its convergence control (:func:`continue_depth`, which the test
runs through ``convergence.settled``). test_depth.py records what these measure; depth_checks.py decides; the numbers
both read are in the topic's home, depth.toml.
"""

import math
from dataclasses import dataclass, field, replace

import numpy as np

from claims.s3_inversion.inversions import DESCENT_SETTINGS
from claims.s3_inversion.scope import SMALL_TRAINED
from claims.s3_inversion.source_setting import source_chosen
from fixtures.catalogue_text import gate
from latent_instruments.stats import Estimate, proportion, sample_mean


@dataclass(frozen=True)
class DepthEstimates:
    """What S3.4's checks decide on, over the reported prompts.

    Attributes:
        drop: token accuracy from block 1's output minus from the last block's (each its headline setting), paired.
        success: fraction of prompts passing S3's success test at the deepest block (an exact interval).
        first_works: on an untrained model, the fraction of prompts on which block 1 beats the random start (an
            exact interval); None on a trained one.
        longer: ``drop`` after blocks 1 and L's headline descents continued to 5N (None where not continued).
        longer_success: ``success`` after the same continued descents (the control at the headline's budget, issue
            77; None where not continued).
        source_setting: ``drop`` with every depth in S3's own setting (a reading beside the headline, issue 77; None
            at source scale, where the headline is S3's setting).
    """

    drop: Estimate
    success: Estimate
    first_works: Estimate | None = None
    longer: Estimate | None = None
    longer_success: Estimate | None = None
    source_setting: Estimate | None = None


@dataclass(frozen=True)
class DepthContext:
    """What S3.4's checks are told beside the estimates (issue 79, item 3: a typed context, not a tuple).

    Attributes:
        last_block: the deepest block inverted (1-based).
        headline_label, headline_reading: ``Scale``'s words for the headline setting.
        deepest: the deepest block's headline setting.
        steps: N.
    """

    last_block: int
    headline_label: str
    headline_reading: str
    deepest: str
    steps: int


@dataclass(frozen=True)
class DepthShown:
    """What S3.4's record shows beside its checks, deciding nothing, and what its convergence control continues from.

    Attributes:
        blocks: the blocks inverted (1-based); best: each one's headline setting.
        runs: {(block, setting): ``inversions.Run``}.
        accuracy: token accuracy (prompts, depths, settings); start: the random start's (prompts,).
        chosen: (depths,) each depth's headline setting, an index into ``DESCENT_SETTINGS`` (``Scale.chosen``).
        per_depth: each depth's headline token accuracy; by_setting: {setting: each depth's token accuracy in it}.
        by_block: {title: {"block b": headline token accuracy}}: the details of a record made before the drop.
    """

    blocks: list[int] = field(default_factory=list)
    best: list[str] = field(default_factory=list)
    runs: dict = field(default_factory=dict)
    accuracy: np.ndarray | None = None
    start: np.ndarray | None = None
    chosen: np.ndarray | None = None
    per_depth: list[Estimate] = field(default_factory=list)
    by_setting: dict[str, list[Estimate]] = field(default_factory=dict)
    by_block: dict = field(default_factory=dict)


def depths(n_blocks: int) -> list[int]:
    """Blocks (1-based) S3's 1 → 4 → 12 of GPT-2's 12 map to: 1, ⌈L/3⌉, L (deduplicated, in order)."""
    return sorted({1, math.ceil(n_blocks / 3), n_blocks})


def _first_minus_last(u: np.ndarray, scale, chosen: np.ndarray) -> float:
    """S3.4's drop: units (prompts, depths, settings) → block 1's headline mean minus the last block's."""
    return float(scale.headline(u, chosen)[0] - scale.headline(u, chosen)[-1])


def measure_depth(model_name: str, subject, inversions, claim) -> tuple[DepthEstimates, DepthContext, DepthShown]:
    """S3.4's measurement on one model: each depth inverted under both settings; block 1's token accuracy minus the
    last block's (each its headline setting), the deepest block's success test, and on an untrained model block 1's
    recovery above chance (a control the test records first where it fails): (the checks' estimates, their context,
    what the record shows). The convergence control is :func:`continue_depth`'s.

    Args:
        model_name: the model's zoo name; subject: the loaded model (``LoadedModel``).
        inversions: the S3 family's inversion runner (``claims.s3_inversion.inversions``).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` for a one-block model, or a trained model whose
            block 1 does not invert above chance.
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
    if not untrained and first_over_chance.low <= 0:  # (an untrained block 1 is a control instead: the checks')
        claim.not_informative(
            gate("S3.4/inversion-degrades-with-depth/block-1-at-chance", value=per_depth[0].value, chance=start.mean(),
                 SMALL_TRAINED=SMALL_TRAINED),
            details=by_block)

    best = [DESCENT_SETTINGS[i] for i in chosen]
    works = proportion(scale.reported(accuracy[:, 0, chosen[0]] > start))
    estimates = DepthEstimates(
        claim.bootstrap(scale.reported(accuracy), lambda u: _first_minus_last(u, scale, chosen)),
        scale.reported_fraction(runs[blocks[-1], best[-1]].success), works if untrained else None,
        source_setting=None if scale.source else claim.bootstrap(  # S3's own setting beside (issue 77)
            scale.reported(accuracy), lambda u: _first_minus_last(u, scale, source_chosen(chosen))))
    context = DepthContext(blocks[-1], scale.headline_label, scale.headline_reading, best[-1], scale.steps(model_name))
    shown = DepthShown(blocks=blocks, best=best, runs=runs, accuracy=accuracy, start=start, chosen=chosen,
                       per_depth=per_depth, by_block=by_block,
                       by_setting={s: [claim.bootstrap(accuracy[:, i, k], sample_mean) for i in range(len(blocks))]
                                   for k, s in enumerate(DESCENT_SETTINGS)})
    return estimates, context, shown


def continue_depth(e: DepthEstimates, shown: DepthShown, model_name: str, subject, inversions, claim
                   ) -> DepthEstimates:
    """S3.4's convergence control on a trained model whose drop its checks decided (the test's
    ``convergence.settled``: a hold rests on the deepest block's failure to recover, a failure on the first's):
    blocks 1 and L's headline descents continued to 5N, in place of theirs in the reported (prompts, depth, settings)
    accuracy, the drop measured again, and the deepest block's success test there (its control at the headline's
    budget, issue 77).

    Args:
        e, shown: :func:`measure_depth`'s estimates and what it shows.
        model_name, subject, inversions, claim: as :func:`measure_depth`.
    Returns:
        ``e`` with ``longer`` and ``longer_success``.
    """
    blocks, best, chosen, scale = shown.blocks, shown.best, shown.chosen, inversions.scale
    first, last = inversions.runs_of(model_name, subject, [(blocks[0] - 1, best[0]), (blocks[-1] - 1, best[-1])],
                                     continued=True)
    continued = scale.reported(shown.accuracy).copy()
    continued[:, 0, chosen[0]], continued[:, -1, chosen[-1]] = first.accuracy, last.accuracy
    return replace(e, longer=claim.bootstrap(continued, lambda u: _first_minus_last(u, scale, chosen)),
                   longer_success=proportion(last.success))
