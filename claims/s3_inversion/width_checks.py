"""S3.5's checks as a pure function of its estimates: ``width_measures.py`` measures, this decides, and the self-tests
(``tests/cases_s3.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass, field

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

SUCCESS_MAJORITY = 0.5  # control: most of the narrowest rung's prompts reach S3's success test


@dataclass(frozen=True)
class WidthEstimates:
    """What S3.5's test measures on a ladder of widths, over the reported prompts.

    Attributes:
        gains: {(training seed, block): token accuracy of the widest rung minus the narrowest, paired}.
        success: {training seed: fraction of the narrowest rung's prompts passing S3's success test} (exact).
        widths: {training seed: the rungs' d_model, narrowest first}.
        seeds: shown beside the checks, deciding nothing: {training seed: its rungs (``LoadedModel``), narrowest
            first}.
        blocks: shown: the blocks inverted (1-based); losses: shown: {rung: held-out bits per character}.
        per_rung: shown: {(training seed, block): each rung's headline token accuracy}.
        prompts: shown: the prompts each rung was inverted on.
    """

    gains: dict[tuple[int, int], Estimate]
    success: dict[int, Estimate]
    widths: dict[int, list[int]]
    seeds: dict[int, list] = field(default_factory=dict, compare=False)
    blocks: list[int] = field(default_factory=list, compare=False)
    losses: dict[str, float] = field(default_factory=dict, compare=False)
    per_rung: dict[tuple[int, int], list[Estimate]] = field(default_factory=dict, compare=False)
    prompts: int = field(default=0, compare=False)


def width_checks(e: WidthEstimates, headline_label: str) -> list[Check]:
    """S3.5's claim checks (a gain at every seed and block) and a success-test control per seed."""
    return [
        Check.of(f"token accuracy, d_model {e.widths[seed][-1]} minus {e.widths[seed][0]}, block {b}, seed {seed} "
                 f"(each rung its {headline_label})", gain, "fraction of tokens", ">", 0.0,
                 **catalogued(f"S3.5/token-accuracy-d-model-minus-block-{b}-seed-{seed}-each-rung-its",
                              "block 1" if b == 1 else "deeper blocks", b=b))
        for (seed, b), gain in e.gains.items()
    ] + [
        Check.of(f"fraction of the narrowest rung's prompts passing S3's success test (block 1, seed {seed}, "
                 f"{headline_label})", est, "fraction of prompts", ">", SUCCESS_MAJORITY,
                 role="control",
                 **catalogued(f"S3.5/narrowest-rung-s3-success-test-block-1-seed-{seed}",
                              SUCCESS_MAJORITY=SUCCESS_MAJORITY))
        for seed, est in e.success.items()
    ]
