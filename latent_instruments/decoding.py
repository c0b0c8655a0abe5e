"""Decoding an input representation into tokens (S3): the pseudo-inverse of the token-embedding matrix, top-k
with a restricted vocabulary (−inf masking, or S3's own 0/1 multiplication), and the exact fit a direct input can
reach (``latent_instruments.inversion`` finds the representations).
"""

from dataclasses import dataclass

import torch

from latent_instruments.errors import require_finite

_DECODE_CHUNK = 1 << 24  # decode at most this many (position x vocabulary) scores at once


@dataclass(frozen=True)
class PseudoInverse:
    """W_E⁺, the Moore-Penrose pseudo-inverse of the token-embedding matrix, kept as W_E⁺ = (W_EᵀW_E)⁺ W_Eᵀ.

    Only the (d_model, d_model) factor (W_EᵀW_E)⁺ is formed (float64): the (d_model, vocab) product is never
    materialised, which halves the work for a 50k vocabulary. The identity W⁺ = (WᵀW)⁺Wᵀ holds for any W;
    the Gram matrix squares the condition number, which float64 keeps to about 1e-8 relative for a
    condition number of 1e4.

    Attributes:
        gram_pinv: (W_EᵀW_E)⁺, shape (d_model, d_model), float64.
        weight: W_E, shape (vocab, d_model), in its own dtype.
    """

    gram_pinv: torch.Tensor
    weight: torch.Tensor

    @property
    def vocab(self) -> int:
        """Number of tokens."""
        return self.weight.shape[0]

    def scores(self, embeddings: torch.Tensor) -> torch.Tensor:
        """embeddings @ W_E⁺: (..., d_model) -> (..., vocab), in the embeddings' dtype promoted to float32."""
        dtype = torch.promote_types(embeddings.dtype, torch.float32)
        half = (embeddings.double() @ self.gram_pinv.to(embeddings.device)).to(dtype)
        return half @ self.weight.to(device=embeddings.device, dtype=dtype).T


def pseudo_inverse(embedding_matrix: torch.Tensor) -> PseudoInverse:
    """W_E⁺ of the token-embedding matrix (see :class:`PseudoInverse`).

    Args:
        embedding_matrix: W_E, shape (vocab, d_model).
    Returns:
        PseudoInverse on W_E's device.
    Raises:
        NonFiniteError: if W_E holds NaN or inf.
    """
    require_finite(embedding_matrix, "token-embedding matrix")
    w = embedding_matrix.detach()
    gram = w.double().T @ w.double()  # (d_model, d_model)
    return PseudoInverse(torch.linalg.pinv(gram, hermitian=True), w)


def decode_top_k(scores: torch.Tensor, k: int = 5, allowed: torch.Tensor | None = None,
                 pinv: PseudoInverse | None = None) -> torch.Tensor:
    """The k best tokens per position (S3's top-5 decoding), with a restricted vocabulary by −inf masking.

    Args:
        scores: (batch, seq, vocab) scores over the vocabulary (a direct input), or (batch, seq, d_model)
            embeddings when ``pinv`` is given: their scores are then embeddings @ W_E⁺, computed in chunks
            so that a 50k vocabulary does not need the whole (batch, seq, vocab) at once.
        k: how many, at most the number of allowed tokens.
        allowed: optional bool mask of the tokens that may be chosen, (batch, vocab) or (vocab,); moved to
            the scores' device if it is elsewhere.
        pinv: W_E⁺ from :func:`pseudo_inverse`, for embeddings.
    Returns:
        token ids, (batch, seq, k), int64, best first, on the scores' device.
    Raises:
        NonFiniteError: if the scores hold NaN or inf.
    """
    require_finite(scores, "inputs to decode")
    batch, seq = scores.shape[:2]
    mask = None if allowed is None else allowed.to(scores.device)
    if mask is not None and mask.dim() == 1:
        mask = mask.unsqueeze(0).expand(batch, -1)
    vocab = pinv.vocab if pinv is not None else scores.shape[-1]
    rows = max(1, _DECODE_CHUNK // (seq * vocab))
    out = []
    for start in range(0, batch, rows):
        chunk = scores[start:start + rows]
        s = pinv.scores(chunk) if pinv is not None else chunk
        if mask is not None:
            s = s.masked_fill(~mask[start:start + rows].unsqueeze(1), float("-inf"))
        out.append(s.topk(k, dim=-1).indices)
    return torch.cat(out)


def direct_fit_decode(token_ids: torch.Tensor, start: torch.Tensor, pinv: PseudoInverse, target: float) -> torch.Tensor:
    """Tokens an exact fit of the direct representation decodes from a given start (S3.7's identifiability).

    Plain gradient descent on a direct input a (a vector over the vocabulary per position, read as a·W_E) moves
    a only within the column space of W_E: the gradient is g·W_Eᵀ. So the descent can end no nearer the
    target t = target × one-hot than a₀ + P(t − a₀), P = W_E W_E⁺ the projection onto that space, which is the
    point reached where the input embeddings are fitted exactly. Its argmax bounds what any plain descent
    decodes from a₀: the token gains target × P_ii (d_model/vocab on average) over the start's ½, which a
    target of 1 cannot lift above the start's residue once the vocabulary is several times d_model. S3's 10
    lifts it at Llama-7B's vocabulary/width of 7.8 (a random W_E: every token at 8, about half at 16, a quarter
    at 32; tests/test_s3_checks.py).

    Args:
        token_ids: the real input, (batch, seq), int64.
        start: the descent's a₀, (batch, seq, vocab), e.g. ``invert(..., steps=0).inputs``.
        pinv: W_E⁺ of the same W_E, (vocab, d_model).
        target: the direct target's value at the token's index (``InversionConfig.direct_target``; S3: 10).
    Returns:
        token ids, (batch, seq), int64, on the start's device.
    Raises:
        ValueError: if the start's last dimension is not the vocabulary.
        NonFiniteError: if the start holds NaN or inf.
    """
    if start.shape[-1] != pinv.vocab:
        raise ValueError(f"start must be (batch, seq, vocab = {pinv.vocab}), got shape {tuple(start.shape)}")
    require_finite(start, "direct start")
    weight = pinv.weight.to(device=start.device, dtype=torch.promote_types(start.dtype, torch.float32))
    reached = start + pinv.scores(target * weight[token_ids] - start @ weight)  # a₀ + (t − a₀)·P, (batch, seq, vocab)
    return reached.argmax(dim=-1)


def zero_masked_decode(scores: torch.Tensor, allowed: torch.Tensor, pinv: PseudoInverse | None = None) -> torch.Tensor:
    """S3's own restricted decoding (its ``masked_decode``): the scores times a 0/1 mask of the allowed tokens, then
    argmax (S3.6). Unlike −inf masking (:func:`decode_top_k`), a disallowed token scores 0, so it wins wherever
    every allowed score is negative: restricting can then lower accuracy.

    Args:
        scores: (batch, seq, vocab) scores, or (batch, seq, d_model) embeddings when ``pinv`` is given (their
            scores are embeddings @ W_E⁺).
        allowed: bool mask, (batch, vocab) or (vocab,).
        pinv: W_E⁺ from :func:`pseudo_inverse`, for embeddings.
    Returns:
        token ids, (batch, seq), int64: the first index of the largest masked score (torch's argmax), which is a
        disallowed token where a 0 wins.
    Raises:
        NonFiniteError: if the scores hold NaN or inf.
    """
    require_finite(scores, "inputs to decode")
    s = pinv.scores(scores) if pinv is not None else scores
    mask = allowed.to(device=s.device, dtype=s.dtype)
    mask = mask.unsqueeze(0) if mask.dim() == 1 else mask
    return (s * mask.unsqueeze(1)).argmax(dim=-1)


def pseudo_inverse_decode(
    embeddings: torch.Tensor, embedding_matrix: torch.Tensor, allowed: torch.Tensor | None = None
) -> torch.Tensor:
    """Tokens whose pseudo-inverse coordinate is largest (S3.1's decoding): argmax of embeddings @ W_E⁺.

    Args:
        embeddings: shape (batch, seq, d_model).
        embedding_matrix: W_E, shape (vocab, d_model).
        allowed: optional bool mask, (batch, vocab) or (vocab,), applied by −inf (see :func:`decode_top_k`).
    Returns:
        token ids, shape (batch, seq), int64, on the embeddings' device.
    Raises:
        NonFiniteError: if embeddings or W_E hold NaN or inf.
    """
    return decode_top_k(embeddings, 1, allowed, pinv=pseudo_inverse(embedding_matrix))[..., 0]
