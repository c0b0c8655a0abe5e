"""Linear probes on context-pooled hidden states (source S1, claim S1.5).

S1: people "train a linear classification layer on top of the 'context-pooled' features", the hidden
states averaged over the time (sequence) dimension; if those features are useful for classification, the
class is an attractor of the state-space trajectory. A probe here is scikit-learn's multinomial logistic
regression (L2, C = 1; the Newton-CG solver, which reaches the same convex optimum as the default L-BFGS in
about a tenth of the iterations here) on standardised pooled features, scored out of fold
(``StratifiedKFold``), so that every window gets one held-out prediction: the bootstrap unit of the accuracy.
"""

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from latent_instruments.errors import require_finite

FOLDS = 5  # 5-fold cross-validation: each window is predicted by a probe trained on the other 80 %
IDLE_SECONDS = 10  # the probes' worker processes end this long after their last job (joblib's default is 300)


def time_pooled(hidden: torch.Tensor) -> torch.Tensor:
    """S1's "context-pooled" features: the hidden states averaged over positions.

    Args:
        hidden: (batch, seq, d_model).
    Returns:
        (batch, d_model), float32.
    Raises:
        NonFiniteError: for NaN or inf in ``hidden``.
    """
    require_finite(hidden, "hidden states to pool")
    return hidden.float().mean(dim=1)


def majority_rate(labels: np.ndarray) -> float:
    """The accuracy of always guessing the most frequent label (the chance level of a probe)."""
    _, counts = np.unique(np.asarray(labels), return_counts=True)
    return float(counts.max() / counts.sum())


def probe_correct(features: np.ndarray, labels: np.ndarray, seed: int, folds: int = FOLDS) -> np.ndarray:
    """Out-of-fold correctness of a logistic-regression probe.

    Args:
        features: (n, d) one feature vector per window.
        labels: (n,) class labels (any hashable values), at least ``folds`` windows per class.
        seed: seeds the fold split (and the solver, which is deterministic).
        folds: number of stratified folds.
    Returns:
        (n,) bool: whether the probe trained without window i predicts its label.
    Raises:
        ValueError: if a class has fewer than ``folds`` windows, or the features are not finite.
    """
    features, labels = np.asarray(features, dtype=np.float64), np.asarray(labels)
    if not np.isfinite(features).all():
        raise ValueError("probe features hold NaN or inf")
    probe = make_pipeline(StandardScaler(), LogisticRegression(solver="newton-cg", max_iter=1000))
    split = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    with threadpool_limits(1):  # one BLAS thread: on a shared 2-core machine more threads only contend (5× slower)
        predicted = cross_val_predict(probe, features, labels, cv=split)
    return predicted == labels


def _in_processes(jobs: list) -> list[np.ndarray]:
    """joblib's delayed :func:`probe_correct` calls, in processes, one per CPU thread torch was given (1 under
    pytest-xdist, whose workers the suite pins to one thread each); results in ``jobs``' order. Each fit is one
    BLAS thread and deterministic, so the numbers are those of one process doing them one by one. The worker
    processes end ``IDLE_SECONDS`` after their last job, not holding memory through the rest of a run."""
    return Parallel(n_jobs=min(len(jobs), torch.get_num_threads()), idle_worker_timeout=IDLE_SECONDS)(jobs)


def layer_probe(features: np.ndarray, labels: np.ndarray, seed: int, folds: int = FOLDS) -> np.ndarray:
    """:func:`probe_correct` at every layer, with the same folds (the layers side by side, in processes).

    Args:
        features: (n, n_layers, d) pooled features per window and layer.
        labels: (n,) class labels.
        seed: seeds the fold split (the same split at every layer).
    Returns:
        (n, n_layers) bool out-of-fold correctness.
    """
    return np.stack(_in_processes([delayed(probe_correct)(features[:, layer], labels, seed, folds)
                                   for layer in range(features.shape[1])]), axis=1)


def shuffled(labels: np.ndarray, seed: int) -> np.ndarray:
    """The labels permuted at random (the label-shuffle control: a probe must then be at chance)."""
    return np.random.default_rng(seed).permutation(np.asarray(labels))


def shuffled_null(features: np.ndarray, labels: np.ndarray, seed: int, shuffles: int,
                  folds: int = FOLDS) -> np.ndarray:
    """Out-of-fold correctness of the same probe with the labels shuffled, ``shuffles`` times (S1.5's null).

    With labels permuted no probe can tell a class, so its accuracy is what the probe, the folds and any overlap
    between windows give without signal: the bound a real probe must clear, rather than the majority rate.

    Args:
        features: (n, d) one feature vector per window.
        labels: (n,) class labels.
        seed: shuffling k uses ``seed + k``; the folds use ``seed``.
        shuffles: how many shufflings (more make the null's interval tighter).
    Returns:
        (n, shuffles) bool out-of-fold correctness, one column per shuffling.
    Raises:
        ValueError: as :func:`probe_correct`.
    """
    return np.stack(_in_processes([delayed(probe_correct)(features, shuffled(labels, seed + k), seed, folds)
                                   for k in range(shuffles)]), axis=1)
