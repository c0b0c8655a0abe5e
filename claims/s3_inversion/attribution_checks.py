"""S3.8's checks as a pure function of its estimates: ``attribution_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s3.py``, ``tests/test_s3_checks.py``) drive the same function to hold and to fail.
"""

from dataclasses import dataclass, field

import numpy as np

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

AGREES = 0.5  # the two attributions agree: mean per-prompt Spearman ρ above ½ (derivation: the catalogue row of its check)


@dataclass(frozen=True)
class AgreementEstimates:
    """What S3.8's test measures over the prompts whose rank correlation is defined (rank correlation units).

    Attributes:
        agreement: mean Spearman ρ over positions of gradient×input and occlusion.
        twin: the same with the untrained twin's gradient×input (a broken-instrument control).
        rho, twin_rho: shown beside the checks, deciding nothing: per-prompt ρ (NaN where undefined).
        undefined: shown: why prompts were left out (the sentence of the procedure).
        readings: shown: {what: mean ρ over the prompts with a defined correlation}, the claim's and the control's
            beside the readings that locate them (a random attribution, occlusion by another frequent token).
    """

    agreement: Estimate
    twin: Estimate
    rho: np.ndarray | None = field(default=None, compare=False)
    twin_rho: np.ndarray | None = field(default=None, compare=False)
    undefined: str = field(default="", compare=False)
    readings: dict[str, float] = field(default_factory=dict, compare=False)


def agreement_checks(e: AgreementEstimates) -> list[Check]:
    """S3.8's claim check and its broken-instrument control."""
    return [
        Check.of("mean Spearman ρ(gradient×input, occlusion) over positions",
                 e.agreement, "rank correlation", ">", AGREES,
                 **catalogued("S3.8/mean-spearman-gradient-input-occlusion-over-positions", AGREES=AGREES)),
        Check.of("mean Spearman ρ(untrained twin's gradient×input, occlusion)",
                 e.twin, "rank correlation", "<", AGREES, role="control",
                 **catalogued("S3.8/mean-spearman-untrained-twin-s-gradient-input-occlusion", AGREES=AGREES)),
    ]
