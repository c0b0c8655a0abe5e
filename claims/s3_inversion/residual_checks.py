"""S3.11's checks as a pure function of its estimates: ``residual_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s3.py``) drive the same function to hold and to fail each check.
"""

from dataclasses import dataclass, field

import numpy as np

from claims.s3_inversion.convergence import convergence_checks
from claims.s3_inversion.scope import UNTRAINED_INVERTS, works_check
from claims.s3_inversion.source_setting import source_setting_reading
from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

HALF = 0.5  # "destroys" (keeps less than half) against "little change" (keeps more than half)
MATCHED = 0.5  # control: most prompts pass S3's success test without the residual


@dataclass(frozen=True)
class ResidualEstimates:
    """What S3.11's test measures on a trained model and its untrained twin, block 1, over the reported prompts.

    Attributes:
        kept: the share of the trained model's recovery above chance kept without the attention residual,
            (removed − chance) / (intact − chance) (fraction).
        twin_kept: the same of its untrained twin.
        success: fraction of the trained model's prompts passing S3's success test without the residual (exact).
        twin_works: fraction of prompts on which the twin's intact block 1 beats chance (exact).
        kept_longer, twin_longer: the shares after the headline descents continued to 5N (None where not
            continued: the trained share where decided, the twin's where it fails).
        source_setting: (kept, twin_kept) with every descent in S3's own setting (readings beside the headline,
            issue 77); () at source scale, where the headline is S3's setting.
        context: not a measurement: the arguments ``residual_checks`` takes after the
            estimates (the two models' names, the headline reading, whether at source scale, each one's N).
        accuracy: shown beside the checks, deciding nothing: {model: [headline token accuracy intact, removed]}.
        success_by_setting: shown: {model: (prompts, settings) S3's success test without the residual}.
        examples: shown: {report title: decoded examples}; prompts: shown: the prompts inverted.
    """

    kept: Estimate
    twin_kept: Estimate
    success: Estimate
    twin_works: Estimate
    kept_longer: Estimate | None = None
    twin_longer: Estimate | None = None
    source_setting: tuple = ()
    context: tuple = field(default=(), compare=False)
    accuracy: dict[str, list[Estimate]] = field(default_factory=dict, compare=False)
    success_by_setting: dict[str, np.ndarray] = field(default_factory=dict, compare=False)
    examples: dict = field(default_factory=dict, compare=False)
    prompts: int = field(default=0, compare=False)


def twin_works_check(twin_works: Estimate, twin: str) -> Check:
    """The control that the twin's intact block 1 inverts above chance, as S3 says an untrained block does."""
    return works_check(twin_works, f"prompts on which {twin}'s intact block 1 recovers more tokens than the random "
                       "start (chance)", UNTRAINED_INVERTS, key="S3.11/twin-block-1-beats-chance")


def residual_checks(e: ResidualEstimates, model: str, twin: str, headline_reading: str, source: bool,
                    steps: int, twin_steps: int) -> list[Check]:
    """S3.11's two claim checks (the trained share under half, the twin's over), their convergence controls where
    a longer value is given, the success-test control and the twin's block-1 control.

    Args:
        model, twin: the two models' names; headline_reading: ``Scale``'s words; source: whether S3's own setting
            is the headline (``Scale.source``); steps, twin_steps: their N.
    """
    shares = [
        Check.of(f"share of {model}'s recovery above chance kept without the attention residual",
                 e.kept, "fraction", "<", HALF,
                 **catalogued("S3.11/trained-share-of-recovery-above-chance-kept-without-attention-residual",
                              HALF=HALF, headline_reading=headline_reading)),
        Check.of(f"share of {twin}'s recovery above chance kept without the attention residual",
                 e.twin_kept, "fraction", ">", HALF,
                 **catalogued("S3.11/twin-share-of-recovery-above-chance-kept-without-attention-residual", HALF=HALF)),
    ]
    longer = [c for check, more, n, untrained in zip(shares, (e.kept_longer, e.twin_longer), (steps, twin_steps),
                                                     (False, True)) if more is not None
              for c in convergence_checks(check, more, n, untrained)]
    return [
        *shares, *longer, *(source_setting_reading(s, own) for s, own in zip(shares, e.source_setting)),
        Check.of(f"fraction of {model}'s prompts passing S3's success test without the attention residual "
                 + ("(S3's setting)" if source else "(the setting that passes more)"),
                 e.success, "fraction of prompts", ">", MATCHED, role="control",
                 **catalogued("S3.11/fraction-of-s-prompts-passing-s3-s-success-test-without-the-attention",
                              MATCHED=MATCHED)),
        twin_works_check(e.twin_works, twin),
    ]
