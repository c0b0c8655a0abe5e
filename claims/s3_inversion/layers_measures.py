"""S3.14's measurements: blocks 1, 3 and 1-3 concatenated inverted under both settings, and the share of block 1's
advantage over block 3 that blocks 1-3 together recover. test_layers.py records what these measure; layers_checks.py
decides.
"""

from dataclasses import replace

import numpy as np

from claims.s3_inversion.inversions import DESCENT_SETTINGS
from claims.s3_inversion.layers_checks import LAYERS, LayersEstimates, gap_check, layers_checks
from claims.s3_inversion.source_setting import source_chosen
from fixtures.catalogue_text import gate, procedure
from reports.checks import FAILED, INCONCLUSIVE


def recovered_share(units: np.ndarray, scale, chosen: np.ndarray) -> float:
    """Statistic: the share of block 1's advantage over block 3 that blocks 1-3 together recover, each target its
    headline setting (``scale.headline``); 0 where there is no advantage in the sample.

    Args:
        units: token accuracy per prompt, (prompts, 3 targets: block 1, block 3, together, settings), the reported
            prompts (``Scale.reported``).
        chosen: (3,) each target's headline setting, ``Scale.chosen`` of the whole units.
    """
    best = scale.headline(units, chosen)
    gap = best[0] - best[1]
    return float((best[2] - best[1]) / gap) if gap > 0 else 0.0


def measure_layers(model_name: str, subject, inversions, claim) -> LayersEstimates:
    """S3.14's measurement: each target (block 1, block 3, blocks 1-3 concatenated) inverted under both settings,
    each its headline setting; the share of block 1's advantage over block 3 that the concatenation recovers, and
    where the share decided, the share after each target's headline descent continued to 5N (the convergence
    control).

    Args:
        model_name: the model's zoo name; subject: the loaded model (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` for a model of fewer than three blocks.
        ControlFailed: through ``claim.record`` where block 1 is decisively no better than block 3 (no gap).
    """
    scale = inversions.scale
    n_blocks = len(subject.adapter.block_list(subject.model))
    if n_blocks < LAYERS:
        claim.not_informative(gate("S3.14/several-layers-do-not-improve-inversion/fewer-blocks", model=model_name,
                                   n_blocks=n_blocks))
    targets = {"block 1": 0, f"block {LAYERS}": LAYERS - 1, f"blocks 1-{LAYERS} concatenated": tuple(range(LAYERS))}
    keys = [(label, s) for label in targets for s in DESCENT_SETTINGS]
    runs = dict(zip(keys, inversions.runs_of(model_name, subject, [(targets[label], s) for label, s in keys])))
    units = np.stack([np.stack([runs[label, s].accuracy for s in DESCENT_SETTINGS], -1) for label in targets], 1)  # (p, 3, s)
    first, last = 0, 1  # columns of the targets: block 1, block 3 (and 2: blocks 1-3 together)
    chosen = scale.chosen(units)  # (3,): each target's headline setting, chosen once
    reported = scale.reported(units)
    per = [claim.bootstrap(reported[:, i], lambda u, c=chosen[i]: float(scale.headline(u, c)))
           for i in range(3)]
    def gap(u: np.ndarray) -> float:  # block 1's headline token accuracy minus block 3's
        best_of = scale.headline(u, chosen)
        return float(best_of[first] - best_of[last])

    advantage = claim.bootstrap(reported, gap)
    if gap_check(advantage).status == FAILED:  # decisively no gap: the share cannot be measured, and that shows
        claim.record([gap_check(advantage)], procedure=procedure("S3.14/several-layers-do-not-improve-inversion/no-gap",
                                                                 prompts=units.shape[0], LAYERS=LAYERS,
                                                                 headline_label=scale.headline_label,
                                                                 first_accuracy=per[first].value,
                                                                 last_accuracy=per[last].value),
            details={f"token accuracy ({scale.headline_label})": {label: e.value for label, e in zip(targets, per)}})

    share = claim.bootstrap(reported, lambda u: recovered_share(u, scale, chosen))
    best = {label: DESCENT_SETTINGS[int(i)] for label, i in zip(targets, chosen)}
    steps = runs["block 1", "source"].steps
    own = None if scale.source else claim.bootstrap(  # S3's own setting beside the headline (issue 77)
        reported, lambda u: recovered_share(u, scale, source_chosen(chosen)))
    estimates = LayersEstimates(share, advantage, source_setting=own, targets=targets, runs=runs, best=best, per=per,
                                steps=steps, prompts=units.shape[0])
    if layers_checks(estimates, scale.headline_reading, steps)[0].status != INCONCLUSIVE:  # decided (issue 64: a
        # hold too, which more steps on the concatenated target could reverse): each target's headline descent
        # continued on the same prompts: does it stay?
        more = inversions.runs_of(model_name, subject, [(targets[label], best[label]) for label in targets],
                                  continued=True)
        continued = reported.copy()  # the headline columns replaced by the continued descents' (reported prompts)
        for i, run in enumerate(more):
            continued[:, i, chosen[i]] = run.accuracy
        estimates = replace(estimates, longer=claim.bootstrap(continued, lambda u: recovered_share(u, scale, chosen)),
                            longer_advantage=claim.bootstrap(continued, gap))  # the gap at 5N (issue 77)
    return estimates
