"""S3.4's checks as a pure function of its estimates: ``depth_measures.py`` measures, this decides, and the self-tests
(``tests/cases_s3.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass, field

import numpy as np

from claims.s3_inversion.convergence import at_headline_budget, convergence_checks
from claims.s3_inversion.source_setting import source_setting_reading
from claims.s3_inversion.scope import UNTRAINED_INVERTS, works_check
from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

SUCCESS_MAJORITY = 0.5  # control: most prompts at the deepest block reach S3's success test
FIRST_WORKS = "prompts on which block 1 recovers more tokens than the random start (chance)"


def first_works_check(first_works: Estimate) -> Check:
    """The control, on an untrained model, that block 1 inverts above chance on most prompts (S3 says it does)."""
    return works_check(first_works, FIRST_WORKS, UNTRAINED_INVERTS, key="S3.4/untrained-block-1-beats-chance")


@dataclass(frozen=True)
class DepthEstimates:
    """What S3.4's test measures over the reported prompts.

    Attributes:
        drop: token accuracy from block 1's output minus from the last block's (each its headline setting), paired.
        success: fraction of prompts passing S3's success test at the deepest block (an exact interval).
        first_works: on an untrained model, the fraction of prompts on which block 1 beats the random start (an
            exact interval); None on a trained one.
        longer: ``drop`` after blocks 1 and L's headline descents continued to 5N (None where not continued).
        longer_success: ``success`` after the same continued descents (the control at the headline's budget, issue
            77; None where not continued).
        source_setting: ``drop`` with every depth in S3's own setting (a reading beside the headline, issue 77; None
            at source scale, where the headline is S3's setting).
        context: not a measurement: the arguments ``depth_checks`` takes after the
            estimates (last block, headline label and reading, the deepest block's setting, N).
        blocks, best: shown beside the checks, deciding nothing: the blocks inverted (1-based) and each one's headline setting.
        runs: shown: {(block, setting): ``inversions.Run``}.
        accuracy, start: shown: token accuracy (prompts, depths, settings) and the random start's (prompts,).
        per_depth: shown: each depth's headline token accuracy; by_setting: shown: {setting: each depth's token
            accuracy in it}.
    """

    drop: Estimate
    success: Estimate
    first_works: Estimate | None = None
    longer: Estimate | None = None
    longer_success: Estimate | None = None
    source_setting: Estimate | None = None
    context: tuple = field(default=(), compare=False)
    blocks: list[int] = field(default_factory=list, compare=False)
    best: list[str] = field(default_factory=list, compare=False)
    runs: dict = field(default_factory=dict, compare=False)
    accuracy: np.ndarray | None = field(default=None, compare=False)
    start: np.ndarray | None = field(default=None, compare=False)
    per_depth: list[Estimate] = field(default_factory=list, compare=False)
    by_setting: dict[str, list[Estimate]] = field(default_factory=dict, compare=False)


def depth_checks(e: DepthEstimates, last_block: int, headline_label: str, headline_reading: str, deepest: str,
                 steps: int) -> list[Check]:
    """S3.4's claim check (the drop), its convergence control where ``longer`` is given, the success-test control,
    and on an untrained model the block-1 control.

    Args:
        last_block: the deepest block (1-based); headline_label, headline_reading: ``Scale``'s words for the
            headline setting; deepest: the deepest block's setting; steps: N.
    """
    drop = Check.of(f"token accuracy, block 1 minus block {last_block} (each its {headline_label})", e.drop,
                    "fraction of tokens", ">", 0.0,
                    **catalogued("S3.4/token-accuracy-block-1-minus-block-each-its", headline_reading=headline_reading))
    success = Check.of(f"fraction of prompts passing S3's success test at block {last_block} ({deepest} setting)",
                       e.success, "fraction of prompts", ">", SUCCESS_MAJORITY,
                       role="control",
                       **catalogued("S3.4/fraction-of-prompts-passing-s3-s-success-test-at-block-setting",
                                    SUCCESS_MAJORITY=SUCCESS_MAJORITY))
    return [
        drop, *([] if e.longer is None else convergence_checks(drop, e.longer, steps)),
        *([] if e.source_setting is None else [source_setting_reading(drop, e.source_setting)]),
        success, *([] if e.longer_success is None else [at_headline_budget(success, e.longer_success, steps)]),
        *([] if e.first_works is None else [first_works_check(e.first_works)]),
    ]
