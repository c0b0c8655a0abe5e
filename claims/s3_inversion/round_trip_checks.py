"""S3.1's checks as a pure function of its estimates: ``round_trip_measures.py`` measures, this decides, and the
self-tests (``tests/cases_s3.py``) drive the same function to hold and to fail each check. Every number it decides
with is in the topic's home, ``round_trip.toml``, with its derivation.
"""

from claims.s3_inversion.round_trip_measures import RoundTripEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

EXACT, PERMUTED_CEILING = numbers(__file__, "EXACT", "PERMUTED_CEILING")  # round_trip.toml, with their derivations


def round_trip_checks(e: RoundTripEstimates) -> list[Check]:
    """S3.1's claim check (every prompt comes back: the least token accuracy above EXACT) and the row-shuffled
    control (the largest below PERMUTED_CEILING). Pure: the same estimates give the same checks.

    Returns:
        one claim check and one control, in that order.
    """
    return [
        Check.of("least token accuracy of argmax(W_E[ids]·W_E⁺) over the prompts", e.recovered, "fraction of tokens",
                 ">", EXACT,
                 **catalogued("S3.1/exact", prompts=e.prompts, tokens=e.tokens)),
        Check.of("largest token accuracy over the prompts with W_E's rows shuffled", e.permuted, "fraction of tokens",
                 "<", PERMUTED_CEILING, role="control",
                 **catalogued("S3.1/shuffled-rows")),
    ]
