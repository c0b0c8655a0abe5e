"""Word analogies on static embeddings (S2.3): king − man + woman against queen, by cosine or by distance.

The words become single tokens of the model's own tokenizer (:func:`word_token`), the analogies are crossed
pairs of pairs (:func:`crossed_analogies`), and each query's answer is ranked among every token
(:func:`analogy_ranks`).
"""

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from latent_instruments.errors import require_finite
from latent_instruments.geometry import unit

METRICS = ("cosine", "euclidean")  # how analogy_ranks compares the query with the candidates


def word_token(tokenizer, word: str, context: str = "the") -> int | None:
    """The single token id a word has in running text, or None where it takes several tokens.

    The word is encoded after a context word and a space (as in a sentence), so a
    byte-level BPE gives its leading-space token ("Ġking", as ``encode(" king")``) and a
    SentencePiece tokenizer its "▁king"; a character-level tokenizer gives several.

    Args:
        tokenizer: anything with ``encode(text) -> list[int]``.
        word: e.g. "king".
        context: the word it follows; its own tokens must be a prefix of the whole.
    Returns:
        the token id, or None.
    """
    try:
        whole, prefix = tokenizer.encode(f"{context} {word}"), tokenizer.encode(context)
    except ValueError:  # a character outside a char-level alphabet
        return None
    if len(whole) == len(prefix) + 1 and list(whole[: len(prefix)]) == list(prefix):
        return int(whole[-1])
    return None


@dataclass(frozen=True)
class Analogy:
    """a − b + c ≈ d, e.g. king − man + woman ≈ queen (S2.3).

    Attributes:
        words: (a, b, c, d).
        ids: their token ids, (a, b, c, d).
        target_pair: index of the (a, d) pair in the pair list it was crossed from.
    """

    words: tuple[str, str, str, str]
    ids: tuple[int, int, int, int]
    target_pair: int

    def __str__(self) -> str:
        a, b, c, d = self.words
        return f"{a} − {b} + {c} → {d}"


def crossed_analogies(pairs: Sequence[tuple[str, str]], ids: dict[str, int]) -> list[Analogy]:
    """Every analogy of two pairs, both directions: x1 − x2 + y2 → y1 and y1 − y2 + x2 → x1.

    For pairs (king, queen) and (man, woman): king − man + woman → queen and
    queen − woman + man → king. A pair whose words are not both in ``ids`` is left out.

    Args:
        pairs: (x, y) word pairs, e.g. (male, female).
        ids: word -> token id (only single-token words).
    Returns:
        the analogies, grouped by target pair in the order of ``pairs`` (2 (n − 1) per pair, n kept pairs).
    Raises:
        ValueError: if two kept pairs share a word (an analogy's query would hold its target).
    """
    kept = [(x, y) for x, y in pairs if x in ids and y in ids]
    words = [w for pair in kept for w in pair]
    if len(set(words)) != len(words) or len({ids[w] for w in words}) != len(words):
        raise ValueError(f"the kept pairs {kept} share a word or a token")
    out = []
    for i, (x1, y1) in enumerate(kept):
        for j, (x2, y2) in enumerate(kept):
            if i != j:
                for a, b, c, d in ((x1, x2, y2, y1), (y1, y2, x2, x1)):
                    out.append(Analogy((a, b, c, d), (ids[a], ids[b], ids[c], ids[d]), i))
    return out


def analogy_ranks(embedding: torch.Tensor, queries: torch.Tensor, metric: str, chunk: int = 64) -> torch.Tensor:
    """Rank of each analogy's target among the vocabulary, the query words excluded (S2.3).

    "cosine": the query is â − b̂ + ĉ of unit-normalised embeddings (x̂ = x / |x|), candidates
    ranked by cosine similarity to it (the sphere of S2's Fig 1). "euclidean": the query is
    a − b + c of the raw embeddings, candidates ranked by Euclidean distance to it. Rank 1 is
    the nearest candidate; a candidate that ties the target counts as nearer (a degenerate
    embedding cannot pass).

    Args:
        embedding: (vocab, d_model) static (input) token embeddings.
        queries: (n, 4) token ids (a, b, c, d), integer.
        metric: one of ``METRICS``.
        chunk: queries scored at once ((chunk, vocab) scores in memory).
    Returns:
        (n,) int64 ranks on the CPU, 1 .. vocab − 3.
    Raises:
        ValueError: for an unknown metric, a query of the wrong shape, an id outside the
            vocabulary, or a query whose target is one of its own words.
        NonFiniteError: if the embedding holds NaN or inf.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if queries.ndim != 2 or queries.shape[1] != 4:
        raise ValueError(f"queries must be (n, 4) ids (a, b, c, d), got shape {tuple(queries.shape)}")
    vocab = embedding.shape[0]
    if queries.numel() and (queries.min() < 0 or queries.max() >= vocab):
        raise ValueError(f"query ids must index the {vocab}-token embedding")
    if (queries[:, 3:] == queries[:, :3]).any():
        raise ValueError("an analogy's target is one of its query words")
    require_finite(embedding, "token embedding")
    e = embedding.detach().float()
    e = unit(e) if metric == "cosine" else e
    queries = queries.to(e.device)
    sq_norms = e.square().sum(dim=-1)  # (vocab,)
    ranks = []
    for start in range(0, queries.shape[0], chunk):
        ids = queries[start: start + chunk]
        q = e[ids[:, 0]] - e[ids[:, 1]] + e[ids[:, 2]]  # (k, d_model)
        # higher is nearer: cosine to q (q's own norm does not change the order), or minus the squared distance
        # without the |q|² shared by all candidates
        score = q @ e.T if metric == "cosine" else 2 * q @ e.T - sq_norms
        target = score.gather(1, ids[:, 3:])  # (k, 1)
        nearer = score >= target
        nearer.scatter_(1, ids, False)  # the three query words are no candidates; the target does not count itself
        ranks.append(1 + nearer.sum(dim=1).cpu())
    return torch.cat(ranks) if ranks else torch.zeros(0, dtype=torch.int64)
