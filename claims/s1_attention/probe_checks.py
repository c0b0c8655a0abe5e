"""S1.5's checks as a pure function of its estimates: ``probe_measures.py`` measures, this decides, and the self-tests
(``tests/cases_s1.py``) drive the same function to hold and to fail each check.

The claim's threshold is its own null (the probe with the play labels shuffled), not a number of the source's:
S1 gives no accuracy.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check


@dataclass(frozen=True)
class ProbeEstimates:
    """What S1.5's test measures over windows (the bootstrap unit), as fractions of windows.

    Attributes:
        best: cross-validated accuracy of the best block's time-pooled features.
        null: the same probe at that block with the play labels shuffled, mean over the shufflings.
        chance: the majority rate of the plays.
        n: windows.
        shuffles: shufflings averaged in ``null``.
        correct, genre_correct: shown beside the checks, deciding nothing: (windows, n_layers) out-of-fold
            correctness of the play probe and of the First Folio genre probe (windows with a genre).
        genre: shown: the genre of each window that has one.
        labels: shown: the layers' labels ("embed", "block 1" .. "block L"); best_layer: the best block's index.
        control: shown: (windows, shuffles) correctness of the shuffled-label probes at the best block.
        accuracy: shown: per layer, the play probe's accuracy.
        best_minus_last: shown: the best block's accuracy minus the last block's, paired.
        length: shown: tokens per window.
    """

    best: Estimate
    null: Estimate
    chance: float
    n: int
    shuffles: int
    correct: np.ndarray | None = field(default=None, compare=False)
    genre_correct: np.ndarray | None = field(default=None, compare=False)
    genre: np.ndarray | None = field(default=None, compare=False)
    labels: list[str] = field(default_factory=list, compare=False)
    best_layer: int = field(default=0, compare=False)
    control: np.ndarray | None = field(default=None, compare=False)
    accuracy: list[Estimate] = field(default_factory=list, compare=False)
    best_minus_last: Estimate | None = field(default=None, compare=False)
    length: int = field(default=0, compare=False)


def probe_checks(e: ProbeEstimates) -> list[Check]:
    """S1.5's claim check (above the shuffled-label null's high end) and its control (the null at chance: the
    majority rate plus 4 binomial standard errors)."""
    null, chance = e.null, e.chance
    noise = 4 * math.sqrt(chance * (1 - chance) / e.n)
    return [
        Check.of("cross-validated accuracy of the best block's pooled features (37 plays)",
                 e.best, "fraction", ">", null.high,
                 **catalogued("S1.5/cross-validated-accuracy-of-the-best-block-s-pooled-features-37-plays",
                              shuffles=e.shuffles, null=null.value, null_low=null.low, null_high=null.high,
                              chance=chance)),
        Check.of(f"the same with the play labels shuffled, mean of {e.shuffles} shufflings (the claim's best block)",
                 null, "fraction", "<", chance + noise,
                 role="control",
                 **catalogued("S1.5/the-same-with-the-play-labels-shuffled-mean-of-shufflings-the-claim-s", n=e.n,
                              floor=chance + noise, shuffles=e.shuffles)),
    ]
