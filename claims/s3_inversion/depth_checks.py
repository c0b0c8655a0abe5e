"""S3.4's checks as a pure function of its estimates: ``depth_measures.py`` measures, this decides, and the self-tests
(``tests/cases_s3.py``) drive the same function to hold and to fail each check. Every number it decides with is in
the topic's home, ``depth.toml``, with its derivation (the block-1 control's floor is the family's,
``scope.MOST``).
"""

from claims.s3_inversion.convergence import at_headline_budget, convergence_checks
from claims.s3_inversion.depth_measures import DepthContext, DepthEstimates
from claims.s3_inversion.scope import UNTRAINED_INVERTS, works_check
from claims.s3_inversion.source_setting import source_setting_reading
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from latent_instruments.stats import Estimate
from reports.checks import Check

SUCCESS_MAJORITY = numbers(__file__, "SUCCESS_MAJORITY")  # depth.toml: most prompts at the deepest block pass S3's test
FIRST_WORKS = "prompts on which block 1 recovers more tokens than the random start (chance)"


def first_works_check(first_works: Estimate) -> Check:
    """The control, on an untrained model, that block 1 inverts above chance on most prompts (S3 says it does); the
    test records it alone, before the drop, where it does not pass (the descent failed, which must show)."""
    return works_check(first_works, FIRST_WORKS, UNTRAINED_INVERTS, key="S3.4/untrained-block-1-beats-chance")


def depth_checks(e: DepthEstimates, context: DepthContext) -> list[Check]:
    """S3.4's claim check (the drop above 0), its convergence controls where ``longer`` is given, S3's own setting
    beside it (a reading, on a CPU), the success-test control (again at 5N where continued), and on an untrained
    model the block-1 control. Pure: the same estimates give the same checks.

    Args:
        e: the estimates (``depth_measures.measure_depth``, with ``continue_depth``'s where continued).
        context: the deepest block, ``Scale``'s words for the headline setting, the deepest block's setting and N.
    """
    drop = Check.of(f"token accuracy, block 1 minus block {context.last_block} (each its {context.headline_label})",
                    e.drop, "fraction of tokens", ">", 0.0,
                    **catalogued("S3.4/drop", headline_reading=context.headline_reading))
    success = Check.of(f"fraction of prompts passing S3's success test at block {context.last_block} "
                       f"({context.deepest} setting)", e.success, "fraction of prompts", ">", SUCCESS_MAJORITY,
                       role="control",
                       **catalogued("S3.4/success-test"))
    return [
        drop, *([] if e.longer is None else convergence_checks(drop, e.longer, context.steps)),
        *([] if e.source_setting is None else [source_setting_reading(drop, e.source_setting)]),
        success, *([] if e.longer_success is None else [at_headline_budget(success, e.longer_success, context.steps)]),
        *([] if e.first_works is None else [first_works_check(e.first_works)]),
    ]
