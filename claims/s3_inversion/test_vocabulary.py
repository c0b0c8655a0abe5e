"""S3.6 — restricting the allowed vocabulary improves recovery.

S3 ("Restricted Vocabulary Input Representation"): decoded over GPT-2's whole vocabulary, a trained block's
a_g is rare tokens ('precarious NeighNASA Someonetre'); allowed only the words of the prompt, the same block
recovers 'The sky is blue.' exactly at N = 2000; allowed the words of 'The sky is blue or red depending on the
time of day.' (the prompt plus distractors), it gives 'day or day blue or' at N = 20000. GPT-J's first block:
'The skyeton resp cease' over the whole vocabulary, 'The sky is blue of' over the sentence's words.

What is tested: S3 decodes one a_g under nested vocabularies (whole ⊃ prompt + distractors ⊃ prompt), and it
decodes as its code does (``masked_decode``): the scores a_g·W_E⁺ times a 0/1 mask of the allowed tokens, then
argmax (``latent_instruments.inversion.zero_masked_decode``). With −inf masking the argmax over a set that
contains the answer cannot be wrong where the argmax over a larger set was right, so accuracy could only rise
as the set narrows, a property of argmax rather than of the model (version 3 decided on that). Under S3's
0/1 mask a disallowed token scores 0 and wins wherever every allowed score is negative, so a restriction can
lower accuracy, and the gain is a measurement: the model's errors must be tokens outside the allowed set whose
scores beat the answer, not a position where the answer scores below zero. The claim's content is that
accuracy rises, strictly, at each narrowing ("even a very small expansion of the allowed vocabulary" undoes
the recovery). Each difference is paired over prompts; the control asks that the narrowest vocabulary alone
does not produce the recovery: the random start a₀, decoded the same way, stays below the found input. The
−inf decodings and how often a masked 0 wins are reported beside.
"""

import pytest

from claims.s3_inversion.convergence import continues, settled
from claims.s3_inversion.inversions import SOURCE_PROMPT, first_prompt
from claims.s3_inversion.vocabulary_checks import decided_gain, vocabulary_checks
from claims.s3_inversion.vocabulary_measures import DECODINGS, continue_vocabulary, measure_vocabulary
from fixtures.catalogue_text import procedure
from reports.checks import FAILED, PASSED
from reports.plots import series


def _vocabulary_details(run, how: str, estimates: list) -> dict:
    """S3.6's details: token accuracy by decoding (and version 3's −inf masking), chance, where a masked 0 wins,
    the setting and block 1's decoded examples."""
    return {
        "token accuracy by decoding": {d: e.value for d, e in zip(DECODINGS, estimates)},
        "random start, prompt-only decoding (chance)": estimates[3].value,
        "token accuracy by decoding, −inf masking (version 3's)": {
            DECODINGS[1]: float(run.accuracy.mean()), DECODINGS[2]: float(run.prompt_accuracy.mean()),
            "random start, prompt only": float(run.start_prompt_accuracy.mean())},
        "positions where a masked 0 wins (S3's decoding)": {
            DECODINGS[1]: float(run.zero_wins.mean()), DECODINGS[2]: float(run.zero_prompt_wins.mean())},
        "setting": how,
        "examples (block 1; top-5 per position, as S3 shows them)": first_prompt(run.examples),
    }


# 8: a decided gain's convergence control (block 1's descent continued to 5N: a gain rests on the whole vocabulary's
# failure to recover the prompt, which more steps can remove)
@pytest.mark.claim("S3.6", version=9, sample="prompts")  # 9: plateau rule, S3's own setting beside; 7: 24 CPU prompts, a third choose (6: chosen once)
@pytest.mark.models("trained", "hf")
def test_restricting_the_vocabulary_improves_recovery(model_name, subject, inversions, claim):
    """S3.6: one a_g from block 1, decoded over the whole vocabulary, the prompt's continuation's tokens and the
    prompt's own tokens; accuracy rises strictly at each narrowing."""
    problem = inversions.problem(model_name, subject)
    e, shown = measure_vocabulary(model_name, subject, inversions, claim)
    e = settled(e, lambda e: decided_gain(e, shown.steps),  # a decided gain: the same a_g after a 5N descent
                lambda e: continue_vocabulary(e, shown, model_name, subject, inversions, claim), when=(FAILED, PASSED))
    distractors = problem.allowed.sum(1).float().mean().item() - problem.prompt_allowed.sum(1).float().mean().item()
    claim.record(
        vocabulary_checks(e, shown.steps),
        procedure=procedure("S3.6/restricting-the-vocabulary-improves-recovery", prompts=shown.prompts,
                            tokens=problem.tokens, SOURCE_PROMPT=SOURCE_PROMPT, how=shown.how,
                            headline_label=inversions.scale.headline_label, steps=shown.run.steps,
                            vocabulary_size=problem.weight.shape[0],
                            sentence_tokens=problem.sentence_tokens, distractors=distractors,
                            convergence=continues("a gain", "block 1's headline descent", holds=True)),
        scaled=" ".join(filter(None, [
            f"S3: one prompt through block 1 of GPT-2 (768 wide) and GPT-J (4096); here {model_name} "
            f"({subject.d_model} wide, vocabulary {problem.weight.shape[0]}).", inversions.scale.note()])),
        details=_vocabulary_details(shown.run, shown.how, shown.by_decoding),
        plot={
            "kind": "bars",
            "title": f"S3.6 on {model_name}: one a_g, three vocabularies",
            "categories": list(DECODINGS) + ["random start, prompt only"], "ylabel": "token accuracy",
            "series": {"block 1": series(shown.by_decoding)},
        },
    )
