"""S3.5's checks as a pure function of its estimates: ``width_measures.py`` measures, this decides, and the self-tests
(``tests/cases_s3.py``) drive the same function to hold and to fail each check. The numbers it decides with are in
the topic's home, ``width.toml``, with their derivations.
"""

from claims.s3_inversion.width_measures import WidthEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

SUCCESS_MAJORITY = numbers(__file__, "SUCCESS_MAJORITY")  # control: most of the narrowest rung's prompts succeed


def width_checks(e: WidthEstimates, headline_label: str) -> list[Check]:
    """S3.5's claim checks (a gain at every seed and block) and a success-test control per seed; ``headline_label``:
    the headline setting in words (``Scale.headline_label``)."""
    return [
        Check.of(f"token accuracy, d_model {e.widths[seed][-1]} minus {e.widths[seed][0]}, block {b}, seed {seed} "
                 f"(each rung its {headline_label})", gain, "fraction of tokens", ">", 0.0,
                 **catalogued(f"S3.5/gain-block-{b}-seed-{seed}", "block 1" if b == 1 else "deeper blocks", b=b))
        for (seed, b), gain in e.gains.items()
    ] + [
        Check.of(f"fraction of the narrowest rung's prompts passing S3's success test (block 1, seed {seed}, "
                 f"{headline_label})", est, "fraction of prompts", ">", SUCCESS_MAJORITY,
                 role="control",
                 **catalogued(f"S3.5/narrowest-success-seed-{seed}"))
        for seed, est in e.success.items()
    ]
