"""Unique fixed-length token strings of a text, what follows them, and suffix matching (S4.6, S4.8).

S4 compares a prompt's FFN outputs with those of every unique 10-character
substring of its training text (858,923 of them) and predicts from the
characters that follow the similar ones. This module holds the string side of
that: the table of unique strings with their next-token counts, and the plain
suffix-match (n-gram) predictor that the approximation must beat.

A string of ``length`` tokens from a vocabulary of ``vocab`` is packed into
one uint64 code (base ``vocab``, first token most significant), so unique
strings are found with one sort; this needs ``vocab ** length < 2 ** 64``
(84 characters: up to 10 tokens).
"""

from dataclasses import dataclass

import numpy as np
import torch


def string_codes(windows: np.ndarray, vocab: int) -> np.ndarray:
    """Pack token strings into uint64 codes, order-preserving (lexicographic order = code order).

    Args:
        windows: (n, length) integer token ids in [0, vocab).
        vocab: vocabulary size.
    Returns:
        (n,) uint64.
    Raises:
        ValueError: if ``vocab ** length`` does not fit in 64 bits, or an id is outside [0, vocab).
    """
    n, length = windows.shape
    if vocab**length >= 2**64:
        raise ValueError(f"{length} tokens of a {vocab}-token vocabulary do not pack into 64 bits; "
                         "the similar-strings instrument is for character-level models (S4: 65 characters)")
    if n and (windows.min() < 0 or windows.max() >= vocab):
        raise ValueError(f"token ids outside [0, {vocab})")
    codes = np.zeros(n, dtype=np.uint64)
    for j in range(length):
        codes = codes * np.uint64(vocab) + windows[:, j].astype(np.uint64)
    return codes


def _windows(ids: np.ndarray, length: int) -> np.ndarray:
    return np.lib.stride_tricks.sliding_window_view(ids, length)


@dataclass(frozen=True)
class StringTable:
    """The unique length-L token strings of a text and the tokens that follow their occurrences.

    Attributes:
        strings: (n, L) int64 token ids, sorted by code (lexicographically).
        next_counts: (n, vocab) float32, how often each token follows the string in the text (a string that
            ends the text counts nothing for its last occurrence). Dense: n × vocab × 4 bytes (S4's 858,923
            strings of 65 characters: 223 MB).
        vocab: vocabulary size.
    """

    strings: torch.Tensor
    next_counts: torch.Tensor
    vocab: int

    @classmethod
    def of(cls, ids: np.ndarray, length: int, vocab: int) -> "StringTable":
        """Every unique ``length``-token string of ``ids``, with next-token counts.

        Args:
            ids: (T,) token ids of the text, T > length.
            length: L, tokens per string (S4: 10).
            vocab: vocabulary size.
        Raises:
            ValueError: if the text is not longer than ``length``; as ``string_codes``.
        """
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size <= length:
            raise ValueError(f"the text needs more than {length} tokens, got shape {ids.shape}")
        windows = _windows(ids, length)
        codes = string_codes(windows, vocab)
        unique, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        counts = np.zeros((unique.size, vocab), dtype=np.float32)
        followed = inverse[: ids.size - length]  # windows with a next token
        np.add.at(counts, (followed, ids[length:]), 1.0)
        return cls(torch.from_numpy(windows[first].copy()), torch.from_numpy(counts), vocab)

    def __len__(self) -> int:
        return self.strings.shape[0]


class SuffixMatcher:
    """The n-gram baseline of S4.6: predict from what follows the longest suffix of the prompt seen in the text.

    For each k from ``max_length`` down to 1, the next-token counts of every k-token string of the text; a
    prompt is answered by its longest suffix that occurs (followed by something) in the text. Plain string
    matching, no model: the approximation through FFN outputs must beat it to show that the FFN similarity
    adds anything.
    """

    def __init__(self, ids: np.ndarray, max_length: int, vocab: int):
        """Index ``ids`` (T,) token ids for suffixes of 1..``max_length`` tokens of a ``vocab``-token vocabulary.

        Raises:
            ValueError: as ``string_codes``, or for a text of at most ``max_length`` tokens.
        """
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size <= max_length:
            raise ValueError(f"the text needs more than {max_length} tokens, got shape {ids.shape}")
        self.vocab, self.max_length = vocab, max_length
        self.tables = {}
        for k in range(1, max_length + 1):
            codes = string_codes(_windows(ids[:-1], k), vocab)  # k-grams that have a next token
            order = np.argsort(codes, kind="stable")
            codes, nexts = codes[order], ids[k:][order]
            unique, starts = np.unique(codes, return_index=True)
            self.tables[k] = (unique, starts, nexts)

    def predict(self, prompts: np.ndarray, longest: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Next-token distributions from the longest matching suffix.

        Args:
            prompts: (P, S) token ids, S >= 1.
            longest: the longest suffix tried (default ``max_length``): a shorter one pools more occurrences.
        Returns:
            (P, vocab) float64 probabilities (uniform where not even the last token occurs), and (P,) int64 the
            suffix length used (0 for none).
        """
        prompts = np.asarray(prompts, dtype=np.int64)
        p = prompts.shape[0]
        probs = np.full((p, self.vocab), 1.0 / self.vocab)
        used = np.zeros(p, dtype=np.int64)
        todo = np.ones(p, dtype=bool)
        for k in range(min(longest or self.max_length, self.max_length, prompts.shape[1]), 0, -1):
            unique, starts, nexts = self.tables[k]
            codes = string_codes(prompts[:, -k:], self.vocab)
            at = np.searchsorted(unique, codes).clip(max=unique.size - 1)
            hit = todo & (unique[at] == codes)
            ends = np.append(starts[1:], nexts.size)
            for row in np.flatnonzero(hit):
                counts = np.bincount(nexts[starts[at[row]] : ends[at[row]]], minlength=self.vocab)
                probs[row] = counts / counts.sum()
            used[hit], todo = k, todo & ~hit
        return torch.from_numpy(probs), torch.from_numpy(used)

    def interpolated(self, prompts: np.ndarray) -> dict[int, torch.Tensor]:
        """Next-token distributions of interpolated back-off n-gram models over suffixes of 1..k tokens, for every
        order k up to ``max_length`` (Witten-Bell smoothing; S4.6's baseline).

        From the uniform distribution up, each suffix length k that occurs in the text mixes its own next-token
        counts with the estimate of the suffix one shorter: P_k = (c_k + u_k · P_(k−1)) / (n_k + u_k), with c_k the
        counts after the k-token suffix, n_k their total and u_k the number of distinct next tokens (Witten-Bell:
        the more kinds of continuation a context has been seen with, the more weight the shorter one keeps). A
        suffix that never occurs leaves the estimate as it is. Every length contributes, not only the longest
        match (:meth:`predict`). Long contexts seen once pull the estimate hard towards their one continuation, so
        the best order for a purpose is chosen, as the longest match's.

        Args:
            prompts: (P, S) token ids, S >= 1.
        Returns:
            {order k: (P, vocab) float64 probabilities of the model over suffixes of 1..k tokens}, every token
            above 0.
        """
        prompts = np.asarray(prompts, dtype=np.int64)
        probs = np.full((prompts.shape[0], self.vocab), 1.0 / self.vocab)
        out = {}
        for k in range(1, min(self.max_length, prompts.shape[1]) + 1):
            unique, starts, nexts = self.tables[k]
            codes = string_codes(prompts[:, -k:], self.vocab)
            at = np.searchsorted(unique, codes).clip(max=unique.size - 1)
            ends = np.append(starts[1:], nexts.size)
            for row in np.flatnonzero(unique[at] == codes):
                counts = np.bincount(nexts[starts[at[row]] : ends[at[row]]], minlength=self.vocab)
                kinds = np.count_nonzero(counts)
                probs[row] = (counts + kinds * probs[row]) / (counts.sum() + kinds)
            out[k] = torch.from_numpy(probs.copy())
        return out
