"""S2.3's measurements: the target ranks of crossed gender analogies on the input embeddings, under cosine on
normalised rows and Euclidean on raw ones, and their statistics. test_analogy.py records what these measure;
analogy_checks.py decides; the numbers both read (the check's bound, the gates' limits) are in the topic's home,
analogy.toml.
"""

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from fixtures.catalogue_text import gate
from fixtures.homes import numbers
from latent_instruments.analogies import Analogy, analogy_ranks, crossed_analogies, word_token
from latent_instruments.stats import Estimate

# (male, female) word pairs, fixed for every model; each model keeps those whose two words are single tokens
PAIRS = (
    ("king", "queen"), ("man", "woman"), ("lord", "lady"), ("father", "mother"), ("brother", "sister"),
    ("son", "daughter"), ("husband", "wife"), ("he", "she"), ("his", "her"), ("prince", "princess"),
    ("duke", "duchess"), ("sir", "madam"), ("master", "mistress"), ("boy", "girl"), ("uncle", "aunt"),
    ("nephew", "niece"), ("gentleman", "gentlewoman"), ("men", "women"), ("lords", "ladies"), ("kings", "queens"),
    ("sons", "daughters"), ("brothers", "sisters"), ("emperor", "empress"), ("god", "goddess"),
    ("widower", "widow"), ("bridegroom", "bride"), ("male", "female"),
)
MIN_PAIRS, SAME_NORMS = numbers(__file__, "MIN_PAIRS", "SAME_NORMS")  # the not-informative gates' limits


@dataclass(frozen=True)
class AnalogyEstimates:
    """What S2.3's checks decide on, measured over analogies (bootstrap over target pairs).

    Attributes:
        lands: top-1 rate under cosine on normalised input embeddings (fraction of analogies).
        misleads: mean reciprocal rank, cosine (normalised) minus Euclidean (raw), paired.
        twin_lands: the untrained twin's top-1 rate under cosine (fraction of analogies).
    """

    lands: Estimate
    misleads: Estimate
    twin_lands: Estimate


@dataclass(frozen=True)
class AnalogyShown:
    """What S2.3's record shows beside its checks, deciding nothing (issue 79: report-only, out of the estimates).

    Attributes:
        ranks, twin_ranks: target ranks (pairs, analogies per pair, [cosine, Euclidean]) of the model and of its
            untrained twin.
        analogies, kept: the analogies (``latent_instruments.analogies.Analogy``) and the word pairs kept.
        spread: the relative spread of the embedding's row norms.
        by_pair: {"cosine", "euclidean", "twin"}: mean reciprocal rank per target pair.
    """

    ranks: np.ndarray | None = None
    twin_ranks: np.ndarray | None = None
    analogies: list = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)
    spread: float = float("nan")
    by_pair: dict[str, list[Estimate]] = field(default_factory=dict)


def _ranks(embedding: torch.Tensor, analogies: list[Analogy], n_pairs: int) -> np.ndarray:
    """Target ranks, (n_pairs, 2 (n_pairs − 1), 2): by target pair, its analogies, [cosine, Euclidean]."""
    queries = torch.tensor([a.ids for a in analogies])
    ranks = [analogy_ranks(embedding, queries, metric).numpy() for metric in ("cosine", "euclidean")]
    return np.stack(ranks, axis=-1).reshape(n_pairs, -1, 2)


def top1(ranks: np.ndarray) -> float:
    """Statistic: the fraction of analogies whose target ranks first (ranks of any shape)."""
    return float((ranks == 1).mean())


def mrr(ranks: np.ndarray) -> float:
    """Statistic: the mean reciprocal rank of the targets (ranks of any shape; 1: always nearest)."""
    return float((1.0 / ranks).mean())


def measure_analogies(subject, load_twin: Callable, claim) -> tuple[AnalogyEstimates, AnalogyShown]:
    """S2.3's measurement: for crossed gender pairs, both directions (king − man + woman → queen, queen − woman +
    man → king, ...), the target's rank among all tokens but the three query words, under each distance, on the
    model and its untrained twin: (the checks' estimates, what the record shows beside them). The bootstrap unit is
    the target pair (its 2 (n − 1) analogies share words, so they are not independent).

    Args:
        subject: the loaded model (``LoadedModel``).
        load_twin: () -> its untrained twin (``LoadedModel``), called only where the claim is informative.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where fewer than ``MIN_PAIRS`` pairs are single
            tokens, or every embedding row has nearly one norm (the two distances rank alike: an identity).
    """
    ids = {w: t for w in {w for pair in PAIRS for w in pair} if (t := word_token(subject.tokenizer, w)) is not None}
    kept = [(x, y) for x, y in PAIRS if x in ids and y in ids]
    if len(kept) < MIN_PAIRS:
        claim.not_informative(
            gate("S2.3/analogies-land-on-the-sphere/too-few-pairs", kept=len(kept), pairs=len(PAIRS),
                 kept_pairs=", ".join(f"{x}/{y}" for x, y in kept) or "none", vocab=subject.tokenizer.vocab_size),
            details={"single_token_words": dict(sorted(ids.items()))})
    embedding = subject.model.get_input_embeddings().weight.detach()  # (vocab, d_model)
    row_norms = embedding.float().norm(dim=-1)
    spread = float(row_norms.std() / row_norms.mean())
    if spread < SAME_NORMS:
        claim.not_informative(gate("S2.3/analogies-land-on-the-sphere/one-norm", spread=spread))
    analogies = crossed_analogies(kept, ids)
    n = len(kept)
    ranks = _ranks(embedding, analogies, n)  # (pairs, analogies per pair, [cosine, Euclidean])
    twin_ranks = _ranks(load_twin().model.get_input_embeddings().weight.detach(), analogies, n)
    return AnalogyEstimates(
        claim.bootstrap(ranks[..., 0], top1), claim.bootstrap(ranks, lambda u: mrr(u[..., 0]) - mrr(u[..., 1])),
        claim.bootstrap(twin_ranks[..., 0], top1),
    ), AnalogyShown(
        ranks=ranks, twin_ranks=twin_ranks, analogies=analogies, kept=kept, spread=spread,
        by_pair={name: [claim.bootstrap(r[i], mrr) for i in range(n)]
                 for name, r in (("cosine", ranks[..., 0]), ("euclidean", ranks[..., 1]), ("twin", twin_ranks[..., 0]))})
