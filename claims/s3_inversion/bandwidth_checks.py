"""S3.10's checks as pure functions of its estimates: ``bandwidth_measures.py`` measures, these decide, and the
self-tests (``tests/cases_s3.py``, ``tests/test_s3_checks.py``) drive the same functions to hold and to fail. Every
number they decide with is in the topic's home, ``bandwidth.toml``, with its derivation (the untrained block's
control's floor is the family's, ``scope.MOST``).
"""

from claims.s3_inversion.bandwidth_measures import BandwidthContext, BandwidthEstimates, CrossingEstimates
from claims.s3_inversion.convergence import convergence_checks
from claims.s3_inversion.scope import UNTRAINED_INVERTS, works_check
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from latent_instruments.stats import Estimate
from reports.checks import Check

# bandwidth.toml: the jump's floor, the full output's "every token", the success test's floor, the reading's line
# (halfway from S3's fraction of its width to the width) and the half feature a count is compared with
SHARP, EVERY, MATCHED, BELOW_WIDTH, HALF_FEATURE = numbers(__file__, "SHARP", "EVERY", "MATCHED", "BELOW_WIDTH",
                                                           "HALF_FEATURE")


def below_width_check(k_star: Estimate, d_model: int) -> Check:
    """S3.10's claim check (version 10) that the crossing lies inside the output, below the width: S3's first
    SOURCE_FEATURES of SOURCE_WIDTH features recover every token, so a reduced output does. ``k_star``: the crossing,
    an exact count (features); compared as k* < d_model − HALF_FEATURE (a count: k* ≤ d_model − 1), so that a
    crossing at the width fails it wholly and its convergence control, compared the other way, reads one that stays
    there as staying."""
    return Check.of(f"crossing k* in features, below the width ({d_model})", k_star, "features", "<",
                    d_model - HALF_FEATURE, **catalogued("S3.10/below-width", d_model=d_model))


def full_works_check(full_works: Estimate, d_model: int) -> Check:
    """The control, on an untrained block, that the full output gives its prompts back (S3 says it does):
    ``full_works`` the fraction of prompts of which at least ``EVERY`` of the tokens come back (exact)."""
    return works_check(full_works, f"prompts whose tokens the full output ({d_model} features) recovers "
                       f"(≥ {EVERY} of them)", UNTRAINED_INVERTS,
                       key="S3.10/untrained-full-output")


def crossing_checks(e: CrossingEstimates, d_model: int) -> list[Check]:
    """S3.10's claim check that the crossing k* lies above the first feature (an exact count: no interval): at
    k* = 1 one feature already recovers half the full output's accuracy, and there is no threshold within the
    output, sharp or not, which S3's SOURCE_FEATURES of SOURCE_WIDTH features is. With the untrained block's
    control."""
    return [
        Check.of("crossing k* in features, above the first", e.k_star, "features", ">", 1.0,
                 **catalogued("S3.10/above-first")),
        *([] if e.full_works is None else [full_works_check(e.full_works, d_model)]),
    ]


def threshold_within(k_star: int, prompts: int) -> Check:
    """S3.10's crossing check (``crossing_checks``) of the count ``k_star`` over ``prompts`` (exact: no interval)."""
    return crossing_checks(CrossingEstimates(Estimate(float(k_star), float(k_star), float(k_star), 1.0, prompts)),
                           0)[0]


def bandwidth_checks(e: BandwidthEstimates, context: BandwidthContext) -> list[Check]:
    """S3.10's two claim checks (a sharp jump at k*, k* below the width), their convergence controls where
    ``longer`` and ``longer_crossing`` are given, k*/d_model beside S3's (a reading, deciding nothing), the
    success-test control below the crossing, and on an untrained block its control; ``context``: the crossing k*,
    the width and N. Pure: the same estimates give the same checks.

    Returns:
        the jump's check first, then the width's, then the controls and the reading.
    """
    k_star, d_model, steps = context.k_star, context.d_model, context.steps
    sharp = Check.of(f"token accuracy from the first {k_star} features minus the first {k_star - 1}", e.jump,
                     "fraction of tokens", ">", SHARP,
                     **catalogued("S3.10/jump"))
    inside = below_width_check(e.crossing, d_model)
    untrained = e.full_works is not None  # an untrained block: decided at S3's own N = 200
    return [
        sharp, *([] if e.longer is None else convergence_checks(sharp, e.longer, steps, untrained)),
        inside, *([] if e.longer_crossing is None else convergence_checks(inside, e.longer_crossing, steps, untrained)),
        Check.of("crossing k* as a fraction of d_model", e.fraction, "fraction of d_model", "<", BELOW_WIDTH,
                 role="reading",
                 **catalogued("S3.10/fraction-of-width")),
        Check.of(f"fraction of prompts passing S3's success test on the first {k_star - 1} features", e.matched,
                 "fraction of prompts", ">", MATCHED, role="control",
                 **catalogued("S3.10/success-test")),
        *([] if e.full_works is None else [full_works_check(e.full_works, d_model)]),
    ]
