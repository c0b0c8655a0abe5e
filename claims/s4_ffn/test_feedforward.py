"""S4.2: dropping a block's FFN output changes the prediction more than dropping its attention output, in every
block, and the effect is most pronounced in block 1.

S4 Appendix IV sends on each block's output with one summand removed,
``x + ffwd_out`` (no attention) or ``x + sa_out`` (no FFN; the FFN still saw
``x + sa_out``), and reports the mean Hellinger distance of the prediction to
the full model's per block: "The effect is most pronounced in the first block
[H = 0.70 against 0.11] ... Across the rest of the layers, the difference is
less dramatic, but the feed-forward network output always has the larger
impact."

The claim checks are the source's two sentences (version 6):

- "always has the larger impact": in every block, H(no FFN) / H(no attention) > 1, each block's ratio of mean H
  over prompts by the low end of its own interval;
- "most pronounced in the first block": block 1's difference H(no FFN) − H(no attention) exceeds every later
  block's, by the interval's low end. The difference, not the ratio, is the source's own measure ("the
  difference is less dramatic"), and its numbers separate on it (block 1: 0.59; blocks 2-6: 0.06-0.14), while
  by ratio block 1 (6.36) and block 6 (5.67) nearly tie.

S4's magnitudes are a reading beside the checks, not a threshold: its smallest per-block ratio (block 3:
0.15 / 0.09 = 1.67) was the bound of versions 1-5, which is stricter than the source's words and failed models
that meet them (tiny-w96's weakest block, 1.28 [1.16, 1.42]).

Since version 4 the measurement is S4's own ablation: 10-token prompts (S4's 10-character ones), H at the last
position only, where one summand dropped in one block acts on one prediction. Version 3's reading, H averaged
over every position of full-context sequences, is kept as a detail. Version 5: the 10-token prompts are windows
of text (``fixtures.prompts.not_text``).
"""

import numpy as np
import pytest
import torch

from claims.s4_ffn.feedforward_checks import feedforward_checks
from fixtures.catalogue_text import procedure
from latent_instruments.distances import hellinger_distance
from models.forwards import ablated_logits
from reports.plots import series
from claims.s4_ffn.feedforward_measures import (
    SOURCE_NO_ATTN, SOURCE_NO_FFN, ablation_ratio, last_position_distances, s4_2_estimates, weakest_attention_ablation,
)


SOURCE_RATIO = [f / a for f, a in zip(SOURCE_NO_FFN, SOURCE_NO_ATTN)]  # 6.36, 2.71, 1.67, 2.17, 3.50, 5.67
SOURCE_WEAKEST = min(SOURCE_RATIO)  # 1.67, block 3: S4's smallest ratio, a magnitude reading beside the checks
PROMPT_TOKENS = 10  # S4: 10-character prompts, H at the last position
PROMPTS = 512  # per look (S4: 20,000); the sequential test doubles it while a block is undecided


def ablation_distances(subject, captured) -> np.ndarray:
    """Per-prompt mean Hellinger distance of each single-summand ablation to the full model (S4 Appendix IV).

    Args:
        subject: the loaded model (``LoadedModel``).
        captured: its capture with ``logits`` (``Captured``); the ablated passes run on its input_ids.
    Returns:
        (batch, n_blocks, 2) float64: [..., 0] attention output dropped, [..., 1] FFN output dropped;
        H at every position, averaged per prompt, in [0, 1].
    Raises:
        NonFiniteError: if logits are not finite.
        RuntimeError: if the adapter's module did not run inside the block.
    """
    full = torch.softmax(captured.cache.logits, dim=-1)
    out = []
    for block in range(captured.cache.n_blocks):
        row = []
        for drop in ("attn", "mlp"):
            logits = ablated_logits(subject.model, subject.adapter, captured.input_ids, block, drop).to(full.device)
            row.append(hellinger_distance(full, torch.softmax(logits, dim=-1)).mean(dim=1).cpu())  # (batch,)
        out.append(torch.stack(row, dim=1))
    return torch.stack(out, dim=1).numpy()


def _mean(block: int, side: int):
    return lambda units: float(units[:, block, side].mean())


# 6: the source's words (ratio > 1 in every block, block 1's difference the largest); 5: prompts that are text;
# 4: S4's last-position ablation
@pytest.mark.claim("S4.2", version=6, sample="prompts")
@pytest.mark.models("trained", "hf", twin=True)
@pytest.mark.needs("logits")
def test_ffn_output_dominates_each_block(model_name, subject, pool, activations, twin_activations, claim,
                                         settings, sample_scale):
    """S4.2: in every block, H(full, no FFN) / H(full, no attention) at the last position of short prompts is above
    1, and block 1's difference is the largest."""
    seed = settings.seed
    twin = pool.get(subject.entry.twin)
    tokens = min(PROMPT_TOKENS, subject.context)
    ids = pool.text_windows(model_name, PROMPTS * sample_scale, tokens)
    h = last_position_distances(subject, ids)
    twin_h = last_position_distances(twin, ids.to(twin.input_device))
    context_h = ablation_distances(subject, activations)  # version 3's reading: every position, full context
    context_ratios = [claim.bootstrap(context_h, ablation_ratio(b)) for b in range(context_h.shape[1])]
    n_blocks = h.shape[1]
    ratios = [claim.bootstrap(h, ablation_ratio(b)) for b in range(n_blocks)]
    twin_ratios = [claim.bootstrap(twin_h, ablation_ratio(b)) for b in range(n_blocks)]
    sides = [[claim.bootstrap(h, _mean(b, s)) for s in (0, 1)] for b in range(n_blocks)]
    floor = claim.bootstrap(h, weakest_attention_ablation)
    source = n_blocks == len(SOURCE_RATIO)  # the source's row sits beside ours only where the depths agree

    checks = feedforward_checks(s4_2_estimates(h, seed, floor))

    table = {}
    for b in range(n_blocks):
        (no_attn, no_ffn), r, t = sides[b], ratios[b], twin_ratios[b]
        row = {"H no attention": no_attn.value, "H no FFN": no_ffn.value, "difference": no_ffn.value - no_attn.value,
               "ratio": r.value, "ratio low": r.low, "ratio high": r.high,
               f"ratio above S4's weakest, {SOURCE_WEAKEST:.2f} (a reading)": r.low > SOURCE_WEAKEST,
               "full-context ratio (version 3)": context_ratios[b].value,
               "full-context ratio low": context_ratios[b].low, "twin H no attention": float(twin_h[:, b, 0].mean()),
               "twin H no FFN": float(twin_h[:, b, 1].mean()), "twin ratio": t.value, "twin ratio low": t.low,
               "twin ratio high": t.high}
        if source:
            row |= {"S4 H no attention": SOURCE_NO_ATTN[b], "S4 H no FFN": SOURCE_NO_FFN[b],
                    "S4 ratio": SOURCE_RATIO[b]}
        table[f"block {b + 1}"] = row
    beside = {} if not source else {
        f"block {b + 1}: H(no {side})": sides[b][k].value for b in range(n_blocks)
        for k, side in enumerate(("attention", "FFN"))}
    blocks = list(range(1, n_blocks + 1))
    claim.record(
        checks,
        procedure=procedure("S4.2/ffn-output-dominates-each-block", prompts=h.shape[0], tokens=tokens,
                            context_prompts=context_h.shape[0],
                            positions=activations.input_ids.shape[1]),
        details={"per-block ablation (S4 Appendix IV table, regenerated)": table},
        plot={
            "kind": "bars",
            "title": f"S4.2 on {model_name}: Hellinger distance to the full model per ablated block",
            "categories": blocks, "xlabel": "block", "ylabel": "Hellinger distance to the full model",
            "series": {"attention dropped": series([s[0] for s in sides]), "FFN dropped": series([s[1] for s in sides]),
                       "untrained twin, attention dropped": {"value": twin_h[:, :, 0].mean(axis=0).tolist()},
                       "untrained twin, FFN dropped": {"value": twin_h[:, :, 1].mean(axis=0).tolist()}},
            "source": {"S4 FFN dropped": SOURCE_NO_FFN, "S4 attention dropped": SOURCE_NO_ATTN} if source else {},
        },
        beside_source=beside,
    )
