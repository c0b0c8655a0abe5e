"""S3's own setting beside the headline (issue 77, item 2): which descent setting decides, and the other's value.

On a CPU a trained block gets N = 200 steps, a tenth of S3's 2000, and S3's own setting (plain gradient descent on
the L1 distance, η 1 → 1/100, a₀ ~ N(½, 1/20²)) passes S3's success test on few of a trained model's prompts there.
So the headline is the better of S3's setting and the adapted one, chosen once on the first third of the prompts
and measured on the other two thirds (``scale.Scale.chosen``): the adapted setting decides where it recovers more,
since a verdict on S3's setting at a tenth of its budget would measure the budget, not the model. At source scale (a
GPU, N = 2000) S3's setting alone decides, as S3 ran it, and nothing is shown beside it.

Both settings are measured on every prompt anyway, so each S3 record shows S3's own setting's value of its claim
check beside the headline: the same statistic on the same reported prompts, the same threshold, a reading (it
decides nothing). Where the two settings disagree (one passes, the other fails), the record's message and its cell
say so (``reports.checks.ClaimRecord.settings_disagree``): the verdict is the headline setting's, and S3's own
would have given the other.
"""

import numpy as np

from latent_instruments.stats import Estimate
from reports.checks import Check


def source_setting_reading(decided: Check, own: Estimate) -> Check:
    """A claim check again in S3's own descent setting: ``decided``'s statistic, unit, comparison and threshold on
    ``own``, role "reading".

    Args:
        decided: the claim check in the headline setting (the better of the two on a CPU).
        own: the same statistic on the same reported prompts with every descent in S3's own setting.
    Raises:
        ValueError: as ``Check.of``.
    """
    return Check.of(
        f"{decided.name}, in S3's own setting", own, decided.unit, decided.comparison, decided.threshold,
        "S3's own setting beside the headline (issue 77): the claim check's statistic with every descent in S3's "
        "setting (plain gradient descent on the L1 distance, η 1 → 1/100, a₀ ~ N(½, 1/20²)) on the same reported "
        "prompts, against the same threshold. It decides nothing: on a CPU the better setting decides (N = 200 is "
        "a tenth of S3's 2000 for a trained block); where the two disagree the record says so",
        role="reading", key=f"{decided.key}/source-setting" if decided.key else "")  # ``SOURCE_SETTING``


def source_chosen(chosen: np.ndarray | int) -> np.ndarray | int:
    """S3's own setting in place of a headline choice (``Scale.chosen``'s shape: an index or an array of them)."""
    return 0 if np.ndim(chosen) == 0 else np.zeros_like(chosen)

