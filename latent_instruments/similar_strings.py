"""S4's similar-strings approximation of a model's next-token distribution (S4.6, S4.8, S4.10).

For a prompt and each block b, the strings of a text whose FFN output (last position) has cosine
similarity above a threshold t_b with the prompt's are "similar"; the tokens that follow their
occurrences in the text, summed, are block b's counts. S4 combines the blocks with weights w_b on
the raw counts and normalises once (spather/transformer-experiments, widening_similar_space):

    approximation = Σ_b w_b · counts_b / Σ_tokens Σ_b w_b · counts_b

The cosine matrix prompts × strings is never held whole: it is streamed in chunks of strings on
the device, filtered by the threshold, and the hits reach the counts through a second product.
"""

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from latent_instruments.errors import require_finite

# Strings per streamed chunk: chunk × prompts cosines at once. On a CPU a chunk that stays in cache (2,000
# prompts: 16 MB) runs 1.5-2× faster than a large one; a GPU wants large ones (20,000 prompts: 5 GB).
CHUNK = {"cpu": 2048, "cuda": 1 << 16}


@dataclass(frozen=True)
class Following:
    """A table's next-token counts as the counting reads them: transposed and sparse, chunk by chunk, on the compute
    device. Made once per table and device (:func:`following`) and read by every block's and threshold's pass.

    Attributes:
        chunks: one (vocab, chunk) CSR float32 matrix per chunk of strings (the last may be shorter).
        chunk: strings per chunk; n_strings: strings in all.
    """

    chunks: tuple[torch.Tensor, ...]
    chunk: int
    n_strings: int


def following(next_counts: torch.Tensor, chunk: int, device: torch.device) -> Following:
    """:class:`Following` of ``next_counts`` (n_strings, vocab) in chunks of ``chunk`` strings on ``device``."""
    with warnings.catch_warnings():  # "Sparse CSR tensor support is in beta state": CSR @ dense is all we use
        warnings.simplefilter("ignore", UserWarning)
        chunks = tuple(next_counts[start : start + chunk].to(device, torch.float32).T.contiguous().to_sparse_csr()
                       for start in range(0, next_counts.shape[0], chunk))
    return Following(chunks, chunk, next_counts.shape[0])


def similar_string_counts(queries: torch.Tensor, keys: torch.Tensor, next_counts: "torch.Tensor | Following",
                          thresholds: Sequence[float], chunk: int | None = None) -> torch.Tensor:
    """Counts of the tokens that follow the strings whose directions are cosine-similar to each query (one block).

    Streams the strings in chunks: one matmul gives the chunk's cosines; per threshold, cos > t (both float32) is the
    0/1 matrix of hits (S4's strict ``>``: a cosine equal to t gives 0), written into one buffer reused by every
    threshold and chunk, and the chunk's next-token counts, sparse (a string is followed by one or two tokens), times
    it add to the counts. Only a chunk's cosines and hits are ever held.

    Args:
        queries: (batch, d_model) the prompts' FFN outputs (any norm; normalised here), on the compute device.
        keys: (n_strings, d_model) unit directions of the strings' FFN outputs (any float dtype, any device;
            moved chunk by chunk).
        next_counts: (n_strings, vocab) next-token counts of the strings (``StringTable.next_counts``), or
            :func:`following` of them, made once for the passes of several blocks (S4.6 runs one per block).
        thresholds: cosine thresholds in (-1, 1), each giving its own counts (one pass serves several).
        chunk: strings per streamed chunk (default ``CHUNK`` of the queries' device type; a ``Following``'s own).
    Returns:
        (n_thresholds, batch, vocab) float64 counts on the CPU.
    Raises:
        ValueError: for mismatched shapes or a threshold outside (-1, 1).
        NonFiniteError: if a query is NaN or inf.
    """
    if queries.dim() != 2 or keys.dim() != 2 or queries.shape[1] != keys.shape[1]:
        raise ValueError(f"queries (batch, d) and keys (n, d) must share d, got {tuple(queries.shape)}, {tuple(keys.shape)}")
    n_counted = next_counts.n_strings if isinstance(next_counts, Following) else next_counts.shape[0]
    if n_counted != keys.shape[0]:
        raise ValueError(f"{keys.shape[0]} string directions but {n_counted} rows of next-token counts")
    if not thresholds or any(not -1 < t < 1 for t in thresholds):
        raise ValueError(f"thresholds must lie in (-1, 1), got {list(thresholds)}")
    require_finite(queries, "prompt FFN outputs")
    device = queries.device
    if not isinstance(next_counts, Following):
        next_counts = following(next_counts, chunk or CHUNK.get(device.type, CHUNK["cuda"]), device)
    chunk = next_counts.chunk
    q = queries.float()
    q = (q / q.norm(dim=-1, keepdim=True).clamp_min(1e-12)).T.contiguous()  # (d_model, batch)
    vocab = next_counts.chunks[0].shape[0]
    counts = torch.zeros(len(thresholds), vocab, q.shape[1], dtype=torch.float32, device=device)
    cuts = [torch.tensor(t, dtype=torch.float32, device=device) for t in thresholds]  # compared in float32, as cos
    buffer = torch.empty(min(chunk, keys.shape[0]), q.shape[1], dtype=torch.float32, device=device)
    for start, counted in zip(range(0, keys.shape[0], chunk), next_counts.chunks):
        k = keys[start : start + chunk].to(device, torch.float32, non_blocking=True)
        sims = k @ q  # (chunk, batch): the stage's one dense matmul
        hits = buffer[: sims.shape[0]]
        for i, cut in enumerate(cuts):
            torch.gt(sims, cut, out=hits)  # 1.0 where cos > t, else 0.0: one pass, no new tensor
            counts[i] += counted @ hits  # (vocab, batch); exact: counts are integers far below 2**24
    return counts.transpose(1, 2).double().cpu()


def combine(block_counts: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """S4's weighted approximation: Σ_b w_b · counts_b, normalised over tokens.

    Args:
        block_counts: (n_blocks, batch, vocab) counts, one threshold per block.
        weights: (n_blocks,) non-negative weights (S4: 0.01, 0.01, 0.1, 1.5, 6, 0.01).
    Returns:
        (batch, vocab) float64 probabilities; a prompt with no counts in any weighted block gets a uniform row
        (S4 never meets one: each prompt is among its own similar strings).
    Raises:
        ValueError: for a negative weight or mismatched shapes.
    """
    if weights.shape != block_counts.shape[:1] or (weights < 0).any():
        raise ValueError(f"need {block_counts.shape[0]} non-negative weights, got {weights.tolist()}")
    total = (block_counts * weights.double().view(-1, 1, 1)).sum(dim=0)
    mass = total.sum(dim=-1, keepdim=True)
    uniform = torch.full_like(total, 1.0 / total.shape[-1])
    return torch.where(mass > 0, total / mass.clamp_min(1e-300), uniform)


def normalised(counts: torch.Tensor) -> torch.Tensor:
    """(…, vocab) counts as probabilities; an all-zero row becomes uniform (one block's approximation, S4.8)."""
    return combine(counts.unsqueeze(0), torch.ones(1, dtype=counts.dtype, device=counts.device))


def mass_tokens(probs: torch.Tensor, mass: float = 0.9) -> list[torch.Tensor]:
    """The fewest most-probable tokens whose probability exceeds ``mass``, per row (S4.10's tokens to place).

    Args:
        probs: (batch, vocab) probabilities.
        mass: the cumulative probability to exceed (S4: 0.90, strict).
    Returns:
        per row, a 1-D int64 tensor of token ids, most probable first.
    """
    values, order = probs.sort(dim=-1, descending=True)
    needed = (values.cumsum(dim=-1) <= mass).sum(dim=-1) + 1  # S4: n = V − #(cumsum > mass) + 1
    needed = needed.clamp(max=probs.shape[-1])
    return [order[i, : int(n)] for i, n in enumerate(needed)]
