"""S4.9 and S4.10's measurements: the vectors learned per token, their singular directions and the FFN outputs' excess
over a prompt-shuffled null. test_token_subspace.py records what these measure; token_subspace_checks.py decides;
S4's figures are in the topic's home, token_subspace.toml.
"""

from dataclasses import dataclass

import numpy as np
import torch

from claims.s4_ffn.token_vectors import LONG, STEPS, continued, expected_duration, token_embeddings
from fixtures.homes import numbers
from latent_instruments.similar_strings import mass_tokens
from latent_instruments.stats import Estimate, per_unit, proportion, sample_mean
from latent_instruments.token_subspaces import (
    chance_in_top_half, first_directions, in_top_half, singular_values, subspace_scores,
)

ONE_DIRECTION = numbers(__file__, "ONE_DIRECTION")  # S4 Appendix V: σ1/σ2 'over 6x' for the token 'a' (a reading)
# S4 Appendix V's Aggregate Performance (%), blocks 1-6: prompts satisfied (final-layer subspaces), S4's chance, and
# {block: (prompts satisfied with block-specific subspaces, chance)}
SOURCE_SATISFIED = numbers(__file__, *(f"SOURCE_SATISFIED_{b}" for b in range(1, 7)))
SOURCE_CHANCE = numbers(__file__, *(f"SOURCE_CHANCE_{b}" for b in range(1, 7)))
SOURCE_SPECIFIC = {b: numbers(__file__, f"SOURCE_SPECIFIC_{b}", f"SOURCE_CHANCE_{b}") for b in (6, 5, 4)}


@dataclass(frozen=True)
class TokenEmbeddingEstimates:
    """What S4.9's checks decide on, measured on the vectors learned for each token at the final norm's input.

    Attributes:
        p: the least mean p(token) of a token's learned vectors (per token).
        predicts: fraction of tokens whose first singular direction alone predicts them (a census, or exact).
        gain: the largest gain in mean p of the least predicted tokens from more steps (per token; a control).
        continued: how many tokens were continued; steps: the more steps.
    """

    p: Estimate
    predicts: Estimate
    gain: Estimate
    continued: int
    steps: int


@dataclass(frozen=True)
class TokenEmbeddingShown:
    """What S4.9's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        learned: the learned vectors (``latent_instruments.token_subspaces.learn_token_embeddings``).
        facts, twin_facts: per token, the model's and its untrained twin's :func:`subspace_facts`.
        least_ratio, shuffled: the least σ1/σ2 over tokens (per token), and over shuffled-token groups.
        more: the least predicted tokens after more steps (:func:`continued`).
    """

    learned: object
    facts: dict
    twin_facts: dict
    least_ratio: Estimate
    shuffled: Estimate
    more: dict


@dataclass(frozen=True)
class SubspaceEstimates:
    """What S4.10's checks decide on, measured over the evaluation half of the prompts: excesses over the
    prompt-shuffled null, (rate − null) / (1 − null), of the fraction of prompts whose 90 %-mass tokens all rank in
    the top half of the subspaces by |cos|.

    Attributes:
        final_state: at the final state, with the model's own 90 %-mass tokens (a control).
        excess: per block, the FFN output against the final-layer subspaces.
        specific: per block but the last, against the block-specific subspaces.
    """

    final_state: Estimate
    excess: list[Estimate]
    specific: list[Estimate]


@dataclass(frozen=True)
class SubspaceShown:
    """What S4.10's record shows beside its checks, deciding nothing: ``rows``, per block the criterion's details
    row (:func:`block_criterion`); ``fractions``, per block the fraction of prompts satisfied (|cos|, final-layer
    subspaces); ``vocab``, the vocabulary's size."""

    rows: dict[str, dict]
    fractions: list[Estimate]
    vocab: int


def fraction_of_tokens(predicts: np.ndarray, vocab: int) -> Estimate:
    """The fraction of measured tokens that succeed: a census (deterministic given the restarts) where every token
    of the vocabulary was measured, else the exact binomial interval over the drawn tokens.

    Args:
        predicts: (tokens,) 0/1 per measured token.
        vocab: the vocabulary's size.
    """
    units = np.asarray(predicts, dtype=np.float64)
    if len(units) < vocab:
        return proportion(units)
    value = float(units.mean())
    return Estimate(value, value, value, 1.0, len(units),
                    method=f"deterministic: a census of all {vocab} tokens of the vocabulary")


def shuffled_ratios(vectors: torch.Tensor, seed: int) -> np.ndarray:
    """S4.9's null: σ1/σ2 (uncentred) of groups of learned vectors whose tokens were shuffled.

    Args:
        vectors: (T, R, d_model) learned vectors, R per token.
        seed: seeds the shuffle.
    Returns:
        (T,) the ratio of each group of R vectors drawn, without replacement, from all tokens' vectors: optimised
        vectors, but not for one token.
    """
    n_tokens, restarts, d_model = vectors.shape
    order = torch.randperm(n_tokens * restarts, generator=torch.Generator().manual_seed(seed))
    s = singular_values(vectors.reshape(-1, d_model)[order].reshape(n_tokens, restarts, d_model))
    return (s[:, 0] / s[:, 1]).numpy()


def prompt_shuffled(token_sets: list[torch.Tensor]) -> list[torch.Tensor]:
    """S4.10's null pairing: each prompt's token set moved to the next prompt (the last to the first), so a block's
    FFN output is ranked against another prompt's predicted tokens. Raises ValueError for fewer than 2 prompts."""
    if len(token_sets) < 2:
        raise ValueError("the prompt-shuffled null needs at least 2 prompts")
    return token_sets[-1:] + token_sets[:-1]


def excess_over_null(units: np.ndarray) -> float:
    """(rate − null) / (1 − null) from units (P, 2) of [satisfied, satisfied under the null] per prompt; 0 where the
    null is already 1 (nothing to exceed)."""
    rate, null = units[:, 0].mean(), units[:, 1].mean()
    return float((rate - null) / (1 - null)) if null < 1 else 0.0


def beside_s4(satisfied: list[float], last_chance: float) -> dict[str, float]:
    """S4.10's numbers to set beside S4's Aggregate Performance, where the model has S4's six blocks (else none):
    per block the fraction of prompts satisfied (blocks 1-5 against the final-layer subspaces, block 6 its own), and
    block 6's chance.

    Args:
        satisfied: (n_blocks,) fraction of prompts satisfied per block, first block first.
        last_chance: the last block's chance fraction.
    """
    if len(satisfied) != len(SOURCE_SATISFIED):
        return {}
    last = len(satisfied)
    return {(f"block {b}: final-layer subspaces" if b < last else
             f"block {b}: prompts whose FFN output points to the predicted tokens' subspaces"): value
            for b, value in enumerate(satisfied, 1)} | {f"block {last}: chance": last_chance}


SCALES = (0.1, 10.0, 100.0)  # positive scales along the direction (S4: 'any vector along its span')
MASS = 0.9  # S4.10: the tokens carrying 90 % of the approximation's mass


def subspace_facts(learned, readout, device) -> dict[str, np.ndarray]:
    """S4.9's facts of each token's subspace, from :func:`token_embeddings`' ``learned`` vectors and ``readout``.

    Returns:
        {"p": mean learned p(token), "ratio" and "centred": σ1/σ2 uncentred and centred, "predicts": whether the
        first right singular vector v1 alone predicts the token (argmax), "p_v1": p(token | v1), "drift": the largest
        change of the distribution over positive scales of v1 (probability)}, each (tokens,); the readout runs on
        ``device``.
    """
    s, c = singular_values(learned.vectors), singular_values(learned.vectors, centred=True)
    v = first_directions(learned.vectors)
    with torch.no_grad():
        p = torch.softmax(readout(v.to(device)).double(), dim=-1).cpu()
        drift = torch.stack([(torch.softmax(readout((a * v).to(device)).double(), -1).cpu() - p).abs().amax(dim=-1)
                             for a in SCALES]).amax(dim=0)
    rows = torch.arange(len(learned.tokens))
    return {"p": learned.probability.mean(dim=1).numpy(), "ratio": (s[:, 0] / s[:, 1]).numpy(),
            "centred": (c[:, 0] / c[:, 1]).numpy(), "predicts": (p.argmax(-1) == learned.tokens).numpy(),
            "p_v1": p[rows, learned.tokens].numpy(), "drift": drift.numpy()}


def block_criterion(b: int, a, subject, directions, model_tokens: list, claim) -> tuple:
    """S4.10's criterion for block ``b`` (0-based) on the evaluation half of S4's prompts.

    Args:
        a: the similar-strings approximation (``approximation.Approximation``); subject: its model (``LoadedModel``).
        directions: (vocab, d_model) each token's first singular direction at the final norm's input.
        model_tokens: per prompt, the model's own 90 %-mass tokens; claim: the recorder (its ``bootstrap``, and its
            ``seed`` for the block-specific vectors).
    Returns:
        (the block's details row, the excess over the prompt-shuffled null (|cos|, final-layer subspaces), the excess
        in the block's own subspaces (None for the last block, whose own are the final-layer ones), whether each
        prompt's 90 %-mass tokens all rank in the top half, (prompts,) float64 0/1).
    """
    v, half, vocab = a.variants["source"], a.eval_half, directions.shape[0]
    tokens = mass_tokens(v.single_block(b, a.fitted_thresholds[b])[half], MASS)
    sizes = np.array([len(x) for x in tokens])
    chance = chance_in_top_half(vocab, sizes)
    shuffled = prompt_shuffled(tokens)
    satisfied, null = {}, {}
    for signed in (False, True):
        scores = subspace_scores(v.ffn[b][half], directions, signed)
        satisfied[signed], null[signed] = in_top_half(scores, tokens), in_top_half(scores, shuffled)
    excess = claim.bootstrap(np.stack([satisfied[False], null[False]], axis=1).astype(np.float64), excess_over_null)
    row = {"satisfied (|cos|)": float(satisfied[False].mean()), "null (|cos|)": float(null[False].mean()),
           "excess (|cos|)": excess.value, "satisfied (signed cos)": float(satisfied[True].mean()),
           "null (signed cos)": float(null[True].mean()),
           "excess (signed cos)": excess_over_null(np.stack([satisfied[True], null[True]], 1).astype(np.float64)),
           "ratio to analytic chance (version 1)": float(satisfied[False].mean() / chance.mean()),
           "excess over analytic chance (S4's own statistic, |cos|)":
               float((satisfied[False].mean() - chance.mean()) / (1 - chance.mean())),
           "satisfied, model's own tokens (|cos|)": float(
               in_top_half(subspace_scores(v.ffn[b][half], directions), model_tokens).mean())}
    own = None
    if b < a.n_blocks - 1:  # the last block's own subspaces are the final-layer ones
        specific = first_directions(token_embeddings(subject, claim.seed, every_token=True, block=b + 1)[0].vectors)
        specific_scores = subspace_scores(v.ffn[b][half], specific)
        hit = in_top_half(specific_scores, tokens)
        own = claim.bootstrap(np.stack([hit, in_top_half(specific_scores, shuffled)], axis=1).astype(np.float64),
                              excess_over_null)
        row["satisfied, block-specific (|cos|)"] = float(hit.mean())
    row |= {"chance": float(chance.mean()), "mean tokens for 90 %": float(sizes.mean()),
            "threshold": a.fitted_thresholds[b]}
    return row, excess, own, satisfied[False].astype(np.float64)


def measure_token_embeddings(subject, load_twin, claim) -> tuple[TokenEmbeddingEstimates, TokenEmbeddingShown]:
    """S4.9's measurement: vectors learned per token at the final norm's input, on the model and its untrained twin;
    the least mean p, the fraction of tokens whose first singular direction predicts them, and the convergence
    control (the least predicted tokens continued): (the checks' estimates, what the record shows beside them).
    "Every token" is decided token by token (the bootstrap of a minimum is no interval); the fraction is a census
    where every token was measured, else an exact binomial interval over the drawn tokens.

    Args:
        subject: the loaded model (``LoadedModel``).
        load_twin: () -> its untrained twin (``LoadedModel``), called once the model's own vectors are learned.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``seed``.
    Raises:
        ValueError: as ``latent_instruments.stats.proportion`` (no tokens).
    """
    seed = claim.seed

    def first_step(seconds: float) -> None:
        total, line = expected_duration(subject, seconds)
        if total > LONG:
            claim.announce(line)

    learned, readout = token_embeddings(subject, seed, first_step=first_step)
    f = subspace_facts(learned, readout, subject.input_device)
    twin = load_twin()
    t = subspace_facts(*token_embeddings(twin, seed), twin.input_device)
    more = continued(learned, readout, subject.input_device, seed)
    return TokenEmbeddingEstimates(
        per_unit(f["p"].astype(np.float64), "min"),
        fraction_of_tokens(f["predicts"], vocab=subject.model.get_input_embeddings().weight.shape[0]),
        per_unit(more["after"] - more["before"], "max"), len(more["token"]), STEPS,
    ), TokenEmbeddingShown(
        learned=learned, facts=f, twin_facts=t, least_ratio=per_unit(f["ratio"].astype(np.float64), "min"),
        shuffled=per_unit(shuffled_ratios(learned.vectors, seed).astype(np.float64), "min"), more=more)


def measure_subspaces(a, subject, claim) -> tuple[SubspaceEstimates, SubspaceShown]:
    """S4.10's measurement on the evaluation half of S4's prompts: the final-state control, and per block the
    excess over the prompt-shuffled null in the final-layer and block-specific subspaces (:func:`block_criterion`):
    (the checks' estimates, what the record shows beside them).

    Args:
        a: the similar-strings approximation of the model's sibling group (``approximation.Approximation``).
        subject: the loaded model it is of (``LoadedModel``).
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap`` and ``seed``.
    Raises:
        ValueError: as ``ClaimRecorder.bootstrap``, and :func:`prompt_shuffled` for fewer than 2 prompts.
    """
    learned, _ = token_embeddings(subject, claim.seed, every_token=True)
    directions = first_directions(learned.vectors)  # row t: token t
    v, half = a.variants["source"], a.eval_half
    model_tokens = mass_tokens(v.model_probs[half], MASS)  # the model's own 90 %-mass tokens
    final_scores = subspace_scores(v.final[half], directions)
    control = np.stack([in_top_half(final_scores, model_tokens), in_top_half(final_scores, prompt_shuffled(model_tokens))],
                       axis=1).astype(np.float64)
    rows, excesses, specifics, fractions = {}, [], [], []
    for b in range(a.n_blocks):
        row, excess, specific, satisfied = block_criterion(b, a, subject, directions, model_tokens, claim)
        excesses.append(excess)
        specifics.extend([] if specific is None else [specific])
        fractions.append(claim.bootstrap(satisfied, sample_mean))
        rows[f"block {b + 1}"] = row
    return (SubspaceEstimates(claim.bootstrap(control, excess_over_null), excesses, specifics),
            SubspaceShown(rows=rows, fractions=fractions, vocab=directions.shape[0]))
