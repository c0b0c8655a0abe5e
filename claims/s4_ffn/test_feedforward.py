"""S4.2: dropping a block's FFN output changes the prediction more than dropping its attention output, in every
block, and the effect is most pronounced in block 1.

S4 Appendix IV sends on each block's output with one summand removed,
``x + ffwd_out`` (no attention) or ``x + sa_out`` (no FFN; the FFN still saw
``x + sa_out``), and reports the mean Hellinger distance of the prediction to
the full model's per block: "The effect is most pronounced in the first block
[H = SOURCE_NO_FFN_1 against SOURCE_NO_ATTN_1] ... Across the rest of the layers,
the difference is less dramatic, but the feed-forward network output always has
the larger impact." S4's table is in the topic's home, ``feedforward.toml``.

The claim checks are the source's two sentences (version 6):

- "always has the larger impact": in every block, H(no FFN) / H(no attention) > LARGER, each block's ratio of mean
  H over prompts by the low end of its own interval;
- "most pronounced in the first block": block 1's difference H(no FFN) − H(no attention) exceeds every later
  block's, by the interval's low end. The difference, not the ratio, is the source's own measure ("the
  difference is less dramatic"), and its numbers separate on it (block 1's SOURCE_NO_FFN_1 − SOURCE_NO_ATTN_1 is
  several times every later block's), while by ratio block 1 and block 6 nearly tie.

S4's magnitudes are a reading beside the checks, not a threshold: its smallest per-block ratio (block 3:
SOURCE_NO_FFN_3 / SOURCE_NO_ATTN_3, ``SOURCE_WEAKEST``) was the bound of versions 1-5, which is stricter than the
source's words and failed models that meet them (tiny-w96's weakest block, 1.28 [1.16, 1.42]).

Since version 4 the measurement is S4's own ablation: 10-token prompts (S4's 10-character ones), H at the last
position only, where one summand dropped in one block acts on one prediction. Version 3's reading, H averaged
over every position of full-context sequences, is kept as a detail. Version 5: the 10-token prompts are windows
of text (``fixtures.prompts.not_text``).
"""

import pytest

from claims.s4_ffn.feedforward_checks import feedforward_checks
from claims.s4_ffn.feedforward_measures import (
    SOURCE_NO_ATTN, SOURCE_NO_FFN, SOURCE_RATIO, FeedforwardEstimates, FeedforwardShown, measure_ffn_dominance,
)
from fixtures.catalogue_text import procedure
from reports.plots import series


SOURCE_WEAKEST = min(SOURCE_RATIO)  # block 3: S4's smallest ratio, a magnitude reading beside the checks
PROMPT_TOKENS = 10  # S4: 10-character prompts, H at the last position
PROMPTS = 512  # per look (S4: 20,000); the sequential test doubles it while a block is undecided


def _table(e: FeedforwardEstimates, shown: FeedforwardShown) -> dict:
    """S4.2's details: per block the two ablations' H, their ratio, the full-context and twin readings, and S4's
    Appendix IV row where the depth is S4's."""
    source = len(e.ratios) == len(SOURCE_RATIO)
    table = {}
    for b in range(len(e.ratios)):
        (no_attn, no_ffn), r, t = shown.sides[b], e.ratios[b], shown.twin_ratios[b]
        row = {"H no attention": no_attn.value, "H no FFN": no_ffn.value, "difference": no_ffn.value - no_attn.value,
               "ratio": r.value, "ratio low": r.low, "ratio high": r.high,
               f"ratio above S4's weakest, {SOURCE_WEAKEST:.2f} (a reading)": r.low > SOURCE_WEAKEST,
               "full-context ratio (version 3)": shown.context_ratios[b].value,
               "full-context ratio low": shown.context_ratios[b].low,
               "twin H no attention": float(shown.twin_h[:, b, 0].mean()),
               "twin H no FFN": float(shown.twin_h[:, b, 1].mean()), "twin ratio": t.value, "twin ratio low": t.low,
               "twin ratio high": t.high}
        if source:
            row |= {"S4 H no attention": SOURCE_NO_ATTN[b], "S4 H no FFN": SOURCE_NO_FFN[b],
                    "S4 ratio": SOURCE_RATIO[b]}
        table[f"block {b + 1}"] = row
    return table


# 6: the source's words (ratio > 1 in every block, block 1's difference the largest); 5: prompts that are text;
# 4: S4's last-position ablation
@pytest.mark.claim("S4.2", version=6, sample="prompts")
@pytest.mark.models("trained", "hf", twin=True)
@pytest.mark.needs("logits")
def test_ffn_output_dominates_each_block(model_name, subject, pool, activations, claim, sample_scale):
    """S4.2: in every block, H(full, no FFN) / H(full, no attention) at the last position of short prompts is above
    LARGER, and block 1's difference is the largest."""
    twin = pool.get(subject.entry.twin)
    tokens = min(PROMPT_TOKENS, subject.context)
    ids = pool.text_windows(model_name, PROMPTS * sample_scale, tokens)
    e, shown = measure_ffn_dominance(subject, twin, ids, activations, claim)
    n_blocks, source = len(e.ratios), len(e.ratios) == len(SOURCE_RATIO)  # S4's numbers beside where depths agree
    beside = {} if not source else {
        f"block {b + 1}: H(no {side})": shown.sides[b][k].value for b in range(n_blocks)
        for k, side in enumerate(("attention", "FFN"))}
    claim.record(
        feedforward_checks(e),
        procedure=procedure("S4.2/ffn-output-dominates-each-block", prompts=shown.h.shape[0], tokens=tokens,
                            context_prompts=shown.context_h.shape[0],
                            positions=activations.input_ids.shape[1]),
        details={"per-block ablation (S4 Appendix IV table, regenerated)": _table(e, shown)},
        plot={
            "kind": "bars",
            "title": f"S4.2 on {model_name}: Hellinger distance to the full model per ablated block",
            "categories": list(range(1, n_blocks + 1)), "xlabel": "block", "ylabel": "Hellinger distance to the full model",
            "series": {"attention dropped": series([s[0] for s in shown.sides]),
                       "FFN dropped": series([s[1] for s in shown.sides]),
                       "untrained twin, attention dropped": {"value": shown.twin_h[:, :, 0].mean(axis=0).tolist()},
                       "untrained twin, FFN dropped": {"value": shown.twin_h[:, :, 1].mean(axis=0).tolist()}},
            "source": {"S4 FFN dropped": SOURCE_NO_FFN, "S4 attention dropped": SOURCE_NO_ATTN} if source else {},
        },
        beside_source=beside,
    )
