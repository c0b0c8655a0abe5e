"""Training recipes of the zoo's trained models (GPT-2 architecture, char level, as S4).

A recipe fully determines a checkpoint, together with the corpus hash: the
checkpoint cache key is a hash of both. S4's model: 6 pre-LN blocks, n_embed
384, 6 heads, context 256, ReLU FFN 384 -> 1536 -> 384, dropout 0.2, untied
output head, AdamW lr 3e-4 for 3500 steps then 3e-5, batch 64, seed 1337.
"""

import hashlib
import json
from dataclasses import asdict, dataclass, replace

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
    dropout: float  # on attention weights and residual branches (S4: 0.2), and on embeddings unless embd_dropout
    steps: int  # optimizer steps (S4: 4500)
    lr: float  # AdamW learning rate (S4: 3e-4)
    lr_drop_step: int  # step at which lr becomes lr_final (S4: 3500)
    lr_final: float  # learning rate after the drop (S4: 3e-5)
    batch: int  # sequences per step (S4: 64)
    seed: int  # init and batch sampling (S4: 1337; alternates 1442, 88, 99999)
    eval_every: int  # steps between validation-loss evaluations (loss curve resolution)
    tokenizer: str = "char"  # "char" (S4: one token per character) or "bpe" (the corpus' 4096-token byte-level BPE)
    architecture: str = "gpt2"  # "gpt2" (S4's), or "masked_mixer" (models.mixer: attention -> causal convolution)
    embd_dropout: float | None = None  # on the token + position embeddings; None: as ``dropout`` (S4: none, 0.0)

    def key(self, corpus_sha256: str, tokenizer_json: str) -> str:
        """Cache key: 16 hex digits of sha256 over trainer version, recipe, corpus and tokenizer.

        The tokenizer enters through its JSON (which fixes its kind too), so the ``tokenizer`` field is left out
        of the recipe's part: char-level checkpoints keep the keys they had before the field existed. The
        architecture enters only where it is not GPT-2, and the embedding dropout only where it is set, for the
        same reason.
        """
        fields = {k: v for k, v in asdict(self).items()
                  if k != "tokenizer" and not (k == "architecture" and v == "gpt2")
                  and not (k == "embd_dropout" and v is None)}
        blob = json.dumps([TRAINER_VERSION, fields, corpus_sha256, tokenizer_json], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _ladder(prefix: str, widths: tuple[int, ...], **common) -> tuple[Recipe, ...]:
    return tuple(Recipe(name=f"{prefix}-w{w}", n_embd=w, **common) for w in widths)


# tiny: trains in well under 10 minutes in total on 2 CPU cores. Shorter and
# without dropout, so that 700 steps reach a model that clearly beats unigram
# statistics; widths >= 96 keep d_model above the 84-character vocabulary,
# so the pseudo-inverse of W_E decodes exactly (S3.1) on every rung.
TINY_LADDER = _ladder(
    "tiny", (96, 128, 192),
    n_layer=4, n_head=4, context=128, dropout=0.0, steps=700, lr=2e-3, lr_drop_step=550, lr_final=2e-4,
    batch=32, seed=1337, eval_every=50,
)

# full: S4's exact recipe at width 384, with a ladder to 768 (GPU). S4's model (transformer-experiments,
# models/transformer.py) drops out attention weights, the attention projection and the FFN output, never the
# embeddings: embd_dropout 0 (until 2026-11-28 the embeddings had 0.2 too, and the replica's block-1 FFN was weak:
# S4.2's H(no FFN) 0.19 against S4's 0.70).
FULL_LADDER = _ladder(
    "s4", (192, 384, 768),
    n_layer=6, n_head=6, context=256, dropout=0.2, steps=4500, lr=3e-4, lr_drop_step=3500, lr_final=3e-5,
    batch=64, seed=1337, eval_every=250, embd_dropout=0.0,
)

# sub-word: the ladder's main recipe on the corpus' byte-level BPE (4096 tokens, in which " king", " queen",
# " man" and " woman" are whole tokens: S2.3's analogies), a tokenisation like OPT's for S0. Tiny: 96 wide,
# so that vocab >> d_model (S3.1's pseudo-inverse is then a real projection) and it trains in ~5 minutes.
SUBWORD = {
    "tiny": replace(TINY_LADDER[0], name="tiny-bpe-w96", tokenizer="bpe"),
    "full": replace(FULL_LADDER[1], name="s4-bpe-w384", tokenizer="bpe"),
}
TINY = (*TINY_LADDER, SUBWORD["tiny"])
FULL = (*FULL_LADDER, SUBWORD["full"])

PROFILES: dict[str, tuple[Recipe, ...]] = {"tiny": TINY, "full": FULL}  # the trained models every claim runs on
LADDERS: dict[str, tuple[Recipe, ...]] = {"tiny": TINY_LADDER, "full": FULL_LADDER}
# The profile's stand-in for S4's model, whose seed siblings and depth variants the groups hold. Tiny: the
# narrowest rung, so that its three siblings (~140 s each on 2 cores) keep cold training of the tiny zoo
# within 30 minutes; the full profile's is S4's recipe itself.
MAIN_MODEL = {"tiny": "tiny-w96", "full": "s4-w384"}

SIBLING_SEEDS = (1442, 88, 99999)  # S4's alternate seeds (main: 1337)
LADDER_SEEDS = (1442,)  # further training seeds of the ladder's narrowest and widest rungs (S3.5's stability)
DEPTHS = {"tiny": (2, 8), "full": (3, 12)}  # n_layer of the depth variants, beside the main model's


def _main(profile: str) -> Recipe:
    return next(r for r in PROFILES[profile] if r.name == MAIN_MODEL[profile])


def _at_seed(recipe: Recipe, seed: int) -> Recipe:
    return replace(recipe, name=f"{recipe.name}-seed{seed}", seed=seed)


def _seeded_ladder(profile: str) -> tuple[Recipe, ...]:
    """The ladder at the main seed, then its narrowest and widest rungs at each of ``LADDER_SEEDS``."""
    ladder = LADDERS[profile]
    return (*ladder, *(_at_seed(r, s) for s in LADDER_SEEDS for r in (ladder[0], ladder[-1])))


# Groups of recipes a claim can take as one subject (models.zoo): kind -> profile -> members.
# Members outside PROFILES are trained on first use, not by `python -m models prepare`.
GROUP_RECIPES: dict[str, dict[str, tuple[Recipe, ...]]] = {
    # size ladder (S3.5): one recipe at growing width, then the narrowest and widest at the other seeds
    "ladder": {p: _seeded_ladder(p) for p in PROFILES},
    # seed siblings: the main recipe at S4's four seeds (S4.7's noise floor)
    "siblings": {p: (_main(p), *(_at_seed(_main(p), s) for s in SIBLING_SEEDS)) for p in PROFILES},
    # the main model and a masked mixer of its width and recipe (S3.12: token mixing by convolution)
    "mixer": {p: (_main(p), replace(_main(p), name=_main(p).name.replace("-w", "-mixer-w"), architecture="masked_mixer"))
              for p in PROFILES},
    "depths": {  # depth variants: the main recipe at other block counts (S3.4, S0 by depth)
        p: tuple(sorted((_main(p), *(replace(_main(p), name=f"{_main(p).name}-d{d}", n_layer=d) for d in DEPTHS[p])),
                        key=lambda r: r.n_layer))
        for p in PROFILES
    },
}


# What `python -m models prepare` trains for a profile: its models, the seed siblings (S4.6-S4.8 read their
# noise floor), the ladder's other seeds (S3.5) and the masked mixer (S3.12). Other groups' members (depth
# variants) train on first use.
PREPARED: dict[str, tuple[Recipe, ...]] = {
    p: tuple(dict.fromkeys((*PROFILES[p], *(r for k in ("siblings", "ladder", "mixer") for r in GROUP_RECIPES[k][p]))))
    for p in PROFILES
}


def seed_builds(profile: str) -> dict[str, str]:
    """The prepared trainings of a profile's trained models at other seeds: {sibling name: model name}, e.g.
    {"tiny-w96-seed1442": "tiny-w96", ..., "tiny-w192-seed1442": "tiny-w192"}.

    Wider than ``models.zoo.seed_siblings`` (the siblings group of the main model only, S4.7's noise floor): here
    every prepared training at another seed counts, the ladder's extra seeds too. They run every claim their model
    runs, as subjects of their own, so that the report can say on how many builds of a recipe a verdict holds
    (the variation between trainings, beside the prompt bootstrap).
    """
    return {r.name: m.name for m in PROFILES[profile] for r in PREPARED[profile]
            if r.name != m.name and replace(r, name=m.name, seed=m.seed) == m}


