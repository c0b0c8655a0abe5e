"""S3.14's measurements: block 1, block 3 and blocks 1-3 concatenated inverted under both settings, and the share of
block 1's advantage over block 3 that blocks 1-3 together recover, with its convergence control
(:func:`continue_layers`, which the test runs through ``convergence.settled``). test_layers.py records what these
measure; layers_checks.py decides; the numbers both read are in the topic's home, layers.toml.
"""

from dataclasses import dataclass, field, replace

import numpy as np

from claims.s3_inversion.inversions import DESCENT_SETTINGS
from claims.s3_inversion.source_setting import source_chosen
from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.stats import Estimate

LAYERS = numbers(__file__, "LAYERS")  # layers.toml: S3's "first three layers"
FIRST, LAST = 0, 1  # columns of the targets: block 1, block LAYERS (and 2: blocks 1-LAYERS together)


@dataclass(frozen=True)
class LayersEstimates:
    """What S3.14's checks decide on, over the reported prompts (each target its headline setting).

    Attributes:
        share: the share of block 1's advantage over block 3 that blocks 1-3 together recover (fraction of the gap).
        advantage: block 1's token accuracy minus block 3's.
        longer: ``share`` after each target's headline descent continued to 5N (None where not continued).
        longer_advantage: ``advantage`` after the same continued descents: the gap control at the headline's budget
            (issue 77; None where not continued).
        source_setting: ``share`` with every target in S3's own setting (a reading beside the headline, issue 77;
            None at source scale, where the headline is S3's setting).
    """

    share: Estimate
    advantage: Estimate
    longer: Estimate | None = None
    longer_advantage: Estimate | None = None
    source_setting: Estimate | None = None


@dataclass(frozen=True)
class LayersContext:
    """What S3.14's checks are told beside the estimates (issue 79: a typed context, not positional arguments).

    Attributes:
        headline_reading: ``Scale``'s words for the headline setting (the derivation).
        steps: N.
    """

    headline_reading: str
    steps: int


@dataclass(frozen=True)
class LayersShown:
    """What S3.14's record shows beside its checks, deciding nothing, and what its convergence control continues from.

    Attributes:
        targets: {label: the block (or blocks) inverted, 0-based}.
        runs: {(label, setting): ``inversions.Run``}; best: {label: its headline setting}.
        per: each target's headline token accuracy; steps: N; prompts: the prompts inverted.
        chosen: (targets,) each target's headline setting, an index into ``DESCENT_SETTINGS`` (``Scale.chosen``).
        reported: token accuracy on the reported prompts, (prompts, targets, settings).
    """

    targets: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)
    best: dict[str, str] = field(default_factory=dict)
    per: list[Estimate] = field(default_factory=list)
    steps: int = 0
    prompts: int = 0
    chosen: np.ndarray | None = None
    reported: np.ndarray | None = None


def recovered_share(units: np.ndarray, scale, chosen: np.ndarray) -> float:
    """Statistic: the share of block 1's advantage over block 3 that blocks 1-3 together recover, each target its
    headline setting (``scale.headline``); 0 where there is no advantage in the sample.

    Args:
        units: token accuracy per prompt, (prompts, targets: block 1, block 3, together; settings), the reported
            prompts (``Scale.reported``).
        chosen: (targets,) each target's headline setting, ``Scale.chosen`` of the whole units.
    """
    best = scale.headline(units, chosen)
    gap = best[0] - best[1]
    return float((best[2] - best[1]) / gap) if gap > 0 else 0.0


def block_advantage(units: np.ndarray, scale, chosen: np.ndarray) -> float:
    """Statistic: block 1's headline token accuracy minus block 3's, of units (prompts, targets, settings)."""
    best_of = scale.headline(units, chosen)
    return float(best_of[FIRST] - best_of[LAST])


def measure_layers(model_name: str, subject, inversions, claim) -> tuple[LayersEstimates, LayersContext, LayersShown]:
    """S3.14's measurement: each target (block 1, block 3, blocks 1-3 concatenated) inverted under both settings,
    each its headline setting; the share of block 1's advantage over block 3 that the concatenation recovers, and
    the advantage itself (the gap control the test records alone where it fails): (the checks' estimates, their
    context, what the record shows). The convergence control is :func:`continue_layers`'s.

    Args:
        model_name: the model's zoo name; subject: the loaded model (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` for a model of fewer than LAYERS blocks.
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
    chosen = scale.chosen(units)  # (targets,): each target's headline setting, chosen once
    reported = scale.reported(units)
    per = [claim.bootstrap(reported[:, i], lambda u, c=chosen[i]: float(scale.headline(u, c)))
           for i in range(len(targets))]
    advantage = claim.bootstrap(reported, lambda u: block_advantage(u, scale, chosen))
    share = claim.bootstrap(reported, lambda u: recovered_share(u, scale, chosen))
    best = {label: DESCENT_SETTINGS[int(i)] for label, i in zip(targets, chosen)}
    steps = runs["block 1", "source"].steps
    own = None if scale.source else claim.bootstrap(  # S3's own setting beside the headline (issue 77)
        reported, lambda u: recovered_share(u, scale, source_chosen(chosen)))
    return (LayersEstimates(share, advantage, source_setting=own), LayersContext(scale.headline_reading, steps),
            LayersShown(targets=targets, runs=runs, best=best, per=per, steps=steps, prompts=units.shape[0],
                        chosen=chosen, reported=reported))


def continue_layers(e: LayersEstimates, shown: LayersShown, model_name: str, subject, inversions, claim
                    ) -> LayersEstimates:
    """S3.14's convergence control where its checks decided the share (issue 64: a hold too, which more steps on the
    concatenated target could reverse; the test's ``convergence.settled``): each target's headline descent continued
    to 5N on the same prompts, the share measured again, and the gap at 5N (issue 77).

    Args:
        e, shown: :func:`measure_layers`'s estimates and what it shows.
        model_name, subject, inversions, claim: as :func:`measure_layers`.
    Returns:
        ``e`` with ``longer`` and ``longer_advantage``.
    """
    scale, chosen, targets = inversions.scale, shown.chosen, shown.targets
    more = inversions.runs_of(model_name, subject, [(targets[label], shown.best[label]) for label in targets],
                              continued=True)
    continued = shown.reported.copy()  # the headline columns replaced by the continued descents' (reported prompts)
    for i, run in enumerate(more):
        continued[:, i, chosen[i]] = run.accuracy
    return replace(e, longer=claim.bootstrap(continued, lambda u: recovered_share(u, scale, chosen)),
                   longer_advantage=claim.bootstrap(continued, lambda u: block_advantage(u, scale, chosen)))
