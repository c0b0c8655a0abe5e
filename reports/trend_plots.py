"""The trends page's plots (``reports.trend_page``): one small matplotlib SVG per record, night by night.

Each plot is a sparkline: the headline statistic of each night as a dot coloured by the night's outcome, its
interval as a vertical bar, the threshold as a dashed line, and a vertical line before each night where something
changed (``reports.trends.Mark``: procedure version, weights, torch or transformers, commit). The numbers (last
value, threshold, unit, the nights' dates) are the page's text beside it, so the plot has no axes.

343 records × 60 nights in under 10 s on 2 cores: one figure and its artists are made once (:class:`Sparklines`)
and each record only replaces their data before ``savefig`` (clearing and redrawing axes was ten times slower);
the SVG's coordinates are rounded to 0.1 pt, its whitespace and element ids dropped, and it goes into the page
as an ``<img>`` data URL, which the browser decodes only when it is scrolled to (``loading='lazy'``) and whose ids
cannot clash with another plot's.
"""

import functools
import io
import math
import re
from urllib.parse import quote

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from reports.checks import OUTCOMES, Outcome  # noqa: E402
from reports.trends import Series, Mark  # noqa: E402

# A dot's colour by outcome (the report's cell colours, darker: a dot is small).
OUTCOME_COLOURS = {Outcome.HOLDS: "#2e7d32", Outcome.FAILS: "#c62828", Outcome.FAILS_AS_EXPECTED: "#757575",
                   Outcome.INCONCLUSIVE: "#e0a000", Outcome.HOLDS_UNEXPECTEDLY: "#ad1457",
                   Outcome.CONTROL_FAILED: "#6a1b9a", Outcome.NOT_INFORMATIVE: "#9e9e9e", Outcome.ERROR: "#000000"}
# A mark's line by kind: (colour, line style); the page's legend shows the same.
MARK_STYLES = {"version": ("#6a1b9a", "-"), "weights": ("#1565c0", "-"), "packages": ("#ef6c00", "-"),
               "commit": ("#b0b0b0", ":")}
WIDTH, HEIGHT = 3.2, 0.8  # inches: 230 × 58 pt, a card of the page's grid
NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}
SVG_SETTINGS = {"svg.fonttype": "none", "svg.hashsalt": "latent-claims"}  # text as text; the same plot, the same bytes


@functools.cache
def sparklines() -> "Sparklines":
    """This process's :class:`Sparklines`, made on first use (its figure costs more than a small page's plots: a
    run's report writes the page after every run)."""
    return Sparklines()


class Sparklines:
    """Draws :meth:`svg` for one series after another on one matplotlib figure (not thread-safe: one per thread)."""

    def __init__(self) -> None:
        self.figure = Figure(figsize=(WIDTH, HEIGHT))
        self.axes = self.figure.add_axes((0.01, 0.06, 0.98, 0.88))
        self.axes.set_axis_off()
        (self.intervals,) = self.axes.plot([], [], color="#9a9a9a", lw=0.8)
        self.threshold = self.axes.axhline(0.0, color="#333333", ls="--", lw=0.8)
        self.marks = {kind: self.axes.plot([], [], color=c, ls=s, lw=0.9)[0] for kind, (c, s) in MARK_STYLES.items()}
        self.dots = {o: self.axes.plot([], [], ls="none", marker="o", ms=4, mew=0, color=OUTCOME_COLOURS[o])[0]
                     for o in OUTCOMES}

    def svg(self, series: Series, nights: int, marks: list[Mark]) -> str:
        """The series' plot as SVG text (no XML header), or "" where no reading has a finite headline.

        Args:
            series: one record's readings.
            nights: how many nights its command has (the x axis spans all of them, so cards line up).
            marks: the changes to draw (the command's and the record's own), each before its night.
        """
        points = [(i, r.headline, r.outcome) for i, r in series.readings if r.headline and r.headline.finite]
        if not points:
            return ""
        low = min(min(h.ci_low, h.threshold) for _, h, _ in points)
        high = max(max(h.ci_high, h.threshold) for _, h, _ in points)
        pad = (high - low) * 0.08 or abs(high) * 0.1 or 1.0
        bottom, top = low - pad, high + pad
        self.intervals.set_data(*_broken([(i, i) for i, _, _ in points], [(h.ci_low, h.ci_high) for _, h, _ in points]))
        for outcome, line in self.dots.items():
            line.set_data([i for i, _, o in points if o == outcome], [h.value for _, h, o in points if o == outcome])
        self.threshold.set_ydata([points[-1][1].threshold] * 2)
        for kind, line in self.marks.items():
            at = sorted({m.night - 0.5 for m in marks if m.kind == kind})
            line.set_data(*_broken([(x, x) for x in at], [(bottom, top)] * len(at)))
        self.axes.set_xlim(-0.6, max(nights, 2) - 0.4)
        self.axes.set_ylim(bottom, top)
        buffer = io.StringIO()
        with matplotlib.rc_context(SVG_SETTINGS):
            self.figure.savefig(buffer, format="svg", metadata=NO_METADATA)
        return compact(buffer.getvalue())


def _broken(xs: list[tuple[float, float]], ys: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """Segments as one matplotlib line broken by NaN (one SVG path for all of them, not one element each)."""
    x = [v for a, b in xs for v in (a, b, math.nan)]
    y = [v for a, b in ys for v in (a, b, math.nan)]
    return x, y


NUMBER = re.compile(r"(\d+\.\d)\d+")


def compact(svg: str) -> str:
    """matplotlib's SVG without its XML header and doctype, element ids of groups, and whitespace between
    elements, its coordinates rounded to 0.1 pt (a tenth of a pixel at 96 dpi): about half the bytes."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r' id="(figure|axes|patch|line2d)_\d+"', "", svg)
    svg = re.sub(r">\s+<", "><", svg)
    svg = re.sub(r"\s*\n\s*", " ", svg)
    return NUMBER.sub(r"\1", svg)


def data_url(svg: str) -> str:
    """An SVG as a ``data:image/svg+xml`` URL, percent-encoded only where a URL or an HTML attribute needs it (its
    double quotes made single, so the URL holds no ``"``, ``&``, ``<`` or ``#``): about a third smaller than base64."""
    return "data:image/svg+xml," + quote(svg.replace('"', "'"), safe=" :/=;,.-_()'@!$*+~")


def legend() -> list[tuple[str, str, str]]:
    """(what, colour, line style) of each mark kind, for the page's legend."""
    words = {"version": "procedure version bump", "weights": "new weights digest", "packages": "torch or transformers",
             "commit": "another commit"}
    return [(words[k], c, s) for k, (c, s) in MARK_STYLES.items()]
