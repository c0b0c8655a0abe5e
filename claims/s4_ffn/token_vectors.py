"""S4.9 and S4.10's learned token vectors (S4 Appendix V): ``RESTARTS`` vectors per token, learned at the final
norm's input (or a block's) so that the readout predicts the token, the least predicted tokens continued for more
steps (S4.9's convergence control), and the cost a run announces. ``token_subspace_measures.py`` measures with them.
"""

import numpy as np
import torch

from fixtures.memory import large_blocks_reused
from latent_instruments.token_subspaces import learn_token_embeddings
from models.forwards import logits_from_block_input_fn

RESTARTS = 100  # S4: 100 embeddings per token
STEPS, LR = 300, 0.2  # Adam; S4's AdamW at 3e-4 took 14,000-50,000 steps. On tiny-w96 and tiny-bpe-w96 every token's
# mean p is where 1,000 steps at lr 0.2 and 6,000 at lr 0.05 leave it (to 1e-4): the readout's plateau
CONTINUED_TOKENS = 8  # the least predicted tokens, whose mean p decides the "≈ 1" check, are continued
ALL_TOKENS_UP_TO = 128  # a vocabulary up to this size: every token (S4: all 65)
DRAWN_TOKENS = 32  # a larger one: this many, a seeded draw (the readout's cost grows with tokens × R × vocabulary)


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
