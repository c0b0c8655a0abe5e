"""S3.14's checks as pure functions of its estimates: ``layers_measures.py`` measures, these decide, and the self-tests
(``tests/cases_s3.py``) drive the same functions to hold and to fail each check. Every number they decide with is in
the topic's home, ``layers.toml``, with its derivation.
"""

from claims.s3_inversion.convergence import at_headline_budget, convergence_checks
from claims.s3_inversion.layers_measures import LayersContext, LayersEstimates
from claims.s3_inversion.source_setting import source_setting_reading
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from latent_instruments.stats import Estimate
from reports.checks import Check

LAYERS, HALF = numbers(__file__, "LAYERS", "HALF")  # layers.toml: S3's "first three layers"; "no better" is under HALF


def gap_check(advantage: Estimate) -> Check:
    """The control that the share has a gap to be a fraction of: block 1's token accuracy minus block 3's, > 0 by
    the interval's low end. An interval that contains 0, or has zero width (the same gap on every prompt: a
    bootstrap that cannot show its spread, ``latent_instruments.stats.undecidable``), leaves the record inconclusive
    (control undecided); a whole interval at or below 0 fails it (no share can be measured; version 8), and the test
    records it alone.

    Args:
        advantage: bootstrap estimate of block 1's minus block 3's token accuracy (fraction of tokens).
    """
    return Check.of(f"block 1's advantage over block {LAYERS} (the gap the share is a fraction of)", advantage,
                    "fraction of tokens", ">", 0.0, role="control",
                    **catalogued("S3.14/gap"))


def layers_checks(e: LayersEstimates, context: LayersContext) -> list[Check]:
    """S3.14's claim check (the share under HALF), its convergence controls where ``longer`` is given, S3's own
    setting beside it (a reading, on a CPU), the floor control (the concatenated descent did not break) and the gap
    control, at N and, where the descents were continued, again at 5N (the budget the headline then comes from);
    ``context``: ``Scale``'s words for the headline setting and N. Pure: the same estimates give the same checks."""
    no_better = Check.of(f"share of block 1's advantage over block {LAYERS} recovered by blocks 1-{LAYERS} together",
                         e.share, "fraction of the gap", "<", HALF,
                         **catalogued("S3.14/share", headline_reading=context.headline_reading))
    return [
        no_better, *([] if e.longer is None else convergence_checks(no_better, e.longer, context.steps)),
        *([] if e.source_setting is None else [source_setting_reading(no_better, e.source_setting)]),
        Check.of(f"the same share, as a floor: blocks 1-{LAYERS} together not far below block {LAYERS} alone",
                 e.share, "fraction of the gap", ">", -HALF, role="control",
                 **catalogued("S3.14/share-floor")),
        gap := gap_check(e.advantage),
        *([] if e.longer_advantage is None else [at_headline_budget(gap, e.longer_advantage, context.steps)]),
    ]
