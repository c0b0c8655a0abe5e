"""S3.7 and S3.13: inversion under the cosine loss.

S3.7 — for direct input representation (a vector over the vocabulary per position, times W_E), the cosine loss
fails on very short inputs where longer ones succeed. S3 (trained Llama-7B, block 1): 'Boba Fett' gives
'Nacional**** tête', a 7-token sentence gibberish, the 11-word 'Boba Fett was a legendary bounty hunter in
the outer rim' all but one token right; "nearly every one-word target input gives very inaccurate input
representations". Its contrast: "performing gradient descent on the input embedding, ... cosine similarity
yields accurate representations even for one-word inputs ('George' is represented 'George')".

S3's direct representation maps a vocabulary much larger than the width onto it ("Non-invertibility is expected
... being that the output dimension is much smaller than the input"). Where the vocabulary is no larger than the
width (the character models: 84 tokens, 96-192 features) W_E is injective, a direct inversion is the embedding-space
inversion in other coordinates, where S3 says the cosine loss recovers one-word inputs, and the claim is not
informative before any descent (version 7; versions 4-6 failed red there, on that contrast's absence).

Two conditions for S3.7 to be decided, each measured. The direct representation must be able to identify the
tokens at all: plain descent moves a vector over the vocabulary only within W_E's column space, so even an
exact fit decodes the token only where that projection lifts it above the start's noise
(``latent_instruments.decoding.direct_fit_decode``). The direct target is S3's code's, 10 at the token's index
(version 4; version 3's one-hot of 1 decoded no token of a random W_E at S3's Llama-7B ratio of 7.8, so the gate
would have called S3's own model not informative). With a vocabulary 43 times the width (the sub-word tiny
model) even 10 cannot, and the claim is not informative there, a property of W_E and S3's start, not of the
loss: a perfect inversion decodes what the exact fit decodes (an identity), and S3's long inputs that succeed
decode more than half their words (4/5 to 10/11), which no inversion could reach where the fit decodes half. And the descent itself must work where it must (control): the same direct descent,
same start, steps and schedule, under the L2 loss recovers most tokens of the long input. A cosine failure
is otherwise a failed instrument, not a finding.

S3.13 — layer normalisation impedes minimising the cosine distance by gradient descent; removing it allows it.
S3 (an untrained Llama block, direct representation): "for one-token inputs gradient descent is able to
minimize cos(φ) ... but when more than one token is present in the input this is no longer possible";
"removing the layer normalizations allows minimization of cos(φ) on the output via gradient descent on the
input, as long as the input is not too long (>5 tokens)".

S3.13's budget is set by its control: S3's N = 200 for untrained blocks leaves 5-token inputs at a quarter to a
third of their start with or without norms on the tiny twins, a stall of the descent that says nothing about
the norms. So the descent without norms, where S3 says minimisation is possible, is run at N, 5N and 25N steps
until it reaches a tenth of its start; the comparison with norms runs at that budget. If no budget gets there,
the control fails (its interval wholly above a tenth: the descent does not work on this block) or, where its
interval straddles a tenth, leaves the record inconclusive (control undecided). S3's premise, that one-token
inputs are minimised with the norms in place, is a second control (version 4; it was a not-informative gate):
S3 says the descent works there, so a descent that fails there is red.
"""

import pytest

from claims.s3_inversion.convergence import continues, deepens, further_steps, settled
from claims.s3_inversion.cosine_checks import cosine_checks, layer_norm_checks
from claims.s3_inversion.cosine_measures import (
    BUDGETS, CODE_RATE, SHORT_TOKENS, CosineEstimates, CosineShown, continue_cosine, measure_cosine, measure_layer_norm,
)
from claims.s3_inversion.inversions import ADAPTED_DESCRIPTION, examples, first_prompt
from fixtures.catalogue_text import procedure
from latent_instruments.stats import Estimate
from reports.plots import series


LONG_PROMPT = "Boba Fett was a legendary bounty hunter in the outer rim"  # S3.7's prompt that succeeds
CONTROL_INPUTS = 64  # one-token inputs of S3.7's control at every scale: 16 leave its interval ±0.23 wide
CONTROL_PROCEDURE = {  # the control's setting in the procedure, by Scale.source
    True: "with S3's setting, on every one of them (at source scale the setting is S3's own, as S3.2-S3.4's)",
    False: f"with S3's setting and {ADAPTED_DESCRIPTION}, the better chosen on a third of them and reported on the "
           "other two thirds"}


def _difference_text(e: Estimate) -> str:
    """"v [low, high]": long minus one-token accuracy, with its 95 % bootstrap interval."""
    return f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"


def _examples(tokenizer, found: dict) -> dict:
    """Report sections of decoded examples: {label: (ids (batch, T), Inversion)} -> {section title: prompt 1's rows}."""
    return {f"examples, {label} (top-5 per position, as S3 shows them)":
            first_prompt(examples(ids, inversion.top_k, tokenizer, "decoded")) for label, (ids, inversion) in found.items()}


def _cosine_details(long_tokens: int, e: CosineEstimates, shown: CosineShown) -> dict:
    """S3.7's details: the learning-rate dependence, token accuracies, cosine distances reached and the control's
    settings."""
    code_units, control, per, found = shown.code_units, shown.control, shown.per, shown.found
    long, one = found["long"][0], found["one"][0]
    indirect = [found["indirect"][0], found["indirect, adapted"][0]]
    return {f"learning-rate dependence: long minus one-token (direct, cosine), at S3's text's η 1 → 1/100 and at "
            f"its code's η {CODE_RATE[0]} → {CODE_RATE[1]}": {
                "S3's text (the claim's)": _difference_text(e.ordering),
                "S3's code": _difference_text(shown.code_ordering),
                f"{long_tokens}-token, direct, S3's code rate": float(code_units[:, 0].mean()),
                "one-token, direct, S3's code rate": float(code_units[:, 1].mean())},
            "token accuracy": {f"{long_tokens}-token, direct": per[0].value, "one-token, direct": per[1].value,
                               "one-token, indirect": per[2].value, f"{long_tokens}-token, direct, L2": e.descent.value,
                               f"{long_tokens}-token, exact fit from the start": shown.exact_fit.value},
            "cosine distance reached, median": {
                f"{long_tokens}-token, direct": float(long.loss.median()), "one-token, direct": float(one.loss.median()),
                "one-token, indirect (S3's setting)": float(indirect[0].loss.median()),
                "one-token, indirect (adapted)": float(indirect[1].loss.median())},
            "one-token, indirect, token accuracy by setting": {
                "S3's": float(control[:, 0].mean()), "adapted": float(control[:, 1].mean())}}


# 7: vocabulary ≤ width not informative (S3's scope words), the exact-fit gate's half from S3's successes (issue 73)
@pytest.mark.claim("S3.7", version=8)  # 8: plateau rule; 6: convergence control; 5: exact and per-prompt controls; 4: direct target 10
@pytest.mark.models("trained", "hf")
def test_cosine_direct_inversion_fails_on_one_token(model_name, subject, inversions, pool, claim):
    """S3.7: direct inversion under the cosine loss recovers long inputs better than one-token inputs."""
    scale = inversions.scale
    n = scale.prompts_for(subject.d_model)
    long_tokens = min(len(subject.tokenizer.encode(LONG_PROMPT)), subject.context)
    ids = pool.text_windows(model_name, n, long_tokens)
    e, shown, context = measure_cosine(model_name, subject, ids, lambda: pool.text_windows(model_name, CONTROL_INPUTS, 1),
                                       inversions, claim)
    e, shown = settled((e, shown), lambda m: cosine_checks(m[0], context)[0],  # a failure: the descents continued
                       lambda m: continue_cosine(*m, context, subject, ids, claim))
    steps, found, direct_target = scale.steps(model_name), shown.found, shown.found["long"][1].config.direct_target
    indirect = [found["indirect"][0], found["indirect, adapted"][0]]
    converged = {} if shown.continued is None else {
        f"token accuracy after {steps + further_steps(steps)} steps (convergence control)": {
            f"{long_tokens}-token, direct": float(shown.continued[:, 0].mean()),
            "one-token, direct": float(shown.continued[:, 1].mean())}}
    claim.record(
        cosine_checks(e, context),
        procedure=procedure("S3.7/cosine-direct-inversion-fails-on-one-token", n=n, long_tokens=long_tokens,
                            LONG_PROMPT=LONG_PROMPT, direct_target=direct_target, steps=steps,
                            code_rate_start=CODE_RATE[0], code_rate_end=CODE_RATE[1], CONTROL_INPUTS=CONTROL_INPUTS,
                            control_setting=CONTROL_PROCEDURE[scale.source],
                            convergence=continues("the ordering", "the long and one-token descents")),
        scaled=" ".join(filter(None, [f"S3: trained Llama-7B (4096 wide, vocabulary 32000), one prompt each; here "
                                      f"{model_name} ({subject.d_model} wide).", scale.note()])),
        details={**_cosine_details(long_tokens, e, shown),
                 **converged,
                 **_examples(subject.tokenizer, {
                     f"{long_tokens}-token input, direct": (ids, found["long"][0]),
                     "one-token inputs, direct": (ids[:, :1], found["one"][0]),
                     "one-token inputs, indirect (better setting)":
                         (shown.singles, max(indirect, key=lambda i: float(i.token_accuracy.mean())))})},
        plot={"kind": "bars", "title": f"S3.7 on {model_name}: cosine loss, block 1",
              "categories": [f"{long_tokens} tokens, direct", "1 token, direct", "1 token, indirect"],
              "ylabel": "token accuracy", "series": {"cosine loss": series(shown.per)}},
    )


@pytest.mark.claim("S3.13", version=4)  # 4: one-token premise a control; 3: S3's direct target of 10
@pytest.mark.models("untrained")
def test_layer_norm_impedes_cosine_minimisation(model_name, subject, inversions, pool, claim):
    """S3.13: the cosine distance reached on block 1's output of a random-init model is larger with its layer
    norms than with them removed, for inputs of S3's at most 5 tokens."""
    check_layer_norm(model_name, subject, inversions, pool, claim)


@pytest.mark.claim("S3.13", version=4)  # 4: one-token premise a control; 3: S3's direct target of 10
@pytest.mark.models("reference")
@pytest.mark.source_scale  # the direct representation over a 32k-50k vocabulary costs about a minute per model on a CPU
def test_reference_layer_norm_impedes_cosine_minimisation(model_name, subject, inversions, pool, claim):
    """S3.13 on the random-init references (S3's model is an untrained Llama)."""
    check_layer_norm(model_name, subject, inversions, pool, claim)


def check_layer_norm(model_name, subject, inversions, pool, claim) -> None:
    """S3.13's record on one random-init model: ``measure_layer_norm``'s estimates, ``layer_norm_checks`` on them,
    and the details (see the module docstring)."""
    scale = inversions.scale
    n = scale.prompts_for(subject.d_model)
    ids = pool.text_windows(model_name, n, SHORT_TOKENS)
    e, shown = measure_layer_norm(model_name, subject, ids, inversions, claim)
    units = shown.units
    details = {"cosine distance (mean)": {
        "with norms": float(units[:, 0].mean()), "without norms": float(units[:, 1].mean()),
        "start, with norms": float(units[:, 2].mean()), "start, without norms": float(units[:, 3].mean()),
        "one token, with norms": float(units[:, 4].mean()), "one token, start": float(units[:, 5].mean())},
        "without norms, distance reached over its start, by N": shown.tried}
    claim.record(
        layer_norm_checks(e),
        procedure=procedure("S3.13/layer-norm-impedes-cosine-minimisation", n=n, SHORT_TOKENS=SHORT_TOKENS,
                            steps=shown.steps, removed=shown.removed,
                            first_budget=scale.steps(model_name), budgets=', '.join(map(str, BUDGETS)),
                            convergence=deepens("its claim check fails where the distance with norms ends below a tenth of its start, minimised "
                                         "although S3 says it cannot be; a longer descent only lowers it further")),
        scaled=" ".join(filter(None, [f"S3: one untrained Llama-7B block (4096 wide); here {model_name} "
                                      f"({subject.d_model} wide).", scale.note()])),
        details={**details, **_examples(subject.tokenizer, {"with norms": (ids, shown.inversions["with norms"]),
                                                             "without norms": (ids, shown.inversions["without norms"])})},
    )
