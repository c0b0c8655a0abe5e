"""S1.1, S1.2 and S1.3's checks as pure functions of their estimates: ``test_simplex.py`` measures, these decide, and
the self-tests (``tests/cases_s1.py``) drive the same functions to hold and to fail each check.

All three are identities of the mechanism, decided entry by entry (``latent_instruments.stats.per_unit``): each
estimate is the worst entry over prompts, blocks and heads, its interval the value. The thresholds are rounding
bounds of the dtype the model ran in, passed in by the test (S1 gives no figure).
"""

from dataclasses import dataclass

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
    """

    row_sum: Estimate
    future: Estimate
    negative: Estimate
    leak: Estimate


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
                 "S1: 'all of the rows of S are vectors lying in the (T−1)-simplex', exact in real arithmetic; "
                 f"the bound is the rounding of a {dtype_name} softmax over {n_keys} keys: ε/2 of the dtype "
                 f"for the output plus (n + 2)·ε of its accumulation type for exp, the row sum (Higham's γ_n) and "
                 f"the division, = {sum_tolerance:.3g} (ε is twice the unit roundoff: a factor 2 to spare)",
                 key="S1.1/worst-j-p-ij-1-over-prompts-blocks-heads-rows"),
        Check.of("worst probability on a future key (j > i)", e.future,
                 "probability", "<", zero,
                 "S1: 'only really looking at causally appropriate indices' — the causal mask M adds the dtype's "
                 "most negative number (or −inf) before the softmax, so exp underflows to exactly 0; the threshold "
                 f"is the dtype's smallest normal number ({zero:.3g}): anything larger is a mask that leaked",
                 key="S1.1/worst-probability-on-a-future-key-j-i"),
        Check.of("worst negative entry, max(−p_ij)", e.negative,
                 "probability", "<", zero,
                 "a softmax is a ratio of exponentials, ≥ 0 in any rounding; the same smallest-normal threshold",
                 key="S1.1/worst-negative-entry-max-p-ij"),
        Check.of("largest probability the future check finds in the transposed pattern",
                 e.leak, "probability", ">", zero,
                 "control: the transpose moves each row's past weights onto future keys, a leak the future check "
                 "must see; it fails if the check reads the wrong triangle, or if every head attends only to its "
                 "own position (the zero-future check would then test nothing)", role="control",
                 key="S1.1/largest-probability-the-future-check-finds-in-the-transposed-pattern"),
    ]


@dataclass(frozen=True)
class OddsRatioEstimates:
    """What S1.2's test measures (ratios to the rounding bound of a dtype softmax of the scores, per unit).

    Attributes:
        ratio: worst |p − p̂| / bound, p̂ the softmax of the Gaussian log odds ratios with σ² = 1/s.
        wider: smallest such ratio with σ² = 2/s (a control).
        unrotated: smallest such ratio without the rotary embedding (a control of rotary models; None otherwise).
    """

    ratio: Estimate
    wider: Estimate
    unrotated: Estimate | None = None


def odds_ratio_checks(e: OddsRatioEstimates, dtype_name: str) -> list[Check]:
    """S1.2's claim check, the twice-as-wide control, and for a rotary model the unrotated control."""
    checks = [
        Check.of("worst |p − p̂| / rounding bound over prompts, blocks, heads, rows, keys",
                 e.ratio, "ratio", "<", 1.0,
                 "S1's S_ij ∝ N(q_i|k_j) / (N(q_i|0) N(k_j|0)) is an identity, exact in real arithmetic, so the "
                 "threshold is the rounding of the model's own computation: each score is off by at most "
                 "Δ = s·max‖q_i‖‖k_j‖·[(d + 2)·ε_acc + 6·ε] (γ_d of the dot product and the max subtraction in the "
                 f"accumulation type, six roundings to {dtype_name}: rotary, score, scaling), which moves p "
                 "by a factor within e^{±2Δ}, plus the softmax's own rounding; the ratio to that bound must stay below 1 "
                 "(the worst case: the claim is an identity, asserted of every entry and decided on each)",
                 key="S1.2/worst-p-p-rounding-bound-over-prompts-blocks-heads-rows-keys"),
        Check.of("smallest ratio with σ² = 2/s (Gaussians twice as wide) over prompts and blocks",
                 e.wider, "ratio", ">", 1.0,
                 "control: a scaling off by a factor 2 must be detected in every block of every prompt, or the check "
                 "could pass because the patterns are too flat to tell one scale from another (the near-uniform "
                 "attention of a random init); the same bound, now to be exceeded by the lower interval end",
                 role="control", key="S1.2/smallest-ratio-with-2-s-gaussians-twice-as-wide-over-prompts-and"),
    ]
    if e.unrotated is not None:
        checks.append(Check.of(
            "smallest ratio without the rotary embedding over prompts and blocks",
            e.unrotated, "ratio", ">", 1.0,
            "control (rotary models): the same form on the unrotated q and k must miss the pattern in every block of "
            "every prompt, or the rotary handling would be untested: a pass that did not need it", role="control",
            key="S1.2/smallest-ratio-without-the-rotary-embedding-over-prompts-and-blocks"))
    return checks


@dataclass(frozen=True)
class ConvexEstimates:
    """What S1.3's test measures (ratios to the rounding bound of the model's matmul, per unit).

    Attributes:
        ratio: worst |y − Σ_j p_ij v_j| / bound over prompts, blocks, heads, positions, dims.
        uniform: smallest worst ratio with uniform causal weights 1/(i+1) (a control).
    """

    ratio: Estimate
    uniform: Estimate


def convex_checks(e: ConvexEstimates, dtype_name: str, n_keys: int) -> list[Check]:
    """S1.3's claim check and its uniform-weights control."""
    return [
        Check.of("worst |y − Σ_j p_ij v_j| / rounding bound over prompts, blocks, heads, positions, dims",
                 e.ratio, "ratio", "<", 1.0,
                 "S1: 'Y = SV ... Y_t = Vᵀ S_t', exact in real arithmetic (the rows S_t are barycentric "
                 "coordinates by S1.1), so the threshold is the rounding of the model's matmul: Higham's "
                 f"|fl(Σ p v) − Σ p v| ≤ γ_n Σ_j p_ij|v_j| with n = {n_keys} keys in the accumulation type, plus "
                 f"half an ulp of {dtype_name} for the result; the worst ratio to it must stay below 1",
                 key="S1.3/worst-y-j-p-ij-v-j-rounding-bound-over-prompts-blocks-heads-positions"),
        Check.of("smallest worst ratio over prompts and blocks with uniform causal weights 1/(i+1)",
                 e.uniform, "ratio", ">", 1.0,
                 "control: the outputs must depend on the pattern's own weights, not merely on the values being "
                 "alike (an untrained head's near-uniform attention, or values constant over positions, would "
                 "make any weights fit); averaging the values uniformly must leave a deviation beyond the "
                 "bound in every block of every prompt", role="control",
                 key="S1.3/smallest-worst-ratio-over-prompts-and-blocks-with-uniform-causal"),
    ]
