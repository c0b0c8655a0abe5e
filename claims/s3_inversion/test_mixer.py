"""S3.12 — token mixing by convolution (masked mixer) carries non-self token information better than attention
of the same width.

S3 ("Mixer Information Transfer"): a flat masked mixer (attention replaced by a causal convolution over
positions, models.mixer) represents a masked token from the later positions' outputs: an untrained one
512 wide gives 'Mario, the Idea, versus Mario, the Man' exactly from [:, 1:, :] of its first block, and
"this accurate self- and non-self token representation persists after training ... if we take the
information in a slightly deeper layer (say the output [:, 1:, :] of the second mixer or fourth mixer
block)"; "this flat mixer representation is more accurate than that obtained from a similarly sized
transformer": a trained 256-wide, 8-block Llama-style transformer gives 'pictureario, the Idea, th let
fterMarioiMan' from [:, 1:, :]. S3 also finds a 256-wide flat mixer misses the first token ('iario, ...').

Measured on ``tiny-mixer`` (the main model and a masked mixer of its width, trained with the same recipe):
the fraction of prompts whose masked first token is recovered from the second block's output at positions
2 onwards ([:, 1:, :]), S3.2's problem (restricted vocabulary), each model its headline setting (``Scale.headline``); mixer minus
transformer, paired over prompts, for the trained pair and for their untrained twins (S3 shows both). Block 1
is reported beside. Both models of a pair must recover most unmasked tokens of the same inversion (else the
comparison is of optimisers). For the untrained twins this is a control (version 6): S3 says untrained blocks
invert (S3.2) and its untrained mixers represent their input perfectly from 32 wide, so a descent that fails
there is red (exact interval over prompts). For the trained pair it is a gate: a pair that does not is reported,
not compared, quoting S3's sentences on small trained blocks (``scope.SMALL_TRAINED``), and with neither pair
compared the claim is not informative. Control, per compared pair: the mixer's recovery of the masked token must be above
chance (the random start's hits over the same restricted vocabulary), else "more than the transformer" would
only mean the transformer does worse than chance.
"""

from dataclasses import replace

import pytest

from claims.s3_inversion.convergence import continues, settled
from claims.s3_inversion.inversions import DESCENT_SETTINGS, first_prompt
from claims.s3_inversion.mixer_checks import compared, mixer_checks, not_compared, pair_checks
from claims.s3_inversion.mixer_measures import (
    BLOCK, MASKED, MixerEstimates, MixerShown, continue_pair, measure_mixer, recovered_tables,
)
from fixtures.catalogue_text import procedure
from models.evaluation import held_out_bits_per_character
from reports.checks import FAILED, PASSED
from reports.plots import series


def _examples(inversions, models, chosen: dict) -> dict:
    """Report sections: each model's decoded examples from block ``BLOCK`` without the first position."""
    return {f"examples, {m.name} block {BLOCK}, [:, 1:, :] ({DESCENT_SETTINGS[chosen[m.name, BLOCK]]} setting; top-5 "
            "per position, as S3 shows them)":
            first_prompt(inversions.run(m.name, m, BLOCK - 1, DESCENT_SETTINGS[chosen[m.name, BLOCK]],
                                        masked=MASKED).examples)
            for m in models}


def _settled(e: MixerEstimates, shown: MixerShown, models: dict, inversions, claim) -> MixerEstimates:
    """S3.12's estimates with each compared pair (``mixer_checks.compared``) settled (``convergence.settled``): where
    its ordering is decided, hold or failure (issue 77: either pair), both masked descents continued to 5N;
    ``models``: {kind: (transformer, mixer)}. A pair not compared is left out."""
    return replace(e, pairs={kind: settled(pair, lambda p, c=e.contexts[kind]: pair_checks(p, c)[0],
                                           lambda p, m=models[kind]: continue_pair(p, m, shown, inversions, claim),
                                           when=(FAILED, PASSED))
                             for kind, pair in compared(e).items()})


# 7: the trained pair's decided ordering continued to 5N (it rests on the transformer's failure to recover the token)
@pytest.mark.claim("S3.12", version=8)  # 8: plateau rule, the untrained pair continued; 6: untrained pair's recovery a control; 5: paired score interval
@pytest.mark.models("mixer", twin=True)
def test_a_masked_mixer_carries_more_non_self_information(model_name, group, group_twins, inversions, claim,
                                                          corpus):
    """S3.12: the masked mixer recovers a masked first token from later positions more often than the
    transformer of its width and recipe (second block's output)."""
    transformer, mixer = group
    e, shown = measure_mixer(group, group_twins, inversions, claim)
    if reason := not_compared(e, shown.gated):  # no pair compared, every control passed
        claim.not_informative(reason, details=recovered_tables(shown.units))
    e = _settled(e, shown, {"trained": group, "untrained twins": group_twins}, inversions, claim)
    units = shown.units
    claim.record(
        mixer_checks(e),
        procedure=procedure("S3.12/a-masked-mixer-carries-more-non-self-information",
                            prompts=len(units[transformer.name, BLOCK]), BLOCK=BLOCK,
                            headline_label=inversions.scale.headline_label, transformer=transformer.name,
                            mixer=mixer.name,
                            convergence=continues("the trained pair's ordering",
                                                  f"both models' masked block-{BLOCK} descents", holds=True)),
        scaled=" ".join(filter(None, [
            f"S3: mixers 64-2048 wide and a 256-wide 8-block transformer on TinyStories; here {transformer.d_model} "
            "wide, 4 blocks, on the corpus.", inversions.scale.note()])),
        details={
            **recovered_tables(units),
            "pairs not compared (gate)": shown.gated or "none",
            "held-out loss (bits per character)": {m.name: round(held_out_bits_per_character(m, corpus.validation), 4)
                                                   for m in group},
            "chance (random start, restricted vocabulary)": {
                f"{name}, block {b}": float(u[:, 2].mean()) for (name, b), u in units.items()},
            **_examples(inversions, (*group, *group_twins), shown.chosen),
        },
        plot={"kind": "bars", "title": f"S3.12: masked first token from [:, 1:, :] (block {BLOCK})",
              "categories": [m.name for m in (*group, *group_twins)], "ylabel": "fraction of prompts",
              "series": {"masked token recovered": series(shown.masked)}},
    )
