"""S4.9 and S4.10's measurements: the vectors learned per token, their singular directions and the FFN outputs' excess
over a prompt-shuffled null. test_token_subspaces.py measures with these; token_subspace_checks.py decides.
"""

import numpy as np
import torch

from claims.s4_ffn.token_subspace_checks import SOURCE_SATISFIED
from fixtures.memory import large_blocks_reused
from latent_instruments.stats import Estimate, proportion
from latent_instruments.token_subspaces import learn_token_embeddings, singular_values


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
