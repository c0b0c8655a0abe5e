"""S1.1, S1.2 and S1.3's checks as pure functions of their estimates: ``identity_measures.py`` measures, these decide,
and the self-tests (``tests/cases_s1.py``) drive the same functions to hold and to fail each check.

All three are identities of the mechanism, decided entry by entry (``latent_instruments.stats.per_unit``): each
estimate is the worst entry over prompts, blocks and heads, its interval the value. The thresholds are rounding
bounds of the dtype the model ran in, passed in by the test (S1 gives no figure).
"""

from dataclasses import dataclass, field

import numpy as np

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check


@dataclass(frozen=True)
class SimplexEstimates:
    """What S1.1's test measures on every attention row (probabilities, per unit).

    Attributes:
        row_sum: worst |Σ_j p_ij − 1|.
        future: worst probability on a future key (j > i).
        negative: worst negative entry, max(−p_ij).
        leak: largest probability the future check finds in the transposed pattern (a control).
        per_block: shown beside the checks, deciding nothing: {"row_sum", "future", "negative"}: (prompts, n_blocks)
            the worst of each per prompt and block.
    """

    row_sum: Estimate
    future: Estimate
    negative: Estimate
    leak: Estimate
    per_block: dict[str, np.ndarray] = field(default_factory=dict, compare=False)


def simplex_checks(e: SimplexEstimates, dtype_name: str, n_keys: int, sum_tolerance: float, zero: float) -> list[Check]:
    """S1.1's three claim checks and its transposed-pattern control.

    Args:
        dtype_name: the dtype the model ran in, for the derivations.
        n_keys: keys per row.
        sum_tolerance: the rounding bound of a softmax over ``n_keys`` keys in that dtype (probability).
        zero: the dtype's smallest normal number (probability).
    """
    return [
        Check.of("worst |Σ_j p_ij − 1| over prompts, blocks, heads, rows", e.row_sum,
                 "probability", "<", sum_tolerance,
                 **catalogued("S1.1/worst-j-p-ij-1-over-prompts-blocks-heads-rows", dtype_name=dtype_name,
                              n_keys=n_keys, sum_tolerance=sum_tolerance)),
        Check.of("worst probability on a future key (j > i)", e.future,
                 "probability", "<", zero,
                 **catalogued("S1.1/worst-probability-on-a-future-key-j-i", zero=zero)),
        Check.of("worst negative entry, max(−p_ij)", e.negative,
                 "probability", "<", zero,
                 **catalogued("S1.1/worst-negative-entry-max-p-ij")),
        Check.of("largest probability the future check finds in the transposed pattern",
                 e.leak, "probability", ">", zero, role="control",
                 **catalogued("S1.1/largest-probability-the-future-check-finds-in-the-transposed-pattern")),
    ]


@dataclass(frozen=True)
class OddsRatioEstimates:
    """What S1.2's test measures (ratios to the rounding bound of a dtype softmax of the scores, per unit).

    Attributes:
        ratio: worst |p − p̂| / bound, p̂ the softmax of the Gaussian log odds ratios with σ² = 1/s.
        wider: smallest such ratio with σ² = 2/s (a control).
        unrotated: smallest such ratio without the rotary embedding (a control of rotary models; None otherwise).
        forms: shown beside the checks, deciding nothing: each block's ``latent_instruments.attention.ScoreForm``.
        per_block: shown: {"ratio", "wider", "unrotated" (rotary models only), "max_abs_error"}: (prompts,
            n_blocks) per prompt and block.
    """

    ratio: Estimate
    wider: Estimate
    unrotated: Estimate | None = None
    forms: list = field(default_factory=list, compare=False)
    per_block: dict[str, np.ndarray] = field(default_factory=dict, compare=False)


def odds_ratio_checks(e: OddsRatioEstimates, dtype_name: str) -> list[Check]:
    """S1.2's claim check, the twice-as-wide control, and for a rotary model the unrotated control."""
    checks = [
        Check.of("worst |p − p̂| / rounding bound over prompts, blocks, heads, rows, keys",
                 e.ratio, "ratio", "<", 1.0,
                 **catalogued("S1.2/worst-p-p-rounding-bound-over-prompts-blocks-heads-rows-keys",
                              dtype_name=dtype_name)),
        Check.of("smallest ratio with σ² = 2/s (Gaussians twice as wide) over prompts and blocks",
                 e.wider, "ratio", ">", 1.0,
                 role="control", **catalogued("S1.2/smallest-ratio-with-2-s-gaussians-twice-as-wide-over-prompts-and")),
    ]
    if e.unrotated is not None:
        checks.append(Check.of(
            "smallest ratio without the rotary embedding over prompts and blocks",
            e.unrotated, "ratio", ">", 1.0, role="control",
            **catalogued("S1.2/smallest-ratio-without-the-rotary-embedding-over-prompts-and-blocks")))
    return checks


@dataclass(frozen=True)
class ConvexEstimates:
    """What S1.3's test measures (ratios to the rounding bound of the model's matmul, per unit).

    Attributes:
        ratio: worst |y − Σ_j p_ij v_j| / bound over prompts, blocks, heads, positions, dims.
        uniform: smallest worst ratio with uniform causal weights 1/(i+1) (a control).
        per_block: shown beside the checks, deciding nothing: {"ratio", "uniform"}: (prompts, n_blocks).
    """

    ratio: Estimate
    uniform: Estimate
    per_block: dict[str, np.ndarray] = field(default_factory=dict, compare=False)


def convex_checks(e: ConvexEstimates, dtype_name: str, n_keys: int) -> list[Check]:
    """S1.3's claim check and its uniform-weights control."""
    return [
        Check.of("worst |y − Σ_j p_ij v_j| / rounding bound over prompts, blocks, heads, positions, dims",
                 e.ratio, "ratio", "<", 1.0,
                 **catalogued("S1.3/worst-y-j-p-ij-v-j-rounding-bound-over-prompts-blocks-heads-positions",
                              n_keys=n_keys, dtype_name=dtype_name)),
        Check.of("smallest worst ratio over prompts and blocks with uniform causal weights 1/(i+1)",
                 e.uniform, "ratio", ">", 1.0, role="control",
                 **catalogued("S1.3/smallest-worst-ratio-over-prompts-and-blocks-with-uniform-causal")),
    ]
