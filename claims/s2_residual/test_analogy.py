"""S2: word analogies on static (input) embeddings.

S2.3 — on normalised static embeddings, king − man + woman lands next to queen
(cosine), where raw distances mislead.
"""

import numpy as np
import pytest

from claims.s2_residual.analogy_checks import analogy_checks
from claims.s2_residual.analogy_measures import PAIRS, AnalogyShown, measure_analogies, mrr, top1
from fixtures.catalogue_text import procedure
from models.zoo import resolve
from reports.plots import series

CANONICAL = ("king", "man", "woman", "queen")  # S2's example


def _analogy_details(e: AnalogyShown) -> dict:
    """S2.3's details: top-1, top-10, MRR and median rank under each distance, for the model and its untrained twin;
    S2's king − man + woman; the rows' norm spread; which pairs are single tokens; every analogy's ranks."""
    analogies, kept = e.analogies, e.kept
    flat, twin_flat = e.ranks.reshape(-1, 2), e.twin_ranks.reshape(-1, 2)
    canonical = next((i for i, a in enumerate(analogies) if a.words == CANONICAL), None)
    return {
        "aggregate": {
            label: {"top-1 rate": top1(r[:, k]), "top-10 rate": float((r[:, k] <= 10).mean()),
                    "MRR": mrr(r[:, k]), "median rank": float(np.median(r[:, k]))}
            for label, r, k in (("cosine (normalised)", flat, 0), ("Euclidean (raw)", flat, 1),
                                ("untrained twin, cosine", twin_flat, 0), ("untrained twin, Euclidean", twin_flat, 1))
        },
        **({} if canonical is None else {"king − man + woman → queen": {
            "cosine rank": int(flat[canonical, 0]), "Euclidean rank": int(flat[canonical, 1]),
            "untrained twin cosine rank": int(twin_flat[canonical, 0])}}),
        "embedding_row_norm_relative_spread": e.spread,
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
    e, shown = measure_analogies(subject, lambda: pool.get(resolve(model_name).twin), claim)
    claim.record(
        analogy_checks(e),
        procedure=procedure("S2.3/analogies-land-on-the-sphere", analogies=len(shown.analogies), n=len(shown.kept),
                            pairs=len(PAIRS), vocabulary_size=subject.model.get_input_embeddings().weight.shape[0]),
        details=_analogy_details(shown),
        plot={
            "kind": "bars",
            "title": f"S2.3 on {model_name}: mean reciprocal rank of the target, by target pair",
            "categories": [f"{x}/{y}" for x, y in shown.kept], "xlabel": "target pair (a/d)", "ylabel": "mean reciprocal rank (1: always nearest)",
            "series": {"cosine, normalised": series(shown.by_pair["cosine"]),
                       "Euclidean, raw": series(shown.by_pair["euclidean"]),
                       "untrained twin, cosine": series(shown.by_pair["twin"])},
        },
    )
