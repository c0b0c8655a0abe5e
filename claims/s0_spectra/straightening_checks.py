"""S0.3, S0.4 and S0.5's checks as pure functions of their estimates: ``straightening_measures.py`` measures, these
decide, and the self-tests (``tests/cases_s0.py``) drive the same functions to hold and to fail each check. Every
number they decide with is in the topic's home, ``straightening.toml``, with its derivation.

S0 (text under Fig 2): "the transformer output's power law only spans ~1 OOM" (``S0_SPAN``) over rfftfreq(2048)'s
band, 1/2048 .. 1/2 cycles/token (``S0_BAND_DECADES``): an exponent of about -1/3. "About" is taken as a factor of
two either way in span (``SPAN_LOW`` .. ``SPAN_HIGH`` decades), so the exponent lies in [``STEEP``, ``SHALLOW``];
images' ~5 OOM (exponent about -1.7) fall far outside.
"""

from claims.s0_spectra.straightening_measures import (
    LearnedEstimates, LastBlockContext, SpanEstimates, StraighteningContext, StraighteningEstimates,
)
from fixtures.catalogue_text import catalogued
from fixtures.homes import numbers
from reports.checks import Check

STEEP, SHALLOW = numbers(__file__, "STEEP", "SHALLOW")


def straightening_checks(e: StraighteningEstimates, context: StraighteningContext) -> list[Check]:
    """S0.3's checks: four claim checks (trend, straightening, a power law, the leakage check) and the
    position-shuffled control guarding a pass; ``context`` names the layers compared ("embed", "block 6")."""
    start, last = context.start, context.last
    return [
        Check.of(f"trend: Spearman correlation of power-law scatter with depth, {start} to {last}",
                 e.trend, "ρ", "<", 0.0,
                 **catalogued("S0.3/trend")),
        Check.of(f"straightening: scatter at {last} minus at {start}", e.drop, "decades", "<", 0.0,
                 **catalogued("S0.3/straightening")),
        Check.of(f"into a power law: exponent at {last}", e.slope, "log-log slope", "<", 0.0,
                 **catalogued("S0.3/power-law")),
        Check.of(f"leakage check: straightening of the Hann-windowed spectra, {last} minus "
                 f"{start}", e.windowed, "decades", "<", 0.0,
                 **catalogued("S0.3/leakage")),
        Check.of(f"straightening, {last} minus {start}, minus that of the position-shuffled "
                 "stream", e.ordered, "decades", "<", 0.0,
                 role="control", guards_pass=True,
                 **catalogued("S0.3/shuffled-control")),
    ]


def span_checks(e: SpanEstimates, context: LastBlockContext) -> list[Check]:
    """S0.4's checks: the exponent inside [``STEEP``, ``SHALLOW``], S0's span of about one decade over its band (two
    claim checks), and the Hann-window control guarding a pass; ``context`` names the last block."""
    last = context.last
    return [
        Check.of(f"exponent at {last}, steeper than half a decade per 3.0", e.slope, "log-log slope", "<",
                 SHALLOW,
                 **catalogued("S0.4/shallow-edge")),
        Check.of(f"exponent at {last}, shallower than two decades per 3.0", e.slope, "log-log slope", ">",
                 STEEP,
                 **catalogued("S0.4/steep-edge")),
        Check.of(f"exponent at {last}, Hann-windowed with the mean removed", e.windowed, "log-log slope", "<",
                 0.0, role="control",
                 guards_pass=True, **catalogued("S0.4/hann-control")),
    ]


def learned_checks(e: LearnedEstimates, context: LastBlockContext) -> list[Check]:
    """S0.5's checks: the trained model straightens more than its twin (claim check), by more than the shuffled
    streams do (control guarding a pass); ``context`` names the last block."""
    return [
        Check.of(f"straightening from block 1 to {context.last}, positions removed: trained minus twin",
                 e.learned, "decades", "<", 0.0,
                 **catalogued("S0.5/learned")),
        Check.of("the same difference minus that of the position-shuffled streams", e.ordered, "decades", "<", 0.0, role="control",
                 guards_pass=True,
                 **catalogued("S0.5/shuffled-control")),
    ]
