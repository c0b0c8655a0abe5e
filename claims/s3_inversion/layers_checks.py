"""S3.14's checks as pure functions of its estimates: ``layers_measures.py`` measures, these decide, and the self-tests
(``tests/cases_s3.py``) drive the same functions to hold and to fail each check.
"""

from dataclasses import dataclass, field

from claims.s3_inversion.convergence import at_headline_budget, convergence_checks
from claims.s3_inversion.source_setting import source_setting_reading
from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

LAYERS = 3  # S3's "first three layers"
HALF = 0.5  # "no better": less than half of block 1's advantage over the last block is recovered


def gap_check(advantage: Estimate) -> Check:
    """The control that the share has a gap to be a fraction of: block 1's token accuracy minus block 3's, > 0 by
    the interval's low end. An interval that contains 0, or has zero width (the same gap on every prompt: a
    bootstrap that cannot show its spread, ``latent_instruments.stats.undecidable``), leaves the record inconclusive
    (control undecided); a whole interval at or below 0 fails it (no share can be measured; version 8).

    Args:
        advantage: bootstrap estimate of block 1's minus block 3's token accuracy (fraction of tokens).
    """
    return Check.of(f"block 1's advantage over block {LAYERS} (the gap the share is a fraction of)", advantage,
                    "fraction of tokens", ">", 0.0, role="control",
                    **catalogued("S3.14/block-1-s-advantage-over-block-the-gap-the-share-is-a-fraction-of",
                                 LAYERS=LAYERS))


@dataclass(frozen=True)
class LayersEstimates:
    """What S3.14's test measures over the reported prompts (each target its headline setting).

    Attributes:
        share: the share of block 1's advantage over block 3 that blocks 1-3 together recover (fraction of the gap).
        advantage: block 1's token accuracy minus block 3's.
        longer: ``share`` after each target's headline descent continued to 5N (None where not continued).
        longer_advantage: ``advantage`` after the same continued descents: the gap control at the headline's budget
            (issue 77; None where not continued).
        source_setting: ``share`` with every target in S3's own setting (a reading beside the headline, issue 77;
            None at source scale, where the headline is S3's setting).
        targets: shown beside the checks, deciding nothing: {label: the block (or blocks) inverted, 0-based}.
        runs: shown: {(label, setting): ``inversions.Run``}; best: shown: {label: its headline setting}.
        per: shown: each target's headline token accuracy; steps: shown: N; prompts: shown: the prompts inverted.
    """

    share: Estimate
    advantage: Estimate
    longer: Estimate | None = None
    longer_advantage: Estimate | None = None
    source_setting: Estimate | None = None
    targets: dict = field(default_factory=dict, compare=False)
    runs: dict = field(default_factory=dict, compare=False)
    best: dict[str, str] = field(default_factory=dict, compare=False)
    per: list[Estimate] = field(default_factory=list, compare=False)
    steps: int = field(default=0, compare=False)
    prompts: int = field(default=0, compare=False)


def layers_checks(e: LayersEstimates, headline_reading: str, steps: int) -> list[Check]:
    """S3.14's claim check (the share under half), its convergence control where ``longer`` is given, the floor
    control (the concatenated descent did not break) and the gap control, at N and, where the descents were
    continued, again at 5N (the budget the headline then comes from); ``steps``: N."""
    no_better = Check.of(f"share of block 1's advantage over block {LAYERS} recovered by blocks 1-{LAYERS} together",
                         e.share, "fraction of the gap", "<", HALF,
                         **catalogued("S3.14/share-of-block-1-s-advantage-over-block-recovered-by-blocks-1-together",
                                      HALF=HALF, LAYERS=LAYERS, headline_reading=headline_reading))
    return [
        no_better, *([] if e.longer is None else convergence_checks(no_better, e.longer, steps)),
        *([] if e.source_setting is None else [source_setting_reading(no_better, e.source_setting)]),
        Check.of(f"the same share, as a floor: blocks 1-{LAYERS} together not far below block {LAYERS} alone",
                 e.share, "fraction of the gap", ">", -HALF, role="control",
                 **catalogued("S3.14/the-same-share-as-a-floor-blocks-1-together-not-far-below-block-alone",
                              LAYERS=LAYERS, HALF=HALF)),
        gap := gap_check(e.advantage),
        *([] if e.longer_advantage is None else [at_headline_budget(gap, e.longer_advantage, steps)]),
    ]
