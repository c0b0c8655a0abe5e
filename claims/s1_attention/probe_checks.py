"""S1.5's checks as a pure function of its estimates: ``test_probe.py`` measures, this decides, and the self-tests
(``tests/cases_s1.py``) drive the same function to hold and to fail each check.

The claim's threshold is its own null (the probe with the play labels shuffled), not a number of the source's:
S1 gives no accuracy.
"""

import math
from dataclasses import dataclass

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
    """

    best: Estimate
    null: Estimate
    chance: float
    n: int
    shuffles: int


def probe_checks(e: ProbeEstimates) -> list[Check]:
    """S1.5's claim check (above the shuffled-label null's high end) and its control (the null at chance: the
    majority rate plus 4 binomial standard errors)."""
    null, chance = e.null, e.chance
    noise = 4 * math.sqrt(chance * (1 - chance) / e.n)
    return [
        Check.of("cross-validated accuracy of the best block's pooled features (37 plays)",
                 e.best, "fraction", ">", null.high,
                 "S1: a linear layer on 'context-pooled' features is useful for classification, i.e. the class is "
                 "linearly decodable from the time average; S1 gives no accuracy, so the threshold is the claim's "
                 f"own bound: the same probe with the play labels shuffled, mean of {e.shuffles} shufflings at the "
                 f"same block, by the high end of its 95 % interval over windows ({null.value:.4f} "
                 f"[{null.low:.4f}, {null.high:.4f}]; the majority rate is {chance:.4f}), cleared by the low end "
                 "of the probe's own interval. The best block, since S1 says middle layers may be the useful "
                 "ones; the selection among blocks is inside the bootstrap",
                 key="S1.5/cross-validated-accuracy-of-the-best-block-s-pooled-features-37-plays"),
        Check.of(f"the same with the play labels shuffled, mean of {e.shuffles} shufflings (the claim's best block)",
                 null, "fraction", "<", chance + noise,
                 "control: with labels permuted at random no probe can beat chance, so a probe that did would be "
                 "reading overlap between training and test windows, not the class; the threshold is the "
                 f"majority rate plus 4 binomial standard errors of an n = {e.n} chance accuracy "
                 f"({chance + noise:.4f}), cleared by the high end of the interval. Taken at the block the claim "
                 f"picks (on the whole sample) and averaged over {e.shuffles} shufflings (a window's unit is its "
                 "mean correctness over them). Version 1 took one shuffling and the best of the blocks: that "
                 "statistic's own noise and selection, with the interval's width on top, come within reach of the "
                 "bound with no leak at all (one build of tiny-w192: 0.043 [0.029, 0.065] against 0.058). The "
                 "same shufflings are the claim's null",
                 role="control", key="S1.5/the-same-with-the-play-labels-shuffled-mean-of-shufflings-the-claim-s"),
    ]
