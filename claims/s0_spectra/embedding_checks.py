"""S0.1 and S0.2's checks as pure functions of their estimates: ``embedding_measures.py`` measures, these decide, and
the self-tests (``tests/cases_s0.py``, ``tests/test_s0_checks.py``) drive the same functions to hold and to fail.

S0 Fig 2: the final layers' law spans about one decade of power over the 3.0 decades of frequency of 2047
positions, an exponent of about -1/3. "Flat" (uniform power) is taken as an exponent within a third of that
(``FLAT_SLOPE``).
"""

from dataclasses import dataclass, field

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

FLAT_SLOPE = 0.1


@dataclass(frozen=True)
class FlatEstimates:
    """What S0.1's test measures on the token-embedding states, over sequences.

    Attributes:
        slope: the power-law exponent of their mean spectrum (log-log slope).
        shuffled: the magnitude of that exponent with positions shuffled within each sequence (white by construction).
    """

    slope: Estimate
    shuffled: Estimate


def flat_checks(e: FlatEstimates) -> list[Check]:
    """S0.1's checks: the exponent inside ±``FLAT_SLOPE`` (two claim checks) and the shuffled-position control."""
    return [
        Check.of("token-embedding exponent, above the lower edge", e.slope, "log-log slope", ">", -FLAT_SLOPE,
                 **catalogued("S0.1/token-embedding-exponent-above-the-lower-edge", FLAT_SLOPE=FLAT_SLOPE)),
        Check.of("token-embedding exponent, below the upper edge", e.slope, "log-log slope", "<", FLAT_SLOPE,
                 **catalogued("S0.1/token-embedding-exponent-below-the-upper-edge", FLAT_SLOPE=FLAT_SLOPE)),
        Check.of("shuffled-position control: magnitude of the shuffled embeddings' exponent", e.shuffled,
                 "log-log slope", "<", FLAT_SLOPE, role="control",
                 **catalogued("S0.1/shuffled-position-control-magnitude-of-the-shuffled-embeddings")),
    ]


@dataclass(frozen=True)
class TiltEstimates:
    """What S0.2's test measures, over sequences: low-band minus high-band gain of tok+pos over tok (decades).

    Attributes:
        trained: the trained model's tilt.
        learned: its tilt minus its untrained twin's, paired on the same token ids.
        hann: the trained model's tilt, Hann-windowed with each sequence's mean removed.
        twin: shown beside the checks, deciding nothing: the untrained twin's tilt (a point value).
    """

    trained: Estimate
    learned: Estimate
    hann: Estimate
    twin: float = field(default=float("nan"), compare=False)


def tilt_checks(e: TiltEstimates) -> list[Check]:
    """S0.2's claim checks (the tilt, and the trained model's over its twin's) and its Hann-window control.

    The control guards the pass (``guards_pass``): it is the claim's own tilt through another window, so where the
    tilt genuinely fails it fails too, and the record must read as the claim failing (a finding), not as a failed
    control.
    """
    return [
        Check.of("low-frequency tilt added by the position embeddings", e.trained, "decades", ">", 0.0,
                 **catalogued("S0.2/low-frequency-tilt-added-by-the-position-embeddings")),
        Check.of("tilt of the trained model minus its untrained twin's", e.learned, "decades", ">", 0.0,
                 **catalogued("S0.2/tilt-of-the-trained-model-minus-its-untrained-twin-s")),
        Check.of("the same tilt, Hann-windowed with each sequence's mean removed", e.hann, "decades", ">", 0.0,
                 role="control", guards_pass=True,
                 **catalogued("S0.2/the-same-tilt-hann-windowed-with-each-sequence-s-mean-removed")),
    ]
