"""S2: word analogies on static (input) embeddings.

S2.3 — on normalised static embeddings, king − man + woman lands next to queen
(cosine), where raw distances mislead.
"""

import numpy as np
import pytest
import torch

from claims.s2_residual.analogy_checks import AnalogyEstimates, analogy_checks
from fixtures.catalogue_text import procedure
from latent_instruments.analogies import Analogy, analogy_ranks, crossed_analogies, word_token
from models.zoo import resolve
from reports.plots import series


# (male, female) word pairs, fixed for every model; each model keeps those whose two words are single tokens
PAIRS = (
    ("king", "queen"), ("man", "woman"), ("lord", "lady"), ("father", "mother"), ("brother", "sister"),
    ("son", "daughter"), ("husband", "wife"), ("he", "she"), ("his", "her"), ("prince", "princess"),
    ("duke", "duchess"), ("sir", "madam"), ("master", "mistress"), ("boy", "girl"), ("uncle", "aunt"),
    ("nephew", "niece"), ("gentleman", "gentlewoman"), ("men", "women"), ("lords", "ladies"), ("kings", "queens"),
    ("sons", "daughters"), ("brothers", "sisters"), ("emperor", "empress"), ("god", "goddess"),
    ("widower", "widow"), ("bridegroom", "bride"), ("male", "female"),
)
CANONICAL = ("king", "man", "woman", "queen")  # S2's example
MIN_PAIRS = 3  # 3 pairs: 12 analogies over 3 target pairs, the bootstrap's units
SAME_NORMS = 1e-3  # relative spread of row norms below which cosine and Euclidean rankings coincide


def _ranks(embedding: torch.Tensor, analogies: list[Analogy], n_pairs: int) -> np.ndarray:
    """Target ranks, (n_pairs, 2 (n_pairs − 1), 2): by target pair, its analogies, [cosine, Euclidean]."""
    queries = torch.tensor([a.ids for a in analogies])
    ranks = [analogy_ranks(embedding, queries, metric).numpy() for metric in ("cosine", "euclidean")]
    return np.stack(ranks, axis=-1).reshape(n_pairs, -1, 2)


def _top1(ranks: np.ndarray) -> float:
    return float((ranks == 1).mean())


def _mrr(ranks: np.ndarray) -> float:
    return float((1.0 / ranks).mean())


def _analogy_details(ranks: np.ndarray, twin_ranks: np.ndarray, analogies: list, kept: list, spread: float) -> dict:
    """S2.3's details: top-1, top-10, MRR and median rank under each distance, for the model and its untrained twin;
    S2's king − man + woman; the rows' norm spread; which pairs are single tokens; every analogy's ranks. ranks
    (pairs, analogies per pair, [cosine, Euclidean])."""
    flat, twin_flat = ranks.reshape(-1, 2), twin_ranks.reshape(-1, 2)
    canonical = next((i for i, a in enumerate(analogies) if a.words == CANONICAL), None)
    return {
        "aggregate": {
            label: {"top-1 rate": _top1(r[:, k]), "top-10 rate": float((r[:, k] <= 10).mean()),
                    "MRR": _mrr(r[:, k]), "median rank": float(np.median(r[:, k]))}
            for label, r, k in (("cosine (normalised)", flat, 0), ("Euclidean (raw)", flat, 1),
                                ("untrained twin, cosine", twin_flat, 0), ("untrained twin, Euclidean", twin_flat, 1))
        },
        **({} if canonical is None else {"king − man + woman → queen": {
            "cosine rank": int(flat[canonical, 0]), "Euclidean rank": int(flat[canonical, 1]),
            "untrained twin cosine rank": int(twin_flat[canonical, 0])}}),
        "embedding_row_norm_relative_spread": spread,
        "pairs": {f"{x}/{y}": {"single tokens": (x, y) in kept} for x, y in PAIRS},
        "by_analogy": {str(a): {"cosine rank": int(flat[i, 0]), "Euclidean rank": int(flat[i, 1]),
                                "twin cosine rank": int(twin_flat[i, 0])} for i, a in enumerate(analogies)},
    }


@pytest.mark.claim("S2.3", version=1)
@pytest.mark.models("trained", "hf", twin=True)
def test_analogies_land_on_the_sphere(model_name, subject, pool, claim):
    """S2.3: a − b + c of unit-normalised input embeddings has d as its nearest token (cosine); raw Euclidean does worse.

    For crossed gender pairs, both directions (king − man + woman → queen, queen − woman +
    man → king, ...), the target's rank among all tokens but the three query words. The
    bootstrap unit is the target pair (its 2 (n − 1) analogies share words, so they are not
    independent).
    """
    ids = {w: t for w in {w for pair in PAIRS for w in pair} if (t := word_token(subject.tokenizer, w)) is not None}
    kept = [(x, y) for x, y in PAIRS if x in ids and y in ids]
    if len(kept) < MIN_PAIRS:
        claim.not_informative(
            f"only {len(kept)} of the {len(PAIRS)} word pairs ({', '.join(f'{x}/{y}' for x, y in kept) or 'none'}) "
            f"have both words as single tokens in this tokenizer ({subject.tokenizer.vocab_size} tokens; a "
            f"character-level one has no word tokens); S2.3 needs at least {MIN_PAIRS}",
            details={"single_token_words": dict(sorted(ids.items()))})
    embedding = subject.model.get_input_embeddings().weight.detach()  # (vocab, d_model)
    row_norms = embedding.float().norm(dim=-1)
    spread = float(row_norms.std() / row_norms.mean())
    if spread < SAME_NORMS:
        claim.not_informative(f"every embedding row has nearly one norm (relative spread {spread:.2g}): cosine on "
                              "normalised and Euclidean on raw embeddings rank alike, so 'raw distances mislead' is "
                              "an identity here")
    twin = pool.get(resolve(model_name).twin)
    analogies = crossed_analogies(kept, ids)
    n = len(kept)
    ranks = _ranks(embedding, analogies, n)  # (pairs, analogies per pair, [cosine, Euclidean])
    twin_ranks = _ranks(twin.model.get_input_embeddings().weight.detach(), analogies, n)

    lands = claim.bootstrap(ranks[..., 0], _top1)
    misleads = claim.bootstrap(ranks, lambda u: _mrr(u[..., 0]) - _mrr(u[..., 1]))
    twin_lands = claim.bootstrap(twin_ranks[..., 0], _top1)
    by_pair = {name: [claim.bootstrap(r[i], _mrr) for i in range(n)]
               for name, r in (("cosine", ranks[..., 0]), ("euclidean", ranks[..., 1]), ("twin", twin_ranks[..., 0]))}
    labels = [f"{x}/{y}" for x, y in kept]
    claim.record(
        analogy_checks(AnalogyEstimates(lands, misleads, twin_lands)),
        procedure=procedure("S2.3/analogies-land-on-the-sphere", analogies=len(analogies), n=n, pairs=len(PAIRS),
                            vocabulary_size=embedding.shape[0]),
        details=_analogy_details(ranks, twin_ranks, analogies, kept, spread),
        plot={
            "kind": "bars",
            "title": f"S2.3 on {model_name}: mean reciprocal rank of the target, by target pair",
            "categories": labels, "xlabel": "target pair (a/d)", "ylabel": "mean reciprocal rank (1: always nearest)",
            "series": {"cosine, normalised": series(by_pair["cosine"]), "Euclidean, raw": series(by_pair["euclidean"]),
                       "untrained twin, cosine": series(by_pair["twin"])},
        },
    )
