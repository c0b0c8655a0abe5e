"""Figures of the HTML report, as palette PNG files (matplotlib, no display needed; 64 colours, ~15 KB each).

A claim test puts the data of its figure in ``ClaimRecord.plot`` as
``{"kind": KIND, ...}``; each KIND below draws one.
"""

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402  (matplotlib's own dependency)

DPI = 80  # a 5.5-inch panel is 440 pixels wide: half the report's width, as the figures sit two by two
COLOURS = 64  # the palette: the few colours of a line plot, and their anti-aliasing


def _png(fig) -> bytes:
    """The figure as a palette PNG (a quarter of the RGBA file's size, the same look)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    image = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB").quantize(COLOURS, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _errors(series: dict) -> list[list[float]] | None:
    """matplotlib yerr from a series' "value", "low", "high" lists (None where it has no interval)."""
    if "low" not in series or "high" not in series:
        return None
    return [[v - lo for v, lo in zip(series["value"], series["low"])],
            [hi - v for v, hi in zip(series["value"], series["high"])]]


def series(estimates) -> dict[str, list[float]]:
    """{"value", "low", "high"} lists of a figure's series from estimates (anything with .value/.low/.high)."""
    return {"value": [e.value for e in estimates], "low": [e.low for e in estimates], "high": [e.high for e in estimates]}


def loglog(plot: dict) -> str:
    """Panels of curves on log-log axes, one colour per curve along a gradient (S0's spectra by layer, Fig 2-7).

    plot: {"x": [...], "panels": {title: {curve label: [y...]}}, "xlabel": ..., "ylabel": ...};
    points with x <= 0 (the DC bin) are left out.
    """
    panels = plot["panels"]
    keep = [i for i, x in enumerate(plot["x"]) if x > 0]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, (title, curves) in zip(axes[0], panels.items()):
        cmap = plt.get_cmap("viridis")
        for i, (label, ys) in enumerate(curves.items()):
            ax.loglog([plot["x"][k] for k in keep], [ys[k] for k in keep],
                      color=cmap(i / max(len(curves) - 1, 1)), label=label, lw=1.2)
        ax.set(title=title, xlabel=plot.get("xlabel", ""), ylabel=plot.get("ylabel", ""))
        ax.legend(fontsize=7)
    return _png(fig)


def bars(plot: dict) -> str:
    """Grouped bars with 95 % intervals per category (S4.2's ablation per block), and optional source markers.

    plot: {"title": ..., "categories": [labels], "xlabel": ..., "ylabel": ...,
           "series": {label: {"value": [...], "low": [...], "high": [...]}} (low/high optional),
           "source": {label: [...]} (the source's figures, drawn as black markers; optional)}.
    """
    categories, series = plot["categories"], plot["series"]
    xs0 = list(range(len(categories)))
    fig, ax = plt.subplots(figsize=(max(6.5, 0.5 * len(categories) * len(series)), 3.8))
    width = 0.8 / len(series)
    for j, (label, s) in enumerate(series.items()):
        xs = [x + (j - (len(series) - 1) / 2) * width for x in xs0]
        ax.bar(xs, s["value"], width, yerr=_errors(s), capsize=3, label=label)
    for k, (label, values) in enumerate(plot.get("source", {}).items()):
        ax.plot(xs0, values, ("k--", "k:", "k-.")[k % 3], marker="x", label=label)
    ax.set(title=plot.get("title", ""), xlabel=plot.get("xlabel", ""), ylabel=plot.get("ylabel", ""))
    ax.set_xticks(xs0, [str(c) for c in categories], rotation=45 if len(categories) > 8 else 0)
    ax.legend(fontsize=7)
    return _png(fig)


def lines(plot: dict) -> str:
    """Lines with 95 % intervals against one x axis (S3.5's accuracy by width, S2's norms by depth).

    plot: {"title": ..., "x": [...], "xlabel": ..., "ylabel": ..., "series": {label: {"value": [...],
           "low": [...], "high": [...]}} (low/high optional; a series' own "x" where it covers other points),
           "logx"/"logy": bool, "ylim": [lo, hi] (optional)}.
    """
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for label, s in plot["series"].items():
        ax.errorbar(s.get("x", plot["x"]), s["value"], yerr=_errors(s), marker="o", capsize=3, label=label)
    ax.set(title=plot.get("title", ""), xlabel=plot.get("xlabel", ""), ylabel=plot.get("ylabel", ""))
    if plot.get("logx"):
        ax.set_xscale("log")
    if plot.get("logy"):
        ax.set_yscale("log")
    if plot.get("ylim"):
        ax.set_ylim(*plot["ylim"])
    ax.legend(fontsize=7)
    return _png(fig)


def beside(plot: dict) -> bytes:
    """Figures of the kinds above drawn next to each other in one image (S0.6: its spectra and the out-of-sample
    calibration of its margin).

    plot: {"figures": [plot, ...]}, each a plot of another kind (not ``beside``).

    Raises:
        KeyError: for an unknown or nested kind.
    """
    images = [Image.open(io.BytesIO(_KINDS_ALONE[p["kind"]](p))).convert("RGB") for p in plot["figures"]]
    joined = Image.new("RGB", (sum(i.width for i in images), max(i.height for i in images)), "white")
    x = 0
    for image in images:
        joined.paste(image, (x, 0))
        x += image.width
    out = io.BytesIO()
    joined.quantize(COLOURS, method=Image.Quantize.MEDIANCUT).save(out, format="PNG", optimize=True)
    return out.getvalue()


_KINDS_ALONE = {"loglog": loglog, "bars": bars, "lines": lines}
KINDS = {**_KINDS_ALONE, "beside": beside}  # every figure is one of these; a new claim adds none


def render(plot: dict) -> bytes:
    """A record's plot as PNG bytes.

    Raises:
        KeyError: for an unknown plot kind.
    """
    return KINDS[plot["kind"]](plot)
