"""S3.12's measurements: the masked first token recovered from blocks 1 and 2 without the first position, on a
transformer and the masked mixer of its width and recipe, and on their untrained twins. test_mixer.py records what these
measure; mixer_checks.py decides.
"""

from dataclasses import replace

import numpy as np

from claims.s3_inversion.between_tokens_measures import MASKED
from claims.s3_inversion.inversions import DESCENT_SETTINGS
from claims.s3_inversion.mixer_checks import (
    BLOCK, HALF, MixerEstimates, PairEstimates, TwinsEstimates, mixer_checks, pair_checks, works_checks,
)
from claims.s3_inversion.scope import SMALL_TRAINED
from fixtures.catalogue_text import gate
from latent_instruments.stats import paired_difference, proportion, proportion_difference, sample_mean
from reports.checks import INCONCLUSIVE

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


def _pair_or_gate(pair, kind: str, units: dict, chosen: dict, twins: TwinsEstimates, inversions, claim,
                  own: dict | None = None) -> tuple[PairEstimates | None, str]:
    """One pair's estimates (``kind`` "trained" or "untrained twins") and why it was not compared ("" where it was):
    None where the twins' works controls fail (S3 says untrained blocks invert: a descent failing there is a control,
    red), then the gate (most unmasked tokens recovered), then the pair's ordering, continued to 5N where it is
    decided (either pair: issue 77 continues an untrained pair's hold too). units: {(model, block): (prompts,
    [masked, unmasked, chance])}; twins: the untrained twins' recovery of the unmasked tokens; own: ``units`` in S3's
    own setting (None at source scale), for the ordering beside the headline (issue 77)."""
    if kind == "untrained twins" and not all(c.passed for c in works_checks(twins, [m.name for m in pair])):
        return None, ""
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
    estimates = PairEstimates(proportion_difference(mixer_found, transformer_found, paired=True), mixer_above,
                              source_setting=beside)
    context = (kind, pair[0].name, pair[1].name, inversions.scale.steps(pair[0].name))
    if pair_checks(estimates, *context)[0].status != INCONCLUSIVE:  # both masked descents to 5N, of either pair
        # (issue 77: an untrained pair's hold is continued too)
        found = [inversions.runs_of(m.name, m, [(BLOCK - 1, DESCENT_SETTINGS[chosen[m.name, BLOCK]])],
                                    masked=MASKED, continued=True)[0].hits[:, :MASKED].mean(1) for m in pair]
        chance = units[pair[1].name, BLOCK][:, 2]  # the random start's hits: the same a₀ as at N
        estimates = replace(estimates, longer=proportion_difference(found[1], found[0], paired=True),
                            longer_above_chance=claim.bootstrap(np.column_stack([found[1], chance]), paired_difference))
    return estimates, ""


def recovered_tables(units: dict) -> dict[str, dict[str, float]]:
    """S3.12's details: the fraction of prompts whose masked first token, and of unmasked tokens, each model recovers
    from each block; units {(model, block): (prompts, [masked, unmasked, chance])}."""
    return {title: {f"{name}, block {b}": float(u[:, column].mean()) for (name, b), u in units.items()}
            for column, title in enumerate(("masked first token recovered", "unmasked tokens recovered"))}


def measure_mixer(group: list, group_twins: list, inversions, claim) -> MixerEstimates:
    """S3.12's measurement: each model's blocks 1 and ``BLOCK`` inverted without the first position, each its
    headline setting (chosen once, on a third of the prompts); per pair, the mixer's masked-token recovery minus the
    transformer's and above chance, gated on most unmasked tokens coming back, with the twins' recovery a control.

    Args:
        group: (transformer, mixer), trained; group_twins: their untrained twins (``LoadedModel``).
        inversions: the S3 family's inversion runner; claim: the claim's recorder (its ``bootstrap``).
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where no pair is compared and every control passed.
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
        pairs[kind], why = _pair_or_gate(pair, kind, units, chosen, twins, inversions, claim, own)
        gated.extend([why] if why else [])
    estimates = MixerEstimates(
        twins, pairs,
        {"trained": (group[0].name, group[1].name), "untrained twins": (group_twins[0].name, group_twins[1].name)},
        {kind: inversions.scale.steps(pair[0].name) for pair, kind in ((group, "trained"), (group_twins, "untrained twins"))},
        gated=gated, units=units, chosen=chosen)
    checks = mixer_checks(estimates)
    if not any(c.role == "claim" for c in checks) and all(c.passed for c in checks):
        claim.not_informative("; ".join(gated), details=recovered_tables(units))
    return replace(estimates, masked=[claim.bootstrap(units[m.name, BLOCK][:, 0], sample_mean)
                                      for m in (*group, *group_twins)])
