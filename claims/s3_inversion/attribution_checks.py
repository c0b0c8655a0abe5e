"""S3.8's checks as a pure function of its estimates: ``attribution_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s3.py``, ``tests/test_s3_checks.py``) drive the same function to hold and to fail. The
number it decides with, AGREES, is in the topic's home, ``attribution.toml``, with its derivation.
"""

from claims.s3_inversion.attribution_measures import AgreementEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

AGREES = numbers(__file__, "AGREES")  # the two attributions agree: mean per-prompt Spearman ρ above it


def agreement_checks(e: AgreementEstimates) -> list[Check]:
    """S3.8's claim check and its broken-instrument control."""
    return [
        Check.of("mean Spearman ρ(gradient×input, occlusion) over positions",
                 e.agreement, "rank correlation", ">", AGREES,
                 **catalogued("S3.8/agreement")),
        Check.of("mean Spearman ρ(untrained twin's gradient×input, occlusion)",
                 e.twin, "rank correlation", "<", AGREES, role="control",
                 **catalogued("S3.8/twin-control")),
    ]
