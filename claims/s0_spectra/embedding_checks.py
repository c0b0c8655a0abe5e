"""S0.1 and S0.2's checks as pure functions of their estimates: ``embedding_measures.py`` measures, these decide, and
the self-tests (``tests/cases_s0.py``, ``tests/test_s0_checks.py``) drive the same functions to hold and to fail.
Every number they decide with is in the topic's home, ``embedding.toml``, with its derivation.

S0 Fig 2: the final layers' law spans about one decade of power over S0's band of frequency (``S0_BAND_DECADES``
decades, in S0.4's home ``straightening.toml``), an exponent of about -1/3. "Flat" (uniform power) is taken as an
exponent within a third of that (``FLAT_SLOPE``).
"""

from claims.s0_spectra.embedding_measures import FlatEstimates, TiltEstimates
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

FLAT_SLOPE = numbers(__file__, "FLAT_SLOPE")


def flat_checks(e: FlatEstimates) -> list[Check]:
    """S0.1's checks: the exponent inside ±``FLAT_SLOPE`` (two claim checks) and the shuffled-position control."""
    return [
        Check.of("token-embedding exponent, above the lower edge", e.slope, "log-log slope", ">", -FLAT_SLOPE,
                 **catalogued("S0.1/lower-edge")),
        Check.of("token-embedding exponent, below the upper edge", e.slope, "log-log slope", "<", FLAT_SLOPE,
                 **catalogued("S0.1/upper-edge")),
        Check.of("shuffled-position control: magnitude of the shuffled embeddings' exponent", e.shuffled,
                 "log-log slope", "<", FLAT_SLOPE, role="control",
                 **catalogued("S0.1/shuffled-control")),
    ]


def tilt_checks(e: TiltEstimates) -> list[Check]:
    """S0.2's claim checks (the tilt, and the trained model's over its twin's) and its Hann-window control.

    The control guards the pass (``guards_pass``): it is the claim's own tilt through another window, so where the
    tilt genuinely fails it fails too, and the record must read as the claim failing (a finding), not as a failed
    control.
    """
    return [
        Check.of("low-frequency tilt added by the position embeddings", e.trained, "decades", ">", 0.0,
                 **catalogued("S0.2/tilt")),
        Check.of("tilt of the trained model minus its untrained twin's", e.learned, "decades", ">", 0.0,
                 **catalogued("S0.2/learned")),
        Check.of("the same tilt, Hann-windowed with each sequence's mean removed", e.hann, "decades", ">", 0.0,
                 role="control", guards_pass=True,
                 **catalogued("S0.2/hann-control")),
    ]
