"""S3.1's measurement: the round trip of a prompt's token embeddings through W_E⁺, per prompt, with S3's coordinate
ratio, its shifted input and a row-shuffled W_E (the control). test_round_trip.py records what this measures;
round_trip_checks.py decides; the numbers both read are in the topic's home, round_trip.toml.
"""

from dataclasses import dataclass

import numpy as np
import torch

from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.decoding import PseudoInverse, decode_top_k
from latent_instruments.stats import Estimate, per_unit

SHIFT_STD = 0.05  # S3's shifted input a′ = a + 0.05·noise, said to tokenize as a (reported)
SOURCE_RATIO = numbers(__file__, "SOURCE_RATIO")  # S3's true coordinate over the largest other (round_trip.toml)


@dataclass(frozen=True)
class RoundTripEstimates:
    """What S3.1's checks decide on, decided prompt by prompt (per-unit extremes of token accuracy).

    Attributes:
        recovered: the least token accuracy of argmax(W_E[ids]·W_E⁺) over the prompts.
        permuted: the largest token accuracy with W_E's rows shuffled (a control).
        prompts: prompts; tokens: tokens per prompt (the derivation names both).
    """

    recovered: Estimate
    permuted: Estimate
    prompts: int
    tokens: int


@dataclass(frozen=True)
class RoundTripShown:
    """What S3.1's record shows beside its checks, deciding nothing (issue 79, item 3: report-only, out of the
    estimates).

    Attributes:
        rank: rank(W_E).
        ratio: per token, the true coordinate over the largest other, (prompts · tokens,) (S3: about SOURCE_RATIO).
        shifted: the token accuracy of a′ = a + SHIFT_STD·noise, (prompts, tokens) 0/1.
        top: (prompts, tokens, 5) the round trip's top-5 token ids.
    """

    rank: int
    ratio: np.ndarray
    shifted: torch.Tensor
    top: torch.Tensor


def measure_round_trip(problem, claim) -> tuple[RoundTripEstimates, RoundTripShown]:
    """S3.1's measurement: argmax(W_E[ids]·W_E⁺) against ids, per prompt, and the same decoded with W_E's rows
    shuffled (the control); the round trip is a deterministic map, so each is asserted of every prompt (a bootstrap
    of all-equal accuracies would be a zero-width interval, which decides nothing): (the checks' estimates, what the
    record shows beside them).

    Args:
        problem: the model's inversion problem (``inversions.Problem``): ``weight`` W_E (vocab, d_model), ``ids``
            (prompts, T) and ``pinv`` its pseudo-inverse.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``seed``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where vocab ≤ d_model and W_E has full row rank
            (W_E·W_E⁺ = I: the round trip is an identity).
    """
    weight, ids = problem.weight, problem.ids  # (vocab, d_model), (prompts, T)
    vocab, d_model = weight.shape
    rank = int(torch.linalg.matrix_rank(weight.double().T @ weight.double(), hermitian=True))  # rank(WᵀW) = rank(W)
    if vocab <= d_model and rank == vocab:
        claim.not_informative(gate("S3.1/the-pseudo-inverse-recovers-the-tokens/identity", vocab=vocab,
                                   d_model=d_model), details={"vocab": vocab, "d_model": d_model,
                                                                            "rank": rank})

    # measure: the round trip per prompt, the source's coordinate ratio, the shifted input, a shuffled W_E
    embeddings = weight[ids].float()  # (prompts, T, d_model)
    scores = problem.pinv.scores(embeddings)  # (prompts, T, vocab)
    top = scores.topk(2, dim=-1)
    accuracy = (top.indices[..., 0] == ids).double().mean(1).cpu().numpy()
    true = scores.gather(-1, ids.unsqueeze(-1))[..., 0]
    other = torch.where(top.indices[..., 0] == ids, top.values[..., 1], top.values[..., 0])
    ratio = (true / other.abs().clamp_min(1e-30)).flatten().cpu().numpy()  # true coordinate / largest other
    noise = torch.randn(embeddings.shape, generator=torch.Generator().manual_seed(claim.seed)).to(embeddings)
    shifted = (decode_top_k(embeddings + SHIFT_STD * noise, 1, pinv=problem.pinv)[..., 0] == ids).double()
    order = torch.randperm(vocab, generator=torch.Generator().manual_seed(claim.seed)).to(weight.device)
    shuffled = PseudoInverse(problem.pinv.gram_pinv, weight[order])  # WᵀW does not change when rows are permuted
    permuted = (decode_top_k(embeddings, 1, pinv=shuffled)[..., 0] == ids).double().mean(1).cpu().numpy()
    return (RoundTripEstimates(per_unit(accuracy, "min"), per_unit(permuted, "max"), len(accuracy), ids.shape[1]),
            RoundTripShown(rank, ratio, shifted, scores.topk(min(5, vocab), dim=-1).indices))
