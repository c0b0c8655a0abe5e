"""S3.12's measurements: the masked first token recovered from blocks 1 and 2 without the first position, on a
transformer and the masked mixer of its width and recipe, and on their untrained twins. test_mixer.py records what these
measure; mixer_checks.py decides; the number both read, HALF, is in the topic's home, mixer.toml.
"""

from dataclasses import dataclass, field, replace

import numpy as np

from claims.s3_inversion.between_tokens_measures import MASKED
from claims.s3_inversion.inversions import DESCENT_SETTINGS
from claims.s3_inversion.scope import SMALL_TRAINED
from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.stats import Estimate, paired_difference, proportion, proportion_difference, sample_mean

BLOCK = 2  # S3: "the output [:, 1:, :] of the second mixer ... block" (1-based)
HALF = numbers(__file__, "HALF")  # a prompt whose unmasked tokens mostly come back: above HALF of them
KINDS = ("trained", "untrained twins")  # S3.12's two pairs, in the record's order


@dataclass(frozen=True)
class TwinsEstimates:
    """Per untrained twin, the fraction of prompts whose unmasked tokens mostly come back from block ``BLOCK``
    (exact intervals)."""

    works: list[Estimate]


@dataclass(frozen=True)
class PairEstimates:
    """What S3.12's checks decide on for one pair (a transformer and the mixer of its width and recipe), from block
    ``BLOCK``'s output without the first position, over the reported prompts.

    Attributes:
        ordering: masked first token recovered, mixer minus transformer (paired score interval).
        above_chance: the mixer's masked-token recovery minus chance (the random start's hits), paired.
        longer: ``ordering`` after both masked descents continued to 5N (None where not continued).
        longer_above_chance: ``above_chance`` after the mixer's masked descent continued to 5N (the control at the
            headline's budget, issue 77; None where not continued).
        source_setting: ``ordering`` with both descents in S3's own setting (a reading beside the headline, issue
            77; None at source scale, where the headline is S3's setting).
    """

    ordering: Estimate
    above_chance: Estimate
    longer: Estimate | None = None
    longer_above_chance: Estimate | None = None
    source_setting: Estimate | None = None


@dataclass(frozen=True)
class PairContext:
    """What S3.12's checks of one pair take beside its estimates, not a measurement.

    Attributes:
        kind: "trained" or "untrained twins" (their derivations differ); transformer, mixer: the pair's names;
        steps: the transformer's N.
    """

    kind: str
    transformer: str
    mixer: str
    steps: int


@dataclass(frozen=True)
class MixerEstimates:
    """What S3.12's checks decide on, on its two pairs, the trained one and their untrained twins.

    Attributes:
        twins: the untrained twins' recovery of the unmasked tokens (their controls).
        pairs: {kind: the pair's estimates, or None where the pair was gated}; the twins' pair is compared only
            where the twins' controls pass (``mixer_checks.compared``).
        contexts: {kind: the pair's :class:`PairContext`}.
    """

    twins: TwinsEstimates
    pairs: dict[str, PairEstimates | None]
    contexts: dict[str, PairContext]


@dataclass(frozen=True)
class MixerShown:
    """What S3.12's record shows beside its checks, deciding nothing (issue 79, item 3), and what its continuation
    starts from.

    Attributes:
        gated: why a pair was not compared (the gate's reasons).
        units: {(model, block): (prompts, [masked, unmasked, chance])} in the headline setting.
        chosen: {(model, block): the headline setting's index}.
        masked: each model's masked-token recovery from block ``BLOCK`` (trained pair, then twins).
    """

    gated: list[str] = field(default_factory=list)
    units: dict = field(default_factory=dict)
    chosen: dict = field(default_factory=dict)
    masked: list[Estimate] = field(default_factory=list)


def _masked_and_unmasked(inversions, model, block: int) -> np.ndarray:
    """(prompts, [masked, unmasked, chance], settings) recovery from ``block`` (1-based) without the first position;
    chance is the random start's restricted accuracy (the same at every position: its draws are i.i.d.)."""
    runs = inversions.runs_of(model.name, model, [(block - 1, s) for s in DESCENT_SETTINGS], masked=MASKED)
    return np.stack([np.column_stack([r.hits[:, :MASKED].mean(1), r.hits[:, MASKED:].mean(1), r.start_accuracy])
                     for r in runs], -1)


def _best(units: np.ndarray, scale) -> int:
    """The headline setting by index (``Scale.chosen``): on a CPU the one that recovers more unmasked tokens;
    units (prompts, 3, settings)."""
    return int(scale.chosen(units[:, 1]))


def _pair_or_gate(pair, kind: str, units: dict, claim, own: dict | None = None) -> tuple[PairEstimates | None, str]:
    """One pair's estimates at N (``kind`` "trained" or "untrained twins") and why it was not compared ("" where it
    was): the trained pair is gated where a model recovers at most half of its unmasked tokens (the interval's low
    end); the twins' recovery is a control instead (``mixer_checks``). units: {(model, block): (prompts, [masked,
    unmasked, chance])}; own: ``units`` in S3's own setting (None at source scale), for the ordering beside the
    headline (issue 77)."""
    weak = [] if kind == "untrained twins" else [f"{m.name} {e.value:.3f} [{e.low:.3f}, {e.high:.3f}]" for m in pair
            for e in [claim.bootstrap(units[m.name, BLOCK][:, 1], sample_mean)]
            if e.low <= HALF]
    if weak:
        return None, gate("S3.12/a-masked-mixer-carries-more-non-self-information/unmasked-not-recovered", kind=kind,
                          BLOCK=BLOCK, weak=", ".join(weak), SMALL_TRAINED=SMALL_TRAINED)
    mixer_found, transformer_found = (units[m.name, BLOCK][:, 0] for m in (pair[1], pair[0]))  # 0/1 per prompt
    mixer_above = claim.bootstrap(units[pair[1].name, BLOCK][:, [0, 2]],
                                  paired_difference)
    beside = None if own is None else proportion_difference(*(own[m.name, BLOCK][:, 0] for m in (pair[1], pair[0])),
                                                            paired=True)  # S3's own setting (issue 77)
    return PairEstimates(proportion_difference(mixer_found, transformer_found, paired=True), mixer_above,
                         source_setting=beside), ""


def recovered_tables(units: dict) -> dict[str, dict[str, float]]:
    """S3.12's details: the fraction of prompts whose masked first token, and of unmasked tokens, each model recovers
    from each block; units {(model, block): (prompts, [masked, unmasked, chance])}."""
    return {title: {f"{name}, block {b}": float(u[:, column].mean()) for (name, b), u in units.items()}
            for column, title in enumerate(("masked first token recovered", "unmasked tokens recovered"))}


def measure_mixer(group: list, group_twins: list, inversions, claim) -> tuple[MixerEstimates, MixerShown]:
    """S3.12's measurement: each model's blocks 1 and ``BLOCK`` inverted without the first position, each its
    headline setting (chosen once, on a third of the prompts); per pair, the mixer's masked-token recovery minus the
    transformer's and above chance, the trained pair gated on most unmasked tokens coming back, with the twins'
    recovery a control: (the checks' estimates at N, what the record shows beside them). Where a compared pair's
    ordering is decided the test continues its descents (:func:`continue_pair`, through ``convergence.settled``).

    Args:
        group: (transformer, mixer), trained; group_twins: their untrained twins (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    """
    blocks = (1, BLOCK)
    both_settings = {(m.name, b): _masked_and_unmasked(inversions, m, b) for m in (*group, *group_twins) for b in blocks}
    chosen = {key: _best(u, inversions.scale) for key, u in both_settings.items()}  # once, on a third of the prompts
    units = {key: inversions.scale.reported(u[..., chosen[key]])  # (prompts, [masked, unmasked, chance])
             for key, u in both_settings.items()}
    own = None if inversions.scale.source else {key: inversions.scale.reported(u[..., 0])
                                                for key, u in both_settings.items()}  # S3's own setting
    twins = TwinsEstimates([proportion(units[m.name, BLOCK][:, 1] > HALF) for m in group_twins])
    pairs, gated = {}, []
    for pair, kind in ((group, "trained"), (group_twins, "untrained twins")):
        pairs[kind], why = _pair_or_gate(pair, kind, units, claim, own)
        gated.extend([why] if why else [])
    contexts = {kind: PairContext(kind, pair[0].name, pair[1].name, inversions.scale.steps(pair[0].name))
                for pair, kind in ((group, "trained"), (group_twins, "untrained twins"))}
    return MixerEstimates(twins, pairs, contexts), MixerShown(
        gated=gated, units=units, chosen=chosen,
        masked=[claim.bootstrap(units[m.name, BLOCK][:, 0], sample_mean) for m in (*group, *group_twins)])


def continue_pair(e: PairEstimates, pair: list, shown: MixerShown, inversions, claim) -> PairEstimates:
    """S3.12's convergence control for one compared pair (issue 77: either pair, a hold as a failure): both models'
    masked block-``BLOCK`` descents in their headline settings continued to 5N on the reported prompts; ``e`` with
    the ordering, and the mixer's recovery above chance (the same random start a₀ as at N), after them in place.

    Args:
        pair: (transformer, mixer) (``LoadedModel``); shown: :func:`measure_mixer`'s (its ``chosen`` and ``units``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    """
    found = [inversions.runs_of(m.name, m, [(BLOCK - 1, DESCENT_SETTINGS[shown.chosen[m.name, BLOCK]])],
                                masked=MASKED, continued=True)[0].hits[:, :MASKED].mean(1) for m in pair]
    chance = shown.units[pair[1].name, BLOCK][:, 2]  # the random start's hits: the same a₀ as at N
    return replace(e, longer=proportion_difference(found[1], found[0], paired=True),
                   longer_above_chance=claim.bootstrap(np.column_stack([found[1], chance]), paired_difference))
