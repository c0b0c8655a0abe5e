"""S1.5's measurements: labelled windows of every play, their time-pooled features at every depth, and the
cross-validated probes on them. test_probe.py records what these measure; probe_checks.py decides; the number its
control adds to chance is in the topic's home, probe.toml.
"""

from dataclasses import dataclass, field

import numpy as np
import torch

from claims.s1_attention.heads import per_layer
from fixtures.catalogue_text import gate
from latent_instruments.probes import layer_probe, majority_rate, shuffled_null, time_pooled
from latent_instruments.stats import Estimate, sample_mean
from models.capture import run_with_cache
from models.corpus import NoPlaysError, corpus_works

WINDOWS_PER_PLAY = 12  # 37 plays × 12 = 444 windows; each fold trains on about 10 per play
WINDOW_TOKENS = 128  # the tiny zoo's context; S1 gives no length (iGPT pools whole 32×32 images)
SKIP_FRACTION = 0.05  # each play opens with its title and cast list, which name it outright: windows start after
CHARS_PER_WINDOW = 8  # characters of text tokenized per window token (BPE tokens average about 4 characters)
MICRO_BATCH = 64  # windows per forward pass
SHUFFLES = 16  # label shufflings of the null: its interval (over windows, each the mean over shufflings) is then
# a quarter as wide as the probe's own or less; 32 narrow it by a further ~0.001 and double its cost


@dataclass(frozen=True)
class ProbeEstimates:
    """What S1.5's checks decide on, measured over windows (the bootstrap unit), as fractions of windows.

    Attributes:
        best: cross-validated accuracy of the best block's time-pooled features.
        null: the same probe at that block with the play labels shuffled, mean over the shufflings.
        chance: the majority rate of the plays.
        n: windows.
        shuffles: shufflings averaged in ``null``.
    """

    best: Estimate
    null: Estimate
    chance: float
    n: int
    shuffles: int


@dataclass(frozen=True)
class ProbeShown:
    """What S1.5's record shows beside its checks, deciding nothing (issue 79: report-only, out of the estimates).

    Attributes:
        correct, genre_correct: (windows, n_layers) out-of-fold correctness of the play probe and of the First
            Folio genre probe (windows with a genre).
        genre: the genre of each window that has one.
        labels: the layers' labels ("embed", "block 1" .. "block L"); best_layer: the best block's index.
        control: (windows, shuffles) correctness of the shuffled-label probes at the best block.
        accuracy: per layer, the play probe's accuracy.
        best_minus_last: the best block's accuracy minus the last block's, paired.
        length: tokens per window.
    """

    correct: np.ndarray | None = None
    genre_correct: np.ndarray | None = None
    genre: np.ndarray | None = None
    labels: list[str] = field(default_factory=list)
    best_layer: int = 0
    control: np.ndarray | None = None
    accuracy: list[Estimate] = field(default_factory=list)
    best_minus_last: Estimate | None = None
    length: int = 0


def play_windows(corpus, tokenizer, length: int, per_play: int, seed: int) -> tuple[torch.Tensor, list[str], list]:
    """Labelled windows of every play: ``per_play`` non-overlapping windows of ``length`` tokens each.

    Each play's text after its first ``SKIP_FRACTION`` is cut into ``per_play`` equal segments, and one window
    starts at a seeded random offset inside each, so the windows spread over the whole play and never overlap.

    Args:
        corpus: the Shakespeare corpus (``models.corpus.corpus_works`` finds the plays).
        tokenizer: the model's (``encode(text) -> list[int]``).
        length: tokens per window.
        per_play: windows per play.
        seed: seeds the offsets.
    Returns:
        ids (n, length) int64, the play name of each window, and its First Folio genre (None for Pericles).
    Raises:
        NoPlaysError: if the corpus has no plays (``--corpus``).
        CorpusError: if the play boundaries cannot be read.
        ValueError: if a segment is too short for a window.
    """
    rng = np.random.default_rng(seed)
    ids, plays, genres = [], [], []
    for work in (w for w in corpus_works(corpus) if w.is_play):
        begin = work.start + int((work.end - work.start) * SKIP_FRACTION)
        edges = np.linspace(begin, work.end, per_play + 1).astype(int)
        for low, high in zip(edges[:-1], edges[1:]):
            span = min(CHARS_PER_WINDOW * length, high - low)
            start = int(rng.integers(low, high - span + 1))
            tokens = tokenizer.encode(corpus.text[start : start + span])[:length]
            if len(tokens) < length:
                raise ValueError(f"{work.name}: {span} characters give {len(tokens)} tokens, fewer than {length}")
            ids.append(tokens)
            plays.append(work.name)
            genres.append(work.genre)
    return torch.tensor(ids), plays, genres


def pooled_features(subject, ids: torch.Tensor) -> tuple[np.ndarray, list[str]]:
    """Time-pooled hidden states at every depth: token embeddings and each block's output.

    Args:
        subject: a ``LoadedModel``.
        ids: (n, length) windows.
    Returns:
        (n, n_layers, d_model) float32 features and the layer labels ("embed", "block 1" .. "block L").
    """
    parts = []
    for start in range(0, ids.shape[0], MICRO_BATCH):
        batch = ids[start : start + MICRO_BATCH].to(subject.input_device)
        cache = run_with_cache(subject.model, subject.adapter, batch, names=["hook_embed", "blocks.*.hook_resid_post"])
        layers = [cache["hook_embed"]] + [cache[f"blocks.{i}.hook_resid_post"] for i in range(cache.n_blocks)]
        parts.append(torch.stack([time_pooled(h).cpu() for h in layers], dim=1))
    labels = ["embed"] + [f"block {i}" for i in range(1, parts[0].shape[1])]
    return torch.cat(parts).numpy(), labels


def _best_block(units: np.ndarray) -> float:
    """Accuracy of the best block (layers 1.., the embedding layer left out), from (n, n_layers) correctness."""
    return float(units[:, 1:].mean(axis=0).max())


def measure_probe(subject, corpus, claim) -> tuple[ProbeEstimates, ProbeShown]:
    """S1.5's measurement: a logistic-regression probe on time-pooled hidden states tells a window's play, layer by
    layer (out of fold); its best block against the same probe with the labels shuffled (the null); the First
    Folio genre probed beside it: (the checks' estimates, what the record shows beside them).

    Args:
        subject: the loaded model (``LoadedModel``).
        corpus: the Shakespeare corpus the windows are cut from.
        claim: the claim's recorder (``fixtures.recording.ClaimRecorder``): its ``bootstrap`` and ``seed``.
    Raises:
        pytest.skip.Exception: through ``claim.not_informative`` where the corpus has no plays.
        CorpusError, ValueError: as :func:`play_windows`.
    """
    seed, length = claim.seed, min(WINDOW_TOKENS, subject.context)
    try:
        ids, plays, genres = play_windows(corpus, subject.tokenizer, length, WINDOWS_PER_PLAY, seed)
    except NoPlaysError as why:
        claim.not_informative(gate("S1.5/pooled-features-are-linearly-separable-by-play/no-plays", why=why))
    features, labels = pooled_features(subject, ids)
    plays = np.array(plays)
    correct = layer_probe(features, plays, seed)  # (n, n_layers) out-of-fold
    best = int(correct[:, 1:].mean(axis=0).argmax()) + 1
    control = shuffled_null(features[:, best], plays, seed, SHUFFLES)  # (n, SHUFFLES), the best block
    with_genre = np.array([g is not None for g in genres])
    genre = np.array([g for g in genres if g is not None])
    return ProbeEstimates(
        claim.bootstrap(correct, _best_block), claim.bootstrap(control, sample_mean), majority_rate(plays),
        len(plays), SHUFFLES,
    ), ProbeShown(
        correct=correct, genre_correct=layer_probe(features[with_genre], genre, seed),
        genre=genre, labels=labels, best_layer=best, control=control,
        accuracy=per_layer(correct, sample_mean, seed),
        best_minus_last=claim.bootstrap(correct, lambda u: float(u[:, 1:].mean(axis=0).max() - u[:, -1].mean())),
        length=length)
