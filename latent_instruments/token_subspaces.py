"""Token subspaces: embeddings learned to predict one token, their principal direction, and rankings (S4.9, S4.10).

S4 (Appendix V; spather/transformer-experiments, learn-embeddings) learns, for every token, 100
vectors at the final LayerNorm's input that make the model predict that token, by gradient
descent on the NLL from N(0, 1) starts; their uncentred SVD has one dominant singular value, and
the first right-singular vector, its sign set so that most of the vectors point its way, alone
predicts the token. S4.10 ranks these per-token directions by |cos| with a block's FFN output.

Here all tokens and restarts are one batch of vectors, optimised together.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from math import comb

import numpy as np
import torch

from latent_instruments.errors import require_finite

TARGET_NLL = 1e-4  # S4: stop once the mean NLL is below 1e-4 (p(token) ≳ 0.9999)


@dataclass(frozen=True)
class LearnedEmbeddings:
    """Vectors learned to predict given tokens.

    Attributes:
        tokens: (T,) int64 the target token of each row.
        vectors: (T, R, d_model) float32 the learned vectors, R per token.
        probability: (T, R) float64 the target's probability under the readout at the end.
        steps: optimiser steps taken.
    """

    tokens: torch.Tensor
    vectors: torch.Tensor
    probability: torch.Tensor
    steps: int


def starting_vectors(n_tokens: int, restarts: int, d_model: int, seed: int) -> torch.Tensor:
    """The N(0, 1) starts of :func:`learn_token_embeddings` (S4's), as it draws them: (n_tokens, restarts, d_model)
    float32 on the CPU. Unoptimised, they are S4.9's null: vectors that carry no token."""
    return torch.randn(n_tokens * restarts, d_model, generator=torch.Generator().manual_seed(seed)).view(
        n_tokens, restarts, d_model)


def learn_token_embeddings(readout: Callable[[torch.Tensor], torch.Tensor], tokens: torch.Tensor, d_model: int,
                           restarts: int, max_steps: int, lr: float, seed: int,
                           device: torch.device | str = "cpu", start: torch.Tensor | None = None,
                           first_step: Callable[[float], None] | None = None) -> LearnedEmbeddings:
    """Learn ``restarts`` vectors per token that the readout maps to that token, all in one batch.

    Each vector starts at N(0, 1) per element (S4) and follows Adam on the mean NLL of its own token over the
    batch (S4: AdamW lr 3e-4, one token at a time, up to 50,000 steps; Adam with a larger ``lr`` reaches S4's
    stopping point in far fewer steps). Stops when the batch's mean NLL is below ``TARGET_NLL`` or after
    ``max_steps``.

    Args:
        readout: maps (N, d_model) vectors to (N, vocab) logits (S4: ``lm_head(ln_f(x))``); its parameters are
            not changed.
        tokens: (T,) token ids to learn vectors for.
        d_model: the vectors' size; restarts: R, vectors per token (S4: 100).
        max_steps, lr: optimiser budget and learning rate; seed: of the starts.
        device: where the vectors live (the readout's device).
        start: (T, R, d_model) vectors to continue from instead of N(0, 1) starts (S4.9's convergence control:
            a converged optimisation gains nothing from more steps).
        first_step: called once with the seconds (wall clock) the first step took, forward, backward and update,
            from which a caller estimates the whole (S4.9 on a 200k-token vocabulary: issue 74, case 16).
    Returns:
        ``LearnedEmbeddings`` with vectors and probabilities on the CPU.
    Raises:
        ValueError: for a ``start`` of another shape.
        NonFiniteError: if the loss becomes NaN or inf.
    """
    n = tokens.numel()
    if start is None:
        start = starting_vectors(n, restarts, d_model, seed)
    elif start.shape != (n, restarts, d_model):
        raise ValueError(f"start must be (tokens, restarts, d_model) = {(n, restarts, d_model)}, got {tuple(start.shape)}")
    vectors = start.reshape(n * restarts, d_model).clone().float().to(device).requires_grad_(True)
    targets = tokens.repeat_interleave(restarts).to(device)
    optimiser = torch.optim.Adam([vectors], lr=lr)
    steps, started = 0, time.perf_counter()
    for steps in range(1, max_steps + 1):
        loss = torch.nn.functional.cross_entropy(readout(vectors).float(), targets)
        require_finite(loss.detach(), "NLL of the learned token embeddings")
        if loss.item() < TARGET_NLL:
            break
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        if steps == 1 and first_step is not None:
            if vectors.is_cuda:  # the step's kernels are queued, not done, until the device is synchronised
                torch.cuda.synchronize(vectors.device)
            first_step(time.perf_counter() - started)
    with torch.no_grad():
        probs = torch.softmax(readout(vectors).double(), dim=-1).gather(1, targets[:, None]).squeeze(1)
    return LearnedEmbeddings(tokens.cpu(), vectors.detach().float().cpu().view(n, restarts, d_model),
                             probs.cpu().view(n, restarts), steps)


def singular_values(vectors: torch.Tensor, centred: bool = False) -> torch.Tensor:
    """Singular values of each token's (R, d_model) matrix of vectors, descending.

    Args:
        vectors: (T, R, d_model).
        centred: subtract each token's mean vector first (S4's SVD is uncentred, which lets the common mean
            direction inflate σ1).
    Returns:
        (T, min(R, d_model)) float64.
    """
    x = vectors.double()
    if centred:
        x = x - x.mean(dim=1, keepdim=True)
    return torch.linalg.svdvals(x)


def first_directions(vectors: torch.Tensor) -> torch.Tensor:
    """Each token's first right-singular vector (uncentred, as S4), its sign set so that most vectors have cos ≥ 0.

    Args:
        vectors: (T, R, d_model).
    Returns:
        (T, d_model) float32 unit vectors.
    """
    _, _, vh = torch.linalg.svd(vectors.double(), full_matrices=False)
    v = vh[:, 0]  # (T, d_model)
    agree = (torch.einsum("trd,td->tr", vectors.double(), v) >= 0).double().mean(dim=1)
    return (v * torch.where(agree >= 0.5, 1.0, -1.0)[:, None]).float()


def subspace_scores(outputs: torch.Tensor, directions: torch.Tensor, signed: bool = False) -> torch.Tensor:
    """How close each output lies to each token's rank-1 subspace: |cos| (S4's code: cos(P_t f, f)), or cos.

    Args:
        outputs: (P, d_model) e.g. a block's FFN outputs at the last position.
        directions: (T, d_model) unit directions (``first_directions``).
        signed: the signed cosine (S4's prose, "oriented towards") instead of S4's code's unsigned one.
    Returns:
        (P, T) float64.
    """
    f = outputs.double()
    cos = (f / f.norm(dim=-1, keepdim=True).clamp_min(1e-12)) @ directions.double().T
    return cos if signed else cos.abs()


def in_top_half(scores: torch.Tensor, token_sets: list[torch.Tensor]) -> np.ndarray:
    """S4.10's criterion: whether every token of a prompt's set ranks in the top half of subspaces by score.

    Args:
        scores: (P, T) subspace scores, T = the vocabulary (row t = token t).
        token_sets: per prompt, the token ids to place (``similar_strings.mass_tokens``).
    Returns:
        (P,) bool; the top half is the best ``T // 2`` (S4: 32 of 65).
    """
    top = scores.argsort(dim=-1, descending=True)[:, : scores.shape[1] // 2]
    return np.array([bool(torch.isin(s, top[i]).all()) for i, s in enumerate(token_sets)])


def chance_in_top_half(vocab: int, set_sizes: np.ndarray) -> np.ndarray:
    """Per prompt, the chance that n random tokens all rank in the top half: C(V//2, n) / C(V, n).

    S4 simulated it (a KDE of scores, 1,000 draws); with ranks a uniform permutation, this is its exact value.

    Args:
        vocab: V; set_sizes: (P,) n per prompt.
    Returns:
        (P,) float64.
    """
    half = vocab // 2
    return np.array([comb(half, int(n)) / comb(vocab, int(n)) for n in set_sizes], dtype=np.float64)
