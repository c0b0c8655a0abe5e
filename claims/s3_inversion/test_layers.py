"""S3.14 — using several layers' outputs together does not improve inversion over the last of them alone.

S3 ("Multiple hidden layer outputs do not improve input representation"): gradient descent on the input
directly (a vector over the vocabulary times W_E) against the outputs of "the first three layers" together,
concatenated, gives representations "no better than before", with "the same ability to accurately represent
an input as simply taking the output of the last (in this case the third) block".

S3's code as printed applies the first block three times (o1 = h[0](x), o2 = h[0](o1), o3 = h[0](o2)) and
adds no position embeddings. The test uses what the text describes, the model's first LAYERS blocks run
normally; the printed variant is not reproduced (it is not a layer of the model). S3 optimises the input
directly; on the tiny models direct inversion under S3's setting stays near chance from every block
(block 1: 0.09 of tokens on tiny-w96, 0.02 on tiny-w128), which leaves no gap to measure, so the embedding
representation under S3.2-S3.4's two settings (S3's own and the adapted step, each target its headline setting) is
used, as for every other depth claim.

Threshold derivation: the concatenated target contains block 1's output, from which the input inverts
better than from block 3 (S3.4). If the extra layers helped, accuracy from all three would move from
block 3's level towards block 1's. "No better" is read as: the concatenation recovers less than half of the gap
between block 1 alone and block 3 alone, by the interval's high end. Where block 1 is decisively not better
than block 3 (the gap's whole interval at or below 0) there is no gap to recover and the gap control fails (version
8; before, a not-informative gate quoting S3's depth finding, which no sentence of S3's scopes: S3's share presumes
the gap, and a model without it cannot be measured, which must show); where the gap's interval contains
0, or is one the sample cannot give (a zero-width bootstrap: block 1 and block 3 equal on every prompt, version
7), whether there is a gap is itself undecided, and the record is inconclusive (the gap is a control: "control
undecided"), never a not-informative decided on a sliver. Version 4:
before, any gap whose interval reached 0 made the claim not informative, a knife edge that the same weights
crossed under AVX2 against AVX-512 kernels (tiny-w96-seed1442).

Control: the claim would also pass if the descent broke on the longer concatenated target (three times the
L1 terms under the same step). The concatenation holds block 3's output, so a working descent recovers about
block 3's accuracy at least: it must not lose more than half of the gap below block 3 (the share recovered
above −½, by the interval's low end).

Convergence control (version 8): where the share fails, each target's headline descent is continued to 5N steps on
the same prompts and the share measured again; a failure that does not stay is the step budget's, and the record is
inconclusive (``claims.s3_inversion.convergence``).
"""

import pytest

from claims.s3_inversion.convergence import continues, settled
from claims.s3_inversion.inversions import DESCENT_SETTINGS, first_prompt
from claims.s3_inversion.layers_checks import gap_check, layers_checks
from claims.s3_inversion.layers_measures import FIRST, LAST, continue_layers, measure_layers
from fixtures.catalogue_text import procedure
from reports.checks import FAILED, PASSED
from reports.plots import series


# not sample="prompts": the share is a ratio whose denominator, block 1's advantage over block 3, is within noise
# of 0 on the tiny models; at 32 prompts its interval spans [-0.6, 2.3] and the control straddles (issue 20)
# 10 (issue 73): the gap control re-derived as the identity it is (the share's denominator), its bound and the
# procedure unchanged
@pytest.mark.claim("S3.14", version=11)  # 11: plateau rule, the gap again at 5N; 9: a hold continued too; 8: convergence control, no gap a failed control
@pytest.mark.models("trained", "hf")
def test_several_layers_do_not_improve_inversion(model_name, subject, inversions, claim):
    """S3.14: inversion from blocks 1-3 concatenated recovers less than half of block 1's advantage over block 3
    alone (each target its headline setting)."""
    e, context, shown = measure_layers(model_name, subject, inversions, claim)
    scale, n_blocks = inversions.scale, len(subject.adapter.block_list(subject.model))
    per, best, runs = shown.per, shown.best, shown.runs
    if (gap := gap_check(e.advantage)).status == FAILED:  # decisively no gap: no share to measure, and that shows
        claim.record([gap], procedure=procedure(
            "S3.14/several-layers-do-not-improve-inversion/no-gap", prompts=shown.prompts,
            headline_label=scale.headline_label, first_accuracy=per[FIRST].value, last_accuracy=per[LAST].value),
            details={f"token accuracy ({scale.headline_label})": {label: x.value for label, x in zip(shown.targets, per)}})
    e = settled(e, lambda e: layers_checks(e, context)[0],  # decided (a hold too): each target's descent continued
                lambda e: continue_layers(e, shown, model_name, subject, inversions, claim), when=(FAILED, PASSED))
    claim.record(
        layers_checks(e, context),
        procedure=procedure("S3.14/several-layers-do-not-improve-inversion", prompts=shown.prompts,
                            tokens=inversions.problem(model_name, subject).ids.shape[1], steps=shown.steps,
                            headline_label=scale.headline_label,
                            convergence=continues("the share", "each target's headline descents", holds=True)),
        scaled=" ".join(filter(None, [
            f"S3: trained GPT-2 (12 blocks, 768 wide); here {model_name} ({n_blocks} blocks, {subject.d_model} wide).",
            inversions.scale.note()])),
        details={f"token accuracy ({scale.headline_label})": {label: x.value for label, x in zip(shown.targets, per)},
                 "token accuracy by setting": {f"{label} ({s})": float(runs[label, s].accuracy.mean())
                                               for label in shown.targets for s in DESCENT_SETTINGS},
                 **{f"examples, {label} ({best[label]} setting; top-5 per position, as S3 shows them)":
                    first_prompt(runs[label, best[label]].examples) for label in shown.targets}},
        plot={"kind": "bars", "title": f"S3.14 on {model_name}: inversion by target",
              "categories": list(shown.targets), "ylabel": "token accuracy", "series": {scale.headline_label: series(per)}},
    )
