"""Training recipes of the zoo's trained models (GPT-2 architecture, char level, as S4).

A recipe fully determines a checkpoint, together with the corpus hash: the
checkpoint cache key is a hash of both. S4's model: 6 pre-LN blocks, n_embed
384, 6 heads, context 256, ReLU FFN 384 -> 1536 -> 384, dropout 0.2, untied
output head, AdamW lr 3e-4 for 3500 steps then 3e-5, batch 64, seed 1337.
"""

import hashlib
import json
from dataclasses import asdict, dataclass

# Part of every checkpoint key: bump it when the trainer's numerics change, so
# that cached checkpoints made by older code are not mistaken for new ones.
# 2: CPU thread count pinned (models.runtime.pin_cpu_threads).
TRAINER_VERSION = 2


@dataclass(frozen=True)
class Recipe:
    """Everything that makes one trained checkpoint."""

    name: str  # zoo name, e.g. "s4-w384"
    n_layer: int  # transformer blocks (S4: 6)
    n_embd: int  # residual stream width d_model (S4: 384); FFN is 4x this, ReLU
    n_head: int  # attention heads (S4: 6)
    context: int  # learned absolute positions = training window (S4: 256)
    dropout: float  # on embeddings, attention and residual branches (S4: 0.2)
    steps: int  # optimizer steps (S4: 4500)
    lr: float  # AdamW learning rate (S4: 3e-4)
    lr_drop_step: int  # step at which lr becomes lr_final (S4: 3500)
    lr_final: float  # learning rate after the drop (S4: 3e-5)
    batch: int  # sequences per step (S4: 64)
    seed: int  # init and batch sampling (S4: 1337; alternates 1442, 88, 99999)
    eval_every: int  # steps between validation-loss evaluations (loss curve resolution)

    def key(self, corpus_sha256: str, tokenizer_json: str) -> str:
        """Cache key: 16 hex digits of sha256 over trainer version, recipe, corpus and tokenizer."""
        blob = json.dumps([TRAINER_VERSION, asdict(self), corpus_sha256, tokenizer_json], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _ladder(prefix: str, widths: tuple[int, ...], **common) -> tuple[Recipe, ...]:
    return tuple(Recipe(name=f"{prefix}-w{w}", n_embd=w, **common) for w in widths)


# tiny: trains in well under 10 minutes in total on 2 CPU cores. Shorter and
# without dropout, so that 700 steps reach a model that clearly beats unigram
# statistics; widths >= 96 keep d_model above the 84-character vocabulary,
# so the pseudo-inverse of W_E decodes exactly (S3.1) on every rung.
TINY = _ladder(
    "tiny", (96, 128, 192),
    n_layer=4, n_head=4, context=128, dropout=0.0, steps=700, lr=2e-3, lr_drop_step=550, lr_final=2e-4,
    batch=32, seed=1337, eval_every=50,
)

# full: S4's exact recipe at width 384, with a ladder to 768 (GPU).
FULL = _ladder(
    "s4", (192, 384, 768),
    n_layer=6, n_head=6, context=256, dropout=0.2, steps=4500, lr=3e-4, lr_drop_step=3500, lr_final=3e-5,
    batch=64, seed=1337, eval_every=250,
)

PROFILES: dict[str, tuple[Recipe, ...]] = {"tiny": TINY, "full": FULL}
MAIN_MODEL = {"tiny": "tiny-w128", "full": "s4-w384"}  # the profile's stand-in for S4's model
