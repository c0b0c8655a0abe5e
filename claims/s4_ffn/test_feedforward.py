"""S4: feed-forward (FFN/MLP) outputs and the block output.

S4.2 — dropping a block's FFN output changes the prediction far more than
dropping its attention output, in every block.
"""

import numpy as np
import pytest
import torch

from latent_instruments.distances import hellinger_distance
from latent_instruments.stats import bootstrap
from models.capture import ablated_logits
from reports.plots import series
from reports.records import Check

pytestmark = pytest.mark.gpu

# S4 Appendix IV, mean Hellinger distance to the full model per block (1..6).
SOURCE_NO_ATTN = [0.11, 0.07, 0.09, 0.06, 0.04, 0.03]
SOURCE_NO_FFN = [0.70, 0.19, 0.15, 0.13, 0.14, 0.17]


def _ablation_distances(subject, captured) -> np.ndarray:
    """Per-sequence mean Hellinger distance to the full model, shape (batch, n_blocks, 2): [no attn, no FFN]."""
    full = torch.softmax(captured.cache.logits, dim=-1)
    out = []
    for block in range(captured.cache.n_blocks):
        row = []
        for drop in ("attn", "mlp"):
            logits = ablated_logits(subject.model, subject.adapter, captured.input_ids, block, drop).to(full.device)
            row.append(hellinger_distance(full, torch.softmax(logits, dim=-1)).mean(dim=1).cpu())  # (batch,)
        out.append(torch.stack(row, dim=1))
    return torch.stack(out, dim=1).numpy()


def _min_ratio(units: np.ndarray) -> float:
    mean = units.mean(axis=0)  # (n_blocks, 2)
    return float((mean[:, 1] / mean[:, 0]).min())


@pytest.mark.claim("S4.2", version=1)
@pytest.mark.models("trained", "hf")
@pytest.mark.needs("logits")
def test_ffn_output_dominates_each_block(model_name, subject, activations, claim, settings):
    """S4.2: in every block, H(full, no FFN) exceeds H(full, no attention)."""
    h = _ablation_distances(subject, activations)
    ratio = bootstrap(h, _min_ratio, seed=settings.seed)
    floor = bootstrap(h, lambda u: float(u.mean(axis=0)[:, 0].min()), seed=settings.seed)
    per_block = [
        {side: bootstrap(h[:, b, i], lambda u: float(u.mean()), seed=settings.seed) for i, side in enumerate(("no_attn", "no_ffn"))}
        for b in range(h.shape[1])
    ]
    blocks = list(range(1, h.shape[1] + 1))
    claim.record(
        [
            Check.of("min over blocks of H(no FFN) / H(no attention)", ratio, "ratio", ">", 1.0,
                     "S4 Appendix IV: the FFN output 'always has the larger impact'; the source's per-block ratios "
                     "are 6.4, 2.7, 1.7, 2.2, 3.5, 5.7 (smallest 0.15/0.09 in block 3). The threshold is the claim's "
                     "own bound, ratio 1 in every block, cleared by the low end of a 95 % bootstrap interval over "
                     "sequences; 'far more' is reported as the ratio itself, not thresholded"),
            Check.of("min over blocks of H(no attention)", floor, "Hellinger", ">", 1e-3,
                     "control: an ablation hook that silently did nothing would give H ≈ 1e-7 (float32 rounding) "
                     "and make the ratio vacuous; the source's smallest attention-ablation H is 0.03 ± 0.03 (block 6), "
                     "so 1e-3 separates a real ablation from a dead one", role="control"),
        ],
        procedure=(
            "As S4: the block output sent on is resid_pre + mlp_out (attention dropped) or resid_pre + attn_out "
            "(FFN dropped), the FFN still computed from resid_pre + attn_out. Differs from the source in its prompts: "
            f"{h.shape[0]} held-out validation sequences of {activations.input_ids.shape[1]} tokens in full context, "
            "H at every position averaged per sequence (S4: 20,000 training-text prompts, last position)."
        ),
        details={
            "per_block": [{k: {"value": e.value, "low": e.low, "high": e.high} for k, e in row.items()} for row in per_block],
            "source_no_attn": SOURCE_NO_ATTN,
            "source_no_ffn": SOURCE_NO_FFN,
        },
        plot={
            "kind": "bars",
            "title": f"S4.2 on {model_name}: Hellinger distance to the full model per ablated block",
            "categories": blocks, "xlabel": "block", "ylabel": "Hellinger distance to the full model",
            "series": {label: series([row[key] for row in per_block])
                       for label, key in (("attention dropped", "no_attn"), ("FFN dropped", "no_ffn"))},
            "source": {"S4 FFN dropped": SOURCE_NO_FFN, "S4 attention dropped": SOURCE_NO_ATTN} if len(blocks) == 6 else {},
        },
    )
