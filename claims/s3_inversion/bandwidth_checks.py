"""S3.10's checks as pure functions of its estimates: ``bandwidth_measures.py`` measures, these decide, and the
self-tests (``tests/cases_s3.py``, ``tests/test_s3_checks.py``) drive the same functions to hold and to fail.
"""

from dataclasses import dataclass, field

from claims.s3_inversion.convergence import convergence_checks
from claims.s3_inversion.scope import UNTRAINED_INVERTS, works_check
from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

SHARP = 0.5  # the one-feature jump must carry most of the transition (S3: all of it, 1.0)
EVERY = 0.9  # full-output accuracy from which the model "recovers every token"
MATCHED = 0.5  # control: S3's success test holds for most prompts just below the crossing
SOURCE_FRACTION = 2202 / 4096  # S3: Llama-7B's crossing, as a fraction of its width (0.54)
BELOW_WIDTH = (SOURCE_FRACTION + 1) / 2  # a reading since version 10 (set after looking): k*/d_model beside 0.77
HALF_FEATURE = 0.5  # k* < d_model for a count: k* ≤ d_model − 1, compared with d_model − ½


def below_width_check(k_star: Estimate, d_model: int) -> Check:
    """S3.10's claim check (version 10) that the crossing lies inside the output, below the width: S3's 2202 of 4096
    features recover every token, so a reduced output does. ``k_star``: the crossing, an exact count (features);
    compared as k* < d_model − ½ (a count: k* ≤ d_model − 1), so that a crossing at the width fails it wholly and
    its convergence control, compared the other way, reads one that stays there as staying."""
    return Check.of(f"crossing k* in features, below the width ({d_model})", k_star, "features", "<",
                    d_model - HALF_FEATURE, **catalogued("S3.10/crossing-k-in-features-below-the-width", d_model=d_model))


def full_works_check(full_works: Estimate, d_model: int) -> Check:
    """The control, on an untrained block, that the full output gives its prompts back (S3 says it does):
    ``full_works`` the fraction of prompts of which at least ``EVERY`` of the tokens come back (exact)."""
    return works_check(full_works, f"prompts whose tokens the full output ({d_model} features) recovers "
                       f"(≥ {EVERY} of them)", UNTRAINED_INVERTS,
                       key="S3.10/untrained-full-output-recovers-the-prompts")


@dataclass(frozen=True)
class CrossingEstimates:
    """S3.10 where the crossing is the first feature: ``k_star`` an exact count (features); ``full_works`` as in
    :class:`BandwidthEstimates` (None on a trained model)."""

    k_star: Estimate
    full_works: Estimate | None = None


def crossing_checks(e: CrossingEstimates, d_model: int) -> list[Check]:
    """S3.10's claim check that the crossing k* lies above the first feature (an exact count: no interval): at
    k* = 1 one feature already recovers half the full output's accuracy, and there is no threshold within the
    output, sharp or not, which S3's 2202 of 4096 features is. With the untrained block's control."""
    return [
        Check.of("crossing k* in features, above the first", e.k_star, "features", ">", 1.0,
                 **catalogued("S3.10/crossing-k-in-features-above-the-first")),
        *([] if e.full_works is None else [full_works_check(e.full_works, d_model)]),
    ]


@dataclass(frozen=True)
class BandwidthEstimates:
    """What S3.10's test measures on block 1's output cut to its first k features, over the reported prompts.

    Attributes:
        jump: token accuracy from the first k* features minus the first k* − 1, paired.
        fraction: the crossing k* as a fraction of d_model, recomputed on resampled prompts (a reading).
        matched: fraction of prompts passing S3's success test on the first k* − 1 features (exact).
        crossing: the crossing k* in features, an exact count (a deterministic Estimate).
        full_works: on an untrained block, the fraction of prompts the full output gives back (exact); else None.
        longer: ``jump`` after the descents at k* and k* − 1 continued to 5N (None where not continued).
        longer_crossing: ``crossing`` after the same continued descents, where the crossing failed at the width
            (``bandwidth_measures.longer_crossing``; None where not continued).
        k_star, steps: not measurements, the arguments ``bandwidth_checks`` is given: the crossing and N.
        curves, how: shown: {setting: ``bandwidth_measures.Curve``} and the headline setting.
        full: shown: the full output's token accuracy (headline setting).
        per_k: shown: token accuracy at each k evaluated, in increasing k.
    """

    jump: Estimate
    fraction: Estimate
    matched: Estimate
    crossing: Estimate
    full_works: Estimate | None = None
    longer: Estimate | None = None
    longer_crossing: Estimate | None = None
    k_star: int = field(default=0, compare=False)
    steps: int = field(default=0, compare=False)
    curves: dict = field(default_factory=dict, compare=False)
    how: str = field(default="", compare=False)
    full: Estimate | None = field(default=None, compare=False)
    per_k: list[Estimate] = field(default_factory=list, compare=False)


def bandwidth_checks(e: BandwidthEstimates, k_star: int, d_model: int, steps: int) -> list[Check]:
    """S3.10's two claim checks (a sharp jump at k*, k* below the width), their convergence controls where
    ``longer`` and ``longer_crossing`` are given, k*/d_model beside S3's (a reading, deciding nothing), the
    success-test control below the crossing, and on an untrained block its control."""
    sharp = Check.of(f"token accuracy from the first {k_star} features minus the first {k_star - 1}", e.jump,
                     "fraction of tokens", ">", SHARP,
                     **catalogued("S3.10/token-accuracy-from-the-first-features-minus-the-first", SHARP=SHARP))
    inside = below_width_check(e.crossing, d_model)
    untrained = e.full_works is not None  # an untrained block: decided at S3's own N = 200
    return [
        sharp, *([] if e.longer is None else convergence_checks(sharp, e.longer, steps, untrained)),
        inside, *([] if e.longer_crossing is None else convergence_checks(inside, e.longer_crossing, steps, untrained)),
        Check.of("crossing k* as a fraction of d_model", e.fraction, "fraction of d_model", "<", BELOW_WIDTH,
                 role="reading",
                 **catalogued("S3.10/crossing-k-as-a-fraction-of-d-model", SOURCE_FRACTION=SOURCE_FRACTION,
                              BELOW_WIDTH=BELOW_WIDTH)),
        Check.of(f"fraction of prompts passing S3's success test on the first {k_star - 1} features", e.matched,
                 "fraction of prompts", ">", MATCHED, role="control",
                 **catalogued("S3.10/fraction-of-prompts-passing-s3-s-success-test-on-the-first-features",
                              MATCHED=MATCHED)),
        *([] if e.full_works is None else [full_works_check(e.full_works, d_model)]),
    ]
