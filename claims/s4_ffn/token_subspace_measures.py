"""S4.9 and S4.10's measurements: the vectors learned per token, their singular directions and the FFN outputs' excess
over a prompt-shuffled null. test_token_subspace.py records what these measure; token_subspace_checks.py decides.
"""

import numpy as np
import torch

from claims.s4_ffn.token_subspace_checks import SOURCE_SATISFIED, SubspaceEstimates, TokenEmbeddingEstimates
from fixtures.memory import large_blocks_reused
from latent_instruments.similar_strings import mass_tokens
from latent_instruments.stats import Estimate, per_unit, proportion, sample_mean
from latent_instruments.token_subspaces import (
    chance_in_top_half, first_directions, in_top_half, learn_token_embeddings, singular_values, subspace_scores,
)
from models.forwards import logits_from_block_input_fn


RESTARTS = 100  # S4: 100 embeddings per token


STEPS, LR = 300, 0.2  # Adam; S4's AdamW at 3e-4 took 14,000-50,000 steps. On tiny-w96 and tiny-bpe-w96 every token's


# mean p is where 1,000 steps at lr 0.2 and 6,000 at lr 0.05 leave it (to 1e-4): the readout's plateau
ONE_DIRECTION = 6.0  # S4 Appendix V: 'the first singular value is much larger (over 6x) than the next' (token 'a')


CONTINUED_TOKENS = 8  # the least predicted tokens, whose mean p decides the "≈ 1" check, are continued


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


def continued(learned, readout, device, seed: int) -> dict[str, np.ndarray]:
    """S4.9's convergence control: the ``CONTINUED_TOKENS`` least predicted tokens' vectors optimised for ``STEPS``
    more steps from where they ended. Returns per continued token (by rank): "token", mean p "before" and "after",
    and "argmax", the fraction of its vectors for which the readout's argmax is the token (after)."""
    worst = torch.as_tensor(np.argsort(learned.probability.mean(dim=1).numpy())[:CONTINUED_TOKENS])
    with large_blocks_reused():
        more = learn_token_embeddings(readout, learned.tokens[worst], learned.vectors.shape[-1], RESTARTS, STEPS, LR,
                                      seed, device, start=learned.vectors[worst])
    with torch.no_grad():
        top = readout(more.vectors.flatten(0, 1).to(device)).argmax(-1).cpu().view(len(worst), RESTARTS)
    return {"token": learned.tokens[worst].numpy(), "before": learned.probability[worst].mean(dim=1).numpy(),
            "after": more.probability.mean(dim=1).numpy(),
            "argmax": (top == learned.tokens[worst][:, None]).double().mean(dim=1).numpy()}


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


ALL_TOKENS_UP_TO = 128  # a vocabulary up to this size: every token (S4: all 65)
DRAWN_TOKENS = 32  # a larger one: this many, a seeded draw (the readout's cost grows with tokens × R × vocabulary)
SCALES = (0.1, 10.0, 100.0)  # positive scales along the direction (S4: 'any vector along its span')
MASS = 0.9  # S4.10: the tokens carrying 90 % of the approximation's mass


def tokens_learned(vocab: int, every_token: bool = False) -> int:
    """How many tokens :func:`token_embeddings` learns vectors for in a ``vocab``-token vocabulary: all of them up
    to ``ALL_TOKENS_UP_TO`` (or with ``every_token``), else ``DRAWN_TOKENS``."""
    return vocab if vocab <= ALL_TOKENS_UP_TO or every_token else DRAWN_TOKENS


def token_embeddings(subject, seed: int, every_token: bool = False, block: int | None = None, first_step=None):
    """S4.9 and S4.10's learned token vectors: ``RESTARTS`` vectors per token that make the readout predict it.

    Args:
        subject: the loaded model (``LoadedModel``).
        seed: seeds the draw of tokens and the vectors' starts.
        every_token: learn every token of the vocabulary (else all up to ``ALL_TOKENS_UP_TO``, or ``DRAWN_TOKENS``
            drawn).
        block: learn at that block's input, read through the later blocks (S4.10's block-specific subspaces); None:
            at the final norm's input.
        first_step: passed to ``learn_token_embeddings`` (seconds of the first step), or None.
    Returns:
        (the learned vectors, ``latent_instruments.token_subspaces.learn_token_embeddings``'s: ``vectors`` (tokens,
        RESTARTS, d_model), ``probability`` (tokens, RESTARTS), ``tokens`` (tokens,); the readout, (n, d_model) ->
        (n, vocab) logits).
    """
    model = subject.model
    norm, head = model.get_submodule(subject.adapter.final_norm), model.get_output_embeddings()
    vocab, d_model = head.weight.shape
    tokens = torch.arange(vocab)
    if tokens_learned(vocab, every_token) < vocab:
        tokens = torch.randperm(vocab, generator=torch.Generator().manual_seed(seed))[:DRAWN_TOKENS].sort().values
    model.requires_grad_(False)

    def final_readout(x):
        return head(norm(x.to(head.weight.dtype))).float()

    readout = final_readout if block is None else logits_from_block_input_fn(model, subject.adapter, block)

    with large_blocks_reused():  # the readout's logits and their gradient at every step: 52 MB on 4,096 tokens
        return learn_token_embeddings(readout, tokens, d_model, RESTARTS, STEPS, LR, seed, head.weight.device,
                                      first_step=first_step), readout


LONG = 60.0  # seconds: an S4.9 expected to take longer says so on the terminal when its first step is timed


def expected_duration(subject, seconds_per_step: float) -> tuple[float, str]:
    """S4.9's cost, estimated from its first step (issue 74, case 16: a 200k-token vocabulary ran for over 10
    minutes on 2 cores with nothing said): the model's and its twin's ``STEPS`` steps each, and the least predicted
    tokens' continuation; an upper bound, since a descent that reaches ``TARGET_NLL`` stops early.

    Args:
        subject: the loaded model (``LoadedModel``); seconds_per_step: wall-clock seconds of the model's first step.
    Returns:
        (seconds, the line a run prints where they exceed ``LONG``).
    """
    vocab, _ = subject.model.get_output_embeddings().weight.shape
    tokens = tokens_learned(vocab)
    seconds = seconds_per_step * STEPS * (2 + min(CONTINUED_TOKENS, tokens) / tokens)
    return seconds, (f"S4.9 on {subject.name}: {tokens * RESTARTS:,} token vectors against a {vocab:,}-token "
                     f"vocabulary take {seconds_per_step:.2g} s a step here, so this test takes up to about "
                     f"{seconds / 60:.0f} min ({STEPS} steps on the model, {STEPS} on its untrained twin, {STEPS} on "
                     f"its {min(CONTINUED_TOKENS, tokens)} least predicted tokens). Leave it "
                     "out with --deselect or -k 'not token_embeddings'")


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


def measure_token_embeddings(subject, load_twin, claim) -> TokenEmbeddingEstimates:
    """S4.9's measurement: vectors learned per token at the final norm's input, on the model and its untrained twin;
    the least mean p, the fraction of tokens whose first singular direction predicts them, and the convergence
    control (the least predicted tokens continued). "Every token" is decided token by token (the bootstrap of a
    minimum is no interval); the fraction is a census where every token was measured, else an exact binomial
    interval over the drawn tokens.

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
        learned=learned, facts=f, twin_facts=t, least_ratio=per_unit(f["ratio"].astype(np.float64), "min"),
        shuffled=per_unit(shuffled_ratios(learned.vectors, seed).astype(np.float64), "min"), more=more)


def measure_subspaces(a, subject, claim) -> SubspaceEstimates:
    """S4.10's measurement on the evaluation half of S4's prompts: the final-state control, and per block the
    excess over the prompt-shuffled null in the final-layer and block-specific subspaces (:func:`block_criterion`).

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
    return SubspaceEstimates(claim.bootstrap(control, excess_over_null), excesses, specifics, rows=rows,
                             fractions=fractions, vocab=directions.shape[0])
