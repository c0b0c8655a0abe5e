"""S3.9's checks as pure functions of their estimates: ``between_tokens_measures.py`` measures, these decide, and the
self-tests (``tests/cases_s3.py``) drive the same functions to hold and to fail each check.
"""

from dataclasses import dataclass, field

import numpy as np

from claims.s3_inversion.convergence import convergence_checks
from claims.s3_inversion.scope import UNTRAINED_INVERTS, works_check
from claims.s3_inversion.source_setting import source_setting_reading
from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

HALF = 0.5
RAREST = 1 / 5  # S3: untrained 4096-wide layers find the masked token in "perhaps 1/5ths" of initialisations
SOME = 0.1  # control: the wide layers' inversion recovers some unmasked tokens (S3's own example: a quarter to a half)


@dataclass(frozen=True)
class MaskedEstimates:
    """What S3.9's test measures on a trained model and its twin, from block 1's output without the first position,
    over the reported prompts (exact intervals).

    Attributes:
        masked: fraction of prompts whose masked first token is recovered.
        twin_works: fraction of the twin's prompts whose unmasked tokens mostly come back.
        longer: ``masked`` after the headline descent continued to 5N (None where not continued).
        source_setting: ``masked`` with the descent in S3's own setting (a reading beside the headline, issue 77;
            None at source scale, where the headline is S3's setting).
        setting: shown beside the checks, deciding nothing: the headline setting; run: its ``inversions.Run``.
        unmasked: shown: the unmasked tokens recovered (fraction of tokens).
        twin_masked, twin_unmasked: shown: the twin's masked-token rate and unmasked-token accuracy.
        prompts, reported: shown: the prompts inverted, and those reported.
    """

    masked: Estimate
    twin_works: Estimate
    longer: Estimate | None = None
    source_setting: Estimate | None = None
    setting: str = field(default="", compare=False)
    run: object = field(default=None, compare=False)
    unmasked: Estimate | None = field(default=None, compare=False)
    twin_masked: Estimate | None = field(default=None, compare=False)
    twin_unmasked: float = field(default=float("nan"), compare=False)
    prompts: int = field(default=0, compare=False)
    reported: int = field(default=0, compare=False)


def twin_works_check(twin_works: Estimate, twin: str) -> Check:
    """The control that the same descent gives back most of the untrained twin's unmasked tokens."""
    return works_check(twin_works, f"prompts of {twin} whose unmasked tokens mostly come back (> {HALF})",
                       UNTRAINED_INVERTS, key="S3.9/twin-unmasked-tokens-come-back")


def masked_checks(e: MaskedEstimates, twin: str, steps: int) -> list[Check]:
    """S3.9's claim check (the masked token rarely comes back), the twin's control, and the convergence control
    where ``longer`` is given; ``steps``: N."""
    masked = Check.of("fraction of prompts whose masked first token is recovered (restricted vocabulary)", e.masked,
                      "fraction of prompts", "<", RAREST,
                      **catalogued("S3.9/fraction-of-prompts-whose-masked-first-token-is-recovered-restricted",
                                   RAREST=RAREST))
    return [masked, twin_works_check(e.twin_works, twin),
            *([] if e.longer is None else convergence_checks(masked, e.longer, steps)),
            *([] if e.source_setting is None else [source_setting_reading(masked, e.source_setting)])]


@dataclass(frozen=True)
class WideLayerEstimates:
    """What S3.9's second test measures on single untrained Llama layers of two widths, over initialisations.

    Attributes:
        wider_more: fraction finding the masked token, wider minus narrower (Newcombe, independent proportions).
        wider: the wider layers' fraction finding it (exact).
        unmasked: the least unmasked-token accuracy over the wider layers (per unit).
        fraction: shown beside the checks, deciding nothing: each width's fraction finding the masked token.
        outcomes: shown: (seeds, widths, [masked found, unmasked accuracy]); chosen: {(width, seed): setting}.
    """

    wider_more: Estimate
    wider: Estimate
    unmasked: Estimate
    fraction: list[Estimate] = field(default_factory=list, compare=False)
    outcomes: np.ndarray | None = field(default=None, compare=False)
    chosen: dict = field(default_factory=dict, compare=False)


def wide_layer_checks(e: WideLayerEstimates, widths: tuple[int, int], seeds: int) -> list[Check]:
    """S3.9's untrained claim checks (wider finds more; most wide layers find it) and the unmasked-token control."""
    return [
        Check.of(f"fraction of initialisations finding the masked token, width {widths[1]} minus {widths[0]}",
                 e.wider_more, "fraction of initialisations", ">", 0.0,
                 **catalogued("S3.9/fraction-of-initialisations-finding-the-masked-token-width-minus")),
        Check.of(f"fraction of width-{widths[1]} initialisations finding the masked token", e.wider,
                 "fraction of initialisations", ">", HALF,
                 **catalogued("S3.9/fraction-of-width-initialisations-finding-the-masked-token", HALF=HALF)),
        Check.of(f"least token accuracy at the unmasked positions over the width-{widths[1]} initialisations",
                 e.unmasked, "fraction of tokens", ">", SOME, role="control",
                 **catalogued("S3.9/least-token-accuracy-at-the-unmasked-positions-over-the-width", seeds=seeds)),
    ]
