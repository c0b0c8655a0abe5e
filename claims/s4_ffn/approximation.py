"""S4's similar-strings approximation, measured once per seed-sibling group (S4.6, S4.7, S4.8).

S4 (spather/transformer-experiments) takes every unique 10-character substring of its
1,115,394-character corpus (858,923 strings) and 20,000 prompts drawn from them; per block,
the strings whose FFN output at the last position has cosine > t_b with the prompt's are
"similar", and the characters that follow their occurrences, weighted over blocks on the raw
counts, approximate the model's next-character distribution (Hellinger SOURCE_APPROXIMATION_H
± SOURCE_APPROXIMATION_SD per prompt, against a seed-sibling floor of S4_FLOOR ± S4_FLOOR_SD; S4's
figures and tuned values are in S4.6-S4.8's home, ``similar_strings.toml``).

Here: the first ``TEXT_CHARS`` characters of the training split (as many as S4's file),
``N_PROMPTS`` prompts (S4's 20,000 in the full profile; 2,000 in the tiny one, a CPU run), two variants:

- ``source``: prompts drawn from the unique strings themselves, so each prompt is among its own
  similar strings (S4's procedure);
- ``held-out``: prompts from the validation split, strings from the training text.

Thresholds and weights: S4's six values, carried to other depths by linear interpolation over
relative depth (``by_depth``); and values fitted on one half of the prompts (thresholds from
``FIT_GRID`` per block by mean single-block H, then weights by mean H), evaluated on the other
half. S4 tuned its values on its own prompts, so the fitted ones are its method; its values are
a transplant from another model.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.optimize
import torch

from latent_instruments.distances import hellinger_distance
from latent_instruments.similar_strings import CHUNK, combine, following, normalised, similar_string_counts
from latent_instruments.strings import StringTable, SuffixMatcher
from fixtures.homes import numbers
from models.capture import run_with_cache
from models.string_outputs import string_directions
from models.zoo import resolve

TEXT_CHARS = 1_115_394  # S4's corpus, TinyShakespeare, is 1,115,394 characters: as many from our training split
STRING_LENGTH = 10  # S4: 10-character strings and prompts
N_PROMPTS = {"tiny": 2_000, "full": 20_000}  # per --zoo profile of the run; S4: 20,000 (tiny: a CPU run)
HOME = Path(__file__).with_name("similar_strings.toml")  # S4.6-S4.8's home, where S4's tuned values are
SOURCE_THRESHOLDS = numbers(HOME, "SOURCE_THRESHOLD_1", "SOURCE_THRESHOLD_2", "SOURCE_THRESHOLD_3",  # S4, blocks
                            "SOURCE_THRESHOLD_4", "SOURCE_THRESHOLD_5", "SOURCE_THRESHOLD_6")  # 1..6, strict ">"
SOURCE_WEIGHTS = numbers(HOME, "SOURCE_WEIGHT_1", "SOURCE_WEIGHT_2", "SOURCE_WEIGHT_3",  # S4, blocks 1..6, on raw
                         "SOURCE_WEIGHT_4", "SOURCE_WEIGHT_5", "SOURCE_WEIGHT_6")  # counts
FIT_GRID = (0.85, 0.90, 0.95)  # thresholds tried per block when fitting (S4's tuned values: 0.76..0.95; each costs a pass)
VARIANTS = ("source", "held-out")
# S4's worked prompts (q_idx 57, 40, 33, 36): 'hing tremb' goes from H SOURCE_FIRST_BLOCK_H with the first block alone
# to SOURCE_ALL_BLOCKS_H with all six; 'And only l' gets slightly worse (similar_strings.toml). Shown on our model, at
# both sets of values.
EXAMPLES = ("And only l", "hing tremb", "med me Aut", "if and thy")


def by_depth(values, n_blocks: int) -> list[float]:
    """S4's six per-block values at ``n_blocks`` blocks: linear interpolation over relative depth (0 = first block,
    1 = last). At 6 blocks, S4's values themselves."""
    return np.interp(np.linspace(0, 1, n_blocks), np.linspace(0, 1, len(values)), values).round(4).tolist()


@dataclass
class Variant:
    """One prompt set of a model, with everything S4.6-S4.8 read from it.

    Attributes:
        prompts: (P, STRING_LENGTH) token ids.
        model_probs: (P, vocab) float64, the model's next-token distribution at the last position.
        ffn: (n_blocks, P, d_model) float32, the model's FFN outputs at the last position (S4.10).
        final: (P, d_model) float32, the final norm's input at the last position (S4.10's control).
        sibling_probs: per seed sibling, (P, vocab) float64 on the same prompts.
        counts: (threshold, block) -> (P, vocab) float64 similar-string next-token counts.
        suffix_probs: suffix-match length k (1..STRING_LENGTH) -> (P, vocab) float64, the longest-match baseline
            with suffixes of at most k tokens.
        backoff_probs: order k (1..STRING_LENGTH) -> (P, vocab) float64, the interpolated back-off n-gram over
            suffixes of 1..k tokens (Witten-Bell, ``SuffixMatcher.interpolated``): S4.6's n-gram baseline since its
            version 2, at the order fitted on the fitting half (``Approximation.backoff_order``).
    """

    prompts: torch.Tensor
    model_probs: torch.Tensor
    ffn: torch.Tensor
    final: torch.Tensor
    sibling_probs: list[torch.Tensor]
    counts: dict[tuple[float, int], torch.Tensor]
    suffix_probs: dict[int, torch.Tensor]
    backoff_probs: dict[int, torch.Tensor]

    def single_block(self, block: int, threshold: float) -> torch.Tensor:
        """(P, vocab) one block's approximation: its counts at ``threshold``, normalised (S4.8, S4.10)."""
        return normalised(self.counts[(threshold, block)])

    def block_counts(self, thresholds) -> torch.Tensor:
        """(n_blocks, P, vocab) counts at one threshold per block."""
        return torch.stack([self.counts[(t, b)] for b, t in enumerate(thresholds)])

    def distance(self, probs: torch.Tensor) -> np.ndarray:
        """(P,) Hellinger distance of ``probs`` (P, vocab) to the model's distribution."""
        return hellinger_distance(probs, self.model_probs).numpy()


@dataclass
class Approximation:
    """S4's approximation on one model, both variants, source and fitted values.

    Attributes:
        model: the model's name (the siblings group's first member); siblings: the others.
        n_strings: unique strings of the text; n_blocks; n_prompts: per variant.
        source_thresholds, source_weights: S4's values at this depth (``by_depth``).
        fitted_thresholds, fitted_weights: fitted on ``fit_half`` of the source variant's prompts.
        suffix_length: the longest-match baseline's longest suffix, fitted on the same half by mean H.
        backoff_order: the interpolated back-off n-gram's order (1..STRING_LENGTH), fitted on the same half by mean H.
        fit_half, eval_half: prompt indices (each half of the prompts).
        variants: "source", "held-out" -> ``Variant``; "examples": S4's worked prompts (``example_text``).
        decode: token ids -> text.
    """

    model: str
    siblings: list[str]
    n_strings: int
    n_blocks: int
    n_prompts: int
    source_thresholds: list[float]
    source_weights: list[float]
    fitted_thresholds: list[float] = field(default_factory=list)
    fitted_weights: list[float] = field(default_factory=list)
    suffix_length: int = STRING_LENGTH
    backoff_order: int = STRING_LENGTH
    fit_half: np.ndarray = None
    eval_half: np.ndarray = None
    variants: dict[str, Variant] = field(default_factory=dict)
    decode: object = None
    example_text: list[str] = field(default_factory=list)

    def probs(self, variant: str, values: str = "fitted", blocks: slice = slice(None)) -> torch.Tensor:
        """(P, vocab) the approximation of a variant with "source" or "fitted" values, over ``blocks`` (S4.8:
        ``slice(0, 1)``, the first block alone, whose weight then cancels)."""
        thresholds = self.fitted_thresholds if values == "fitted" else self.source_thresholds
        weights = self.fitted_weights if values == "fitted" else self.source_weights
        counts = self.variants[variant].block_counts(thresholds)[blocks]
        return combine(counts, torch.tensor(weights, dtype=torch.float64, device=counts.device)[blocks])


def _prompts(table: StringTable, validation_ids: np.ndarray, n: int, seed: int) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(seed)
    source = table.strings[torch.from_numpy(rng.permutation(len(table))[:n])]  # S4: randperm of the strings
    held = StringTable.of(validation_ids, STRING_LENGTH, table.vocab).strings
    held_out = held[torch.from_numpy(rng.permutation(len(held))[:n])]
    return {"source": source, "held-out": held_out}


def _last_position(subject, prompts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """At the last position: (n_blocks, P, d_model) FFN outputs, (P, vocab) float64 next-token distribution and
    (P, d_model) final-norm input."""
    cache = run_with_cache(subject.model, subject.adapter, prompts.to(subject.input_device),
                           names=["blocks.*.hook_mlp_out", "ln_final.hook_in", "logits"], micro_batch=512)
    ffn = torch.stack([cache[f"blocks.{b}.hook_mlp_out"][:, -1].float() for b in range(cache.n_blocks)])
    final = cache["ln_final.hook_in"][:, -1].float().cpu()
    return ffn, torch.softmax(cache.logits[:, -1].double(), dim=-1).cpu(), final


def _fit(variant: Variant, n_blocks: int, half: np.ndarray) -> tuple[list[float], list[float]]:
    """Thresholds per block from FIT_GRID by mean single-block H on ``half``, then weights by mean H (Nelder-Mead on
    log weights, from equal weights), as S4 tuned its values on its own prompts."""
    model = variant.model_probs[half]
    thresholds = []
    for b in range(n_blocks):
        mean_h = [hellinger_distance(normalised(variant.counts[(t, b)][half]), model).mean().item() for t in FIT_GRID]
        thresholds.append(FIT_GRID[int(np.argmin(mean_h))])
    counts = variant.block_counts(thresholds)[:, half]

    def loss(log_w):
        return hellinger_distance(combine(counts, torch.from_numpy(np.exp(log_w)).to(counts.device)), model).mean().item()

    simplex = np.vstack([np.zeros(n_blocks), 2.0 * np.eye(n_blocks)])  # steps of e² in each weight
    found = scipy.optimize.minimize(loss, np.zeros(n_blocks), method="Nelder-Mead",
                                    options={"maxiter": 400 * n_blocks, "xatol": 1e-3, "fatol": 1e-6,
                                             "initial_simplex": simplex})
    weights = np.exp(found.x)
    return thresholds, (weights / weights.max()).round(6).tolist()


def measure(pool, group_name: str, corpus, seed: int, profile: str) -> Approximation:
    """S4's approximation on the first member of a seed-sibling group, with the siblings' distributions.

    Args:
        pool: the model pool; group_name: a siblings group (``tiny-siblings``, or a user's); corpus: the run's
        corpus; seed: the run's seed (prompt draws and the fit/eval split); profile: the run's --zoo profile
        ("tiny" or "full"), which sets ``N_PROMPTS``.
    Raises:
        ValueError: for a model whose tokenizer is not character-level enough to pack 10 tokens (see
            ``latent_instruments.strings.string_codes``).
    """
    entry = resolve(group_name)
    main = pool.get(entry.members[0])
    tokenizer = main.tokenizer
    text_ids = np.asarray(tokenizer.encode(corpus.train[:TEXT_CHARS]), dtype=np.int64)
    table = StringTable.of(text_ids, STRING_LENGTH, tokenizer.vocab_size)
    directions = string_directions(main, main.weights_sha256, table)
    n_blocks = directions.shape[0]
    n_prompts = N_PROMPTS[profile]
    out = Approximation(main.name, list(entry.members[1:]), len(table), n_blocks, n_prompts,
                        by_depth(SOURCE_THRESHOLDS, n_blocks), by_depth(SOURCE_WEIGHTS, n_blocks),
                        decode=tokenizer.decode)
    matcher = SuffixMatcher(text_ids, STRING_LENGTH, tokenizer.vocab_size)
    validation_ids = np.asarray(tokenizer.encode(corpus.validation), dtype=np.int64)
    prompts = _prompts(table, validation_ids, n_prompts, seed)
    outputs = {name: _last_position(main, ids) for name, ids in prompts.items()}
    siblings = {name: [_last_position(pool.get(s), ids)[1] for s in out.siblings] for name, ids in prompts.items()}

    device = outputs["source"][0].device
    counted = following(table.next_counts, CHUNK.get(device.type, CHUNK["cuda"]), device)  # once for every pass

    def variant(name: str, thresholds_by_block: list[list[float]]) -> Variant:
        ids, (ffn, probs, final) = prompts[name], outputs[name]
        counts = {}
        for b, grid in enumerate(thresholds_by_block):
            keys = directions[b].to(ffn.device)  # once, not per chunk
            per_t = similar_string_counts(ffn[b], keys, counted, grid)
            counts.update({(t, b): per_t[i] for i, t in enumerate(grid)})
        suffix = {k: matcher.predict(ids.numpy(), k)[0] for k in range(1, STRING_LENGTH + 1)}
        return Variant(ids, probs, ffn.cpu(), final, siblings[name], counts, suffix, matcher.interpolated(ids.numpy()))

    # the source variant at S4's values and the fitting grid; the held-out one at S4's and the fitted values
    out.variants["source"] = variant("source", [sorted({t, *FIT_GRID}) for t in out.source_thresholds])
    order = np.random.default_rng(seed + 1).permutation(n_prompts)
    out.fit_half, out.eval_half = np.sort(order[: n_prompts // 2]), np.sort(order[n_prompts // 2 :])
    out.fitted_thresholds, out.fitted_weights = _fit(out.variants["source"], n_blocks, out.fit_half)
    source = out.variants["source"]
    out.suffix_length = min(source.suffix_probs, key=lambda k: source.distance(source.suffix_probs[k])[out.fit_half].mean())
    out.backoff_order = min(source.backoff_probs,
                            key=lambda k: source.distance(source.backoff_probs[k])[out.fit_half].mean())
    out.variants["held-out"] = variant("held-out", [sorted({s, f}) for s, f in zip(out.source_thresholds,
                                                                                   out.fitted_thresholds)])
    out.example_text = list(EXAMPLES)  # plain letters and spaces: in every character vocabulary of the corpus
    prompts["examples"] = torch.tensor([tokenizer.encode(e) for e in out.example_text], dtype=torch.long)
    outputs["examples"] = _last_position(main, prompts["examples"])
    siblings["examples"] = []
    out.variants["examples"] = variant("examples", [sorted({s, f}) for s, f in zip(out.source_thresholds,
                                                                                   out.fitted_thresholds)])
    return out
