"""S0.3, S0.4 and S0.5's checks as pure functions of their estimates: ``straightening_measures.py`` measures, these
decide, and the self-tests (``tests/cases_s0.py``) drive the same functions to hold and to fail each check.

S0 (text under Fig 2): "the transformer output's power law only spans ~1 OOM" over rfftfreq(2048)'s band, 1/2048 ..
1/2 cycles/token = 3.0 decades: an exponent of about -1/3. "About" is taken as a factor of two either way in span
(0.5 .. 2 decades), so the exponent lies in [-2/3.0, -0.5/3.0]; images' ~5 OOM (exponent about -1.7) fall far
outside.
"""

from dataclasses import dataclass, field

import numpy as np

from fixtures.catalogue_text import catalogued
from latent_instruments.stats import Estimate
from reports.checks import Check

S0_BAND_DECADES = np.log10(1024)  # rfftfreq(2048): 1/2048 .. 1/2
SPAN_LOW, SPAN_HIGH = 0.5, 2.0


@dataclass(frozen=True)
class StraighteningEstimates:
    """What S0.3's test measures on a trained model's hidden-state spectra, each over sequences (the bootstrap unit).

    Attributes:
        trend: Spearman correlation of the power-law scatter with depth, start layer to last block (ρ).
        drop: scatter at the last block minus at the start layer (decades).
        slope: the last block's power-law exponent (log-log slope).
        windowed: ``drop`` of the Hann-windowed, mean-removed spectra (decades).
        ordered: ``drop`` minus that of the position-shuffled stream (decades, paired).
    """

    trend: Estimate
    drop: Estimate
    slope: Estimate
    windowed: Estimate
    ordered: Estimate


def straightening_checks(e: StraighteningEstimates, start: str, last: str) -> list[Check]:
    """S0.3's checks: four claim checks (trend, straightening, a power law, the leakage check) and the
    position-shuffled control guarding a pass; ``start`` and ``last`` name the layers compared ("embed",
    "block 6")."""
    return [
        Check.of(f"trend: Spearman correlation of power-law scatter with depth, {start} to {last}",
                 e.trend, "ρ", "<", 0.0,
                 **catalogued("S0.3/trend-spearman-correlation-of-power-law-scatter-with-depth-to")),
        Check.of(f"straightening: scatter at {last} minus at {start}", e.drop, "decades", "<", 0.0,
                 **catalogued("S0.3/straightening-scatter-at-minus-at")),
        Check.of(f"into a power law: exponent at {last}", e.slope, "log-log slope", "<", 0.0,
                 **catalogued("S0.3/into-a-power-law-exponent-at")),
        Check.of(f"leakage check: straightening of the Hann-windowed spectra, {last} minus "
                 f"{start}", e.windowed, "decades", "<", 0.0,
                 **catalogued("S0.3/leakage-check-straightening-of-the-hann-windowed-spectra-minus")),
        Check.of(f"straightening, {last} minus {start}, minus that of the position-shuffled "
                 "stream", e.ordered, "decades", "<", 0.0,
                 role="control", guards_pass=True,
                 **catalogued("S0.3/straightening-minus-minus-that-of-the-position-shuffled-stream")),
    ]


@dataclass(frozen=True)
class SpanEstimates:
    """What S0.4's test measures on the last block's spectrum, over sequences.

    Attributes:
        slope: its power-law exponent (log-log slope).
        windowed: the exponent of its Hann-windowed, mean-removed spectrum.
        by_layer: shown beside the checks, deciding nothing: every layer's exponent.
    """

    slope: Estimate
    windowed: Estimate
    by_layer: list[Estimate] = field(default_factory=list, compare=False)


def span_checks(e: SpanEstimates, last: str) -> list[Check]:
    """S0.4's checks: the exponent inside S0's span of about one decade over 3.0 (two claim checks), and the
    Hann-window control guarding a pass; ``last`` names the last block."""
    steep, shallow = -SPAN_HIGH / S0_BAND_DECADES, -SPAN_LOW / S0_BAND_DECADES
    return [
        Check.of(f"exponent at {last}, steeper than half a decade per 3.0", e.slope, "log-log slope", "<",
                 shallow,
                 **catalogued("S0.4/exponent-at-steeper-than-half-a-decade-per-3-0", steep=steep, shallow=shallow)),
        Check.of(f"exponent at {last}, shallower than two decades per 3.0", e.slope, "log-log slope", ">",
                 steep,
                 **catalogued("S0.4/exponent-at-shallower-than-two-decades-per-3-0", steep=steep, shallow=shallow)),
        Check.of(f"exponent at {last}, Hann-windowed with the mean removed", e.windowed, "log-log slope", "<",
                 0.0, role="control",
                 guards_pass=True, **catalogued("S0.4/exponent-at-hann-windowed-with-the-mean-removed")),
    ]


@dataclass(frozen=True)
class LearnedEstimates:
    """What S0.5's test measures on a trained model and its untrained twin, positions removed, paired over sequences.

    Attributes:
        learned: straightening from block 1 to the last block, trained minus twin (decades).
        ordered: that difference minus the position-shuffled streams' (decades).
        twin: shown beside the checks, deciding nothing: the twin's straightening, positions removed, from block 1.
    """

    learned: Estimate
    ordered: Estimate
    twin: Estimate | None = field(default=None, compare=False)


def learned_checks(e: LearnedEstimates, last: str) -> list[Check]:
    """S0.5's checks: the trained model straightens more than its twin (claim check), by more than the shuffled
    streams do (control guarding a pass); ``last`` names the last block."""
    return [
        Check.of(f"straightening from block 1 to {last}, positions removed: trained minus twin",
                 e.learned, "decades", "<", 0.0,
                 **catalogued("S0.5/straightening-from-block-1-to-positions-removed-trained-minus-twin")),
        Check.of("the same difference minus that of the position-shuffled streams", e.ordered, "decades", "<", 0.0, role="control",
                 guards_pass=True,
                 **catalogued("S0.5/the-same-difference-minus-that-of-the-position-shuffled-streams")),
    ]
