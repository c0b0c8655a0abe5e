"""Figures of the HTML report, as base64 PNG (matplotlib, no display needed).

A claim test puts the data of its figure in ``ClaimRecord.plot`` as
``{"kind": KIND, ...}``; each KIND below draws one.
"""

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def spectra(plot: dict) -> str:
    """S0.3: per-layer log-log power spectra, trained next to its untrained twin (as S0 Fig 2/3).

    plot: {"freqs": [...], "panels": {title: {layer label: [psd...]}}}.
    """
    panels = plot["panels"]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, (title, layers) in zip(axes[0], panels.items()):
        cmap = plt.get_cmap("viridis")
        for i, (label, psd) in enumerate(layers.items()):
            ax.loglog(plot["freqs"][1:], psd[1:], color=cmap(i / max(len(layers) - 1, 1)), label=label, lw=1.2)
        ax.set(title=title, xlabel="frequency (cycles/token)", ylabel="power")
        ax.legend(fontsize=7)
    return _png(fig)


def block_bars(plot: dict) -> str:
    """S4.2: per-block Hellinger distance with attention or FFN output dropped, with 95 % intervals.

    plot: {"title": ..., "blocks": [1..L], "series": {label: {"value": [...], "low": [...], "high": [...]}},
           "source": {label: [...]} (drawn only where the block count matches the source's 6)}.
    """
    blocks, series = plot["blocks"], plot["series"]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    width = 0.8 / len(series)
    for j, (label, s) in enumerate(series.items()):
        xs = [b + (j - (len(series) - 1) / 2) * width for b in blocks]
        errs = [[v - lo for v, lo in zip(s["value"], s["low"])], [hi - v for v, hi in zip(s["value"], s["high"])]]
        ax.bar(xs, s["value"], width, yerr=errs, capsize=3, label=label)
    for label, values in plot.get("source", {}).items():
        ax.plot(blocks, values, "k--" if "FFN" in label else "k:", marker="x", label=label)
    ax.set(title=plot.get("title", ""), xlabel="block", ylabel="Hellinger distance to the full model", xticks=blocks)
    ax.legend(fontsize=7)
    return _png(fig)


def ladder(plot: dict) -> str:
    """S3.5: token recovery accuracy against width, with 95 % intervals.

    plot: {"title": ..., "widths": [...], "series": {label: {"value": [...], "low": [...], "high": [...]}}}.
    """
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for label, s in plot["series"].items():
        errs = [[v - lo for v, lo in zip(s["value"], s["low"])], [hi - v for v, hi in zip(s["value"], s["high"])]]
        ax.errorbar(plot["widths"], s["value"], yerr=errs, marker="o", capsize=3, label=label)
    ax.set(title=plot.get("title", ""), xlabel="d_model", ylabel="token recovery accuracy", ylim=(-0.02, 1.02),
           xticks=plot["widths"])
    ax.legend(fontsize=7)
    return _png(fig)


KINDS = {"spectra": spectra, "block_bars": block_bars, "ladder": ladder}


def render(plot: dict) -> str:
    """Base64 PNG of a record's plot.

    Raises:
        KeyError: for an unknown plot kind.
    """
    return KINDS[plot["kind"]](plot)
