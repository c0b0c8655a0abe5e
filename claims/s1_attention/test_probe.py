"""S1.5: context-pooled (time-averaged) features are linearly separable by class; middle layers can be more
useful than the last.

S1: people "train a linear classification layer on top of the 'context-pooled' features. This last term just
means they average the feature vectors over the time dimension and plug it into a linear layer", and
"empirically, it seems like these middle layers sometimes contain more 'useful' features for other
prediction tasks". The classes here are the corpus's own: the 37 plays of the Shakespeare corpus (a window's
play, as an image's class is CIFAR's label); the First Folio's comedy / history / tragedy grouping is probed
beside them as a detail. S1 is an argument, not an experiment: it gives no accuracy to reach, so the
threshold is the claim's own bound: better than the same probe with the labels shuffled (the null), by the
high end of the null's interval. Version 2 compared with the majority rate, 1/37 = 0.027, which the shuffled
probes themselves exceed (0.028-0.032 on the tiny zoo): with enough windows a probe with no signal passed.
"""

import pytest

from claims.s1_attention.probe_checks import probe_checks
from claims.s1_attention.probe_measures import SHUFFLES, SKIP_FRACTION, WINDOWS_PER_PLAY, measure_probe
from fixtures.catalogue_text import procedure
from latent_instruments.probes import majority_rate
from reports.plots import series


@pytest.mark.claim("S1.5", version=3)  # 3: the threshold is the shuffled-label null, not the majority rate
@pytest.mark.models("trained", "hf")
def test_pooled_features_are_linearly_separable_by_play(model_name, subject, corpus, claim):
    """S1.5: a logistic-regression probe on time-pooled hidden states tells a window's play, layer by layer."""
    e, shown = measure_probe(subject, corpus, claim)
    correct, genre_correct, labels, null, control = (shown.correct, shown.genre_correct, shown.labels, e.null,
                                                     shown.control)
    best, last, accuracy, best_minus_last = shown.best_layer, correct.shape[1] - 1, shown.accuracy, shown.best_minus_last
    claim.record(
        probe_checks(e),
        procedure=procedure("S1.5/pooled-features-are-linearly-separable-by-play", n=e.n, length=shown.length,
                            WINDOWS_PER_PLAY=WINDOWS_PER_PLAY, SKIP_FRACTION=SKIP_FRACTION),
        details={
            "accuracy by depth": {
                label: {"plays": float(correct[:, i].mean()), "genre (First Folio)": float(genre_correct[:, i].mean())}
                for i, label in enumerate(labels)},
            "best block": {"block": labels[best], "is the last block": best == last,
                           "best minus last accuracy": best_minus_last.value,
                           "95 % interval": f"[{best_minus_last.low:.4f}, {best_minus_last.high:.4f}]",
                           "last block above the null (high end)": bool(accuracy[last].low > null.high)},
            "labels shuffled (null and control, best block)": {
                f"mean of {SHUFFLES} shufflings": null.value, "95 % interval": f"[{null.low:.4f}, {null.high:.4f}]",
                "lowest shuffling": float(control.mean(axis=0).min()),
                "highest shuffling": float(control.mean(axis=0).max())},
            "chance": {"plays (majority rate)": e.chance, "genre (majority rate)": majority_rate(shown.genre)},
        },
        plot={
            "kind": "lines", "title": f"S1.5 on {model_name}: probe accuracy on time-pooled states by depth",
            "x": list(range(len(labels))), "xlabel": "depth (0 = embedding, ℓ = block ℓ)",
            "ylabel": "cross-validated accuracy", "ylim": [0, 1],
            "series": {
                "play (37 classes)": series(accuracy),
                "genre (3 classes)": {"value": genre_correct.mean(axis=0).tolist()},
                "play chance": {"value": [e.chance] * len(labels)},
                "play, labels shuffled (null, high end)": {"value": [null.high] * len(labels)},
                "genre chance": {"value": [majority_rate(shown.genre)] * len(labels)},
            },
        },
    )
