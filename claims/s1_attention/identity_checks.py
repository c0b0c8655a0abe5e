"""S1.1, S1.2 and S1.3's checks as pure functions of their estimates: ``identity_measures.py`` measures, these decide,
and the self-tests (``tests/cases_s1.py``) drive the same functions to hold and to fail each check. Every row they
decide with is in the topic's home, ``identity.toml``, with its derivation.

All three are identities of the mechanism, decided entry by entry (``latent_instruments.stats.per_unit``): each
estimate is the worst entry over prompts, blocks and heads, its interval the value. The thresholds are rounding
bounds of the dtype the model ran in (S1 gives no figure): S1.1's are the context's (``IdentityContext``), S1.2's
and S1.3's are a ratio of 1 to the bound their measures divide by.
"""

from claims.s1_attention.identity_measures import ConvexEstimates, IdentityContext, OddsRatioEstimates, SimplexEstimates
from fixtures.catalogue_text import catalogued
from reports.checks import Check


def simplex_checks(e: SimplexEstimates, context: IdentityContext) -> list[Check]:
    """S1.1's three claim checks and its transposed-pattern control, against the context's rounding bound of a
    softmax (``sum_tolerance``) and smallest normal number (``zero``), both probabilities. Pure.

    Returns:
        three claim checks and one control, in that order.
    """
    zero = context.zero
    return [
        Check.of("worst |Σ_j p_ij − 1| over prompts, blocks, heads, rows", e.row_sum,
                 "probability", "<", context.sum_tolerance,
                 **catalogued("S1.1/row-sum", dtype_name=context.dtype_name, n_keys=context.n_keys,
                              sum_tolerance=context.sum_tolerance)),
        Check.of("worst probability on a future key (j > i)", e.future,
                 "probability", "<", zero,
                 **catalogued("S1.1/future-keys", zero=zero)),
        Check.of("worst negative entry, max(−p_ij)", e.negative,
                 "probability", "<", zero,
                 **catalogued("S1.1/negative-entries")),
        Check.of("largest probability the future check finds in the transposed pattern",
                 e.leak, "probability", ">", zero, role="control",
                 **catalogued("S1.1/transposed-control")),
    ]


def odds_ratio_checks(e: OddsRatioEstimates, context: IdentityContext) -> list[Check]:
    """S1.2's claim check, the twice-as-wide control, and for a rotary model the unrotated control: ratios to the
    rounding bound, below 1 (the claim) or above it (the controls). Pure.

    Returns:
        one claim check and one control, and a second control where ``e.unrotated`` is measured.
    """
    checks = [
        Check.of("worst |p − p̂| / rounding bound over prompts, blocks, heads, rows, keys",
                 e.ratio, "ratio", "<", 1.0,
                 **catalogued("S1.2/odds-ratio", dtype_name=context.dtype_name)),
        Check.of("smallest ratio with σ² = 2/s (Gaussians twice as wide) over prompts and blocks",
                 e.wider, "ratio", ">", 1.0,
                 role="control", **catalogued("S1.2/wider-control")),
    ]
    if e.unrotated is not None:
        checks.append(Check.of(
            "smallest ratio without the rotary embedding over prompts and blocks",
            e.unrotated, "ratio", ">", 1.0, role="control",
            **catalogued("S1.2/unrotated-control")))
    return checks


def convex_checks(e: ConvexEstimates, context: IdentityContext) -> list[Check]:
    """S1.3's claim check and its uniform-weights control: ratios to the matmul's rounding bound, below 1 (the
    claim) or above it (the control). Pure.

    Returns:
        one claim check and one control.
    """
    return [
        Check.of("worst |y − Σ_j p_ij v_j| / rounding bound over prompts, blocks, heads, positions, dims",
                 e.ratio, "ratio", "<", 1.0,
                 **catalogued("S1.3/convex-combination", n_keys=context.n_keys, dtype_name=context.dtype_name)),
        Check.of("smallest worst ratio over prompts and blocks with uniform causal weights 1/(i+1)",
                 e.uniform, "ratio", ">", 1.0, role="control",
                 **catalogued("S1.3/uniform-control")),
    ]
