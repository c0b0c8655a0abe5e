"""report.md and report.html from a run's :class:`reports.document.RunDocument` (reports/SCHEMA.md).

Layout, for 42 claims × 20 subjects, read in a minute: the header; what changed since the baseline; the
summary, one line per claim (on how many subjects it holds, where it fails or is inconclusive, what changed
since the last run), each claim linked to its section; the claims × subjects matrix, grouped (trained zoo,
untrained twins, groups, references, your models), its claim column fixed while it scrolls sideways; then,
collapsed, the coverage of the catalogue, the agreement between builds and the models; then one section per
claim: statement and source once, each threshold's derivation once, a table of subjects, figures, and each
subject's details (collapsed). What the sections hold is decided once, in ``reports.sections`` (the tables come
from ``reports.tables``); this module writes that model twice, as markdown and as HTML. Figures are PNG files
beside the report (``figures/``, see :func:`figures`), loaded as the reader scrolls to them.
"""

import html
import math
import os
import re

from joblib import Parallel, delayed

from reports import plots
from reports.checks import FAILS_AS_EXPECTED, HOLDS, INCONCLUSIVE, NOT_INFORMATIVE, RED, ClaimRecord
from reports.document import RunDocument
from reports.sections import Italic, Figures, Lines, Section, Table, report_sections
from reports.budgets import Budgets
from reports.tables import label


_OPENS_A_TAG = re.compile(r"<(?!br>)(?=[A-Za-z/!?])")  # "<" that would open an HTML tag; the tables' <br> kept


def md_text(text: str) -> str:
    """Text for report.md with every "<" that would open an HTML tag (``<img``, ``</``, ``<!``) written ``&lt;``,
    so that names from the data (a folder called ``<img src=x onerror=...>``) show as text (issue 74, case 16);
    a comparison ("< 0.076") and the tables' own ``<br>`` stay as written."""
    return _OPENS_A_TAG.sub("&lt;", text)


def md_table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table (cells' "|" escaped, and "<" that would open a tag: :func:`md_text`)."""
    def esc(c):
        return md_text(str(c)).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(map(esc, header)) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(map(esc, row)) + " |" for row in rows])


STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}main{max-width:1300px}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.meta{color:#555;font-size:13px}h2{margin-top:1.8em}.figs{display:flex;flex-wrap:wrap;gap:8px}
.figs img{max-width:49%}.red{background:#fde2e2}.ok{background:#e6f4e6}.na{background:#eee}.undecided{background:#fff3c4}
details{margin:.4em 0}summary{cursor:pointer;font-weight:600}.wide{overflow-x:auto;max-width:100%}
.wide td:first-child,.wide th:first-child{position:sticky;left:0;background:#fff;z-index:1;min-width:7em}
.wide th:first-child{background:#f3f3f3}"""


CELL_CLASS = {HOLDS: "ok", FAILS_AS_EXPECTED: "na", NOT_INFORMATIVE: "na", INCONCLUSIVE: "undecided",
              **{outcome: "red" for outcome in RED}}  # a cell's colour, by the outcome it shows


def _cls(cell) -> str:
    """The class attribute of a cell that shows an outcome (``reports.tables.OutcomeCell``), else ""."""
    outcome = getattr(cell, "outcome", None)
    return f" class='{CELL_CLASS[outcome]}'" if outcome in CELL_CLASS else ""


def html_table(header: list[str], rows: list[list[str]], groups: list[tuple[str, int]] | None = None,
               links: bool = False, colour: bool = True) -> str:
    """An HTML table; "<br>" in a cell is kept, every other character escaped; outcome cells coloured.

    Args:
        groups: a header row above the header, [(label, columns spanned)], the first column not counted.
        links: the first column's cells link to the claim sections ("S0.1" → "#S0.1").
        colour: colour cells that start with an outcome (off where a cell lists several).
    """
    def td(c, first):
        text = html.escape(str(c)).replace("&lt;br&gt;", "<br>")
        if isinstance(c, Budgets):
            text = f"{curve(c)} {text}"
        if first and links:
            claim = str(c).split()[0]
            text = f"<a href='#{html.escape(claim)}'>{text}</a>"
        return f"<td{_cls(c) if colour else ''}>{text}</td>"
    above = ("<tr><th></th>" + "".join(f"<th colspan='{n}'>{html.escape(g)}</th>" for g, n in groups) + "</tr>"
             if groups else "")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(td(c, i == 0) for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table>{above}<tr>{head}</tr>{body}</table>"


def curve(cell: Budgets, width: int = 60, height: int = 18) -> str:
    """A small inline SVG of a decision's statistic over its descent budgets (issue 77): the values joined by a line,
    the threshold dashed, x by log steps; the cell's text says the numbers."""
    (n0, _), (n1, _) = cell.points[0], cell.points[-1]
    values = [v for _, v in cell.points] + [cell.threshold]
    low, high = min(values), max(values)
    span = (high - low) or 1.0

    def xy(n: int, v: float) -> str:
        x = 2 + (width - 4) * (math.log(n / n0) / math.log(n1 / n0) if n1 > n0 else 0.0)
        return f"{x:.1f},{2 + (height - 4) * (high - v) / span:.1f}"
    line = " ".join(xy(n, v) for n, v in cell.points)
    y = xy(n0, cell.threshold).split(",")[1]
    return (f"<svg width='{width}' height='{height}' role='img' aria-label='statistic by descent budget'>"
            f"<line x1='0' x2='{width}' y1='{y}' y2='{y}' stroke='#999' stroke-dasharray='2,2'/>"
            f"<polyline points='{line}' fill='none' stroke='#246' stroke-width='1.5'/></svg>")


def collapsed(title: str, inner: str, open_: bool = False) -> str:
    """A <details> block: ``inner`` shown when the reader opens ``title``."""
    return f"<details{' open' if open_ else ''}><summary>{html.escape(title)}</summary>{inner}</details>"


def figure_name(index: int, record: ClaimRecord) -> str:
    """The file of a record's figure under ``figures/``: its place in the records and its claim, e.g. 012-S0.1.png
    (the claim id's characters that could leave the folder replaced: ``reports.confined.plain``)."""
    from reports.confined import plain

    return f"{index:03d}-{plain(str(record.claim))}.png"


FIGURES_IN_PROCESSES = 32  # from this many figures on, they are drawn in worker processes (each costs ~0.3 s)
FIGURE_PROCESSES = 4  # at most this many, and no more than the CPUs
IDLE_SECONDS = 10  # the workers end this long after their last figure


def figures(doc: RunDocument) -> dict[str, bytes | str]:
    """Every record's figure: {file name (:func:`figure_name`): PNG bytes, or why it could not be drawn (a NaN,
    an unknown kind)}. A whole run's figures (``FIGURES_IN_PROCESSES`` or more) are drawn in joblib worker processes,
    one per CPU up to ``FIGURE_PROCESSES``: matplotlib holds the GIL, and drawing them one after another took over a
    minute of a `make claims` run on one core while the other sat idle. Each figure's bytes are the same either way."""
    plotted = {figure_name(i, r): r.plot for i, r in enumerate(doc.records) if r.plot}
    if len(plotted) < FIGURES_IN_PROCESSES:
        return {name: _drawn(plot) for name, plot in plotted.items()}
    processes = min(FIGURE_PROCESSES, os.cpu_count() or 1)
    drawn = Parallel(n_jobs=processes, idle_worker_timeout=IDLE_SECONDS)(delayed(_drawn)(p) for p in plotted.values())
    return dict(zip(plotted, drawn))


def _drawn(plot: dict) -> bytes | str:
    """One record's figure as PNG bytes, or why it could not be drawn."""
    try:
        return plots.render(plot)
    except (TypeError, ValueError, KeyError) as err:
        return str(err)


def _figure(name: str, drawn: bytes | str | None, claim_id: str, record: ClaimRecord) -> str:
    alt = html.escape(f"{claim_id} on {label(record)}")
    if isinstance(drawn, bytes):
        return f"<img alt='{alt}' loading='lazy' src='figures/{html.escape(name)}'>"
    return f"<p class='meta'>figure of {alt} could not be drawn: {html.escape(str(drawn))}</p>"


def _md_line(line) -> str:
    """A line of the section model as markdown: its :class:`reports.sections.Italic` parts in italics."""
    return "".join(f"*{md_text(part)}*" if isinstance(part, Italic) else md_text(part)
                   for part in ((line,) if isinstance(line, str) else line))


def _md_block(block) -> list[str]:
    """One block of the section model as markdown lines (figures have none in report.md)."""
    if isinstance(block, Table):
        return [md_table(block.header, block.rows), ""]
    if isinstance(block, Section):
        return [f"{'#' * block.level} {md_text(block.title)}", "", *[line for b in block.blocks for line in _md_block(b)]]
    if isinstance(block, Lines) and block.lines:
        lines = [_md_line(line) for line in block.lines]
        if block.style == "items":
            return [*(f"- {line}" for line in lines), ""]
        if block.style == "meta":
            return [*(f"{line}  " for line in lines), ""]
        wrap = {"label": "**", "note": "*"}.get(block.style, "")
        return [line for text in lines for line in (f"{wrap}{text}{wrap}", "")]
    return []


def markdown(doc: RunDocument) -> str:
    """report.md: the sections of ``reports.sections.report_sections``, without figures."""
    out = ["# latent-claims report", ""]
    for section in report_sections(doc):
        out += [f"{'#' * section.level} {md_text(section.title)}", ""] if section.title else []
        out += [line for block in section.blocks for line in _md_block(block)]
    return "\n".join(out)


def _html_line(line) -> str:
    """A line of the section model as escaped HTML: its :class:`reports.sections.Italic` parts in italics."""
    return "".join(f"<i>{html.escape(part)}</i>" if isinstance(part, Italic) else html.escape(part)
                   for part in ((line,) if isinstance(line, str) else line))


def _html_block(block, drawn: dict) -> str:
    """One block of the section model as HTML."""
    if isinstance(block, Table):
        table = html_table(block.header, block.rows, groups=block.groups, links=block.links, colour=block.colour)
        return f"<div class='wide'>{table}</div>" if block.wide else table
    if isinstance(block, Section):
        inner = "".join(_html_block(b, drawn) for b in block.blocks)
        return collapsed(block.title, inner) if block.collapsed else f"<h{block.level}>{html.escape(block.title)}</h{block.level}>{inner}"
    if isinstance(block, Figures):
        shown = [_figure(figure_name(i, r), drawn.get(figure_name(i, r)), block.claim, r) for i, r in block.records]
        return "<div class='figs'>" + "".join(shown) + "</div>" if shown and drawn else ""
    if not block.lines:
        return ""
    lines = [_html_line(line) for line in block.lines]
    if block.style == "items":
        return "<ul>" + "".join(f"<li>{line}</li>" for line in lines) + "</ul>"
    if block.style == "meta":
        return "\n".join(f"<div class='meta'>{line}</div>" for line in lines)
    tag = {"label": ("<p><b>", "</b></p>"), "note": ("<p class='meta'><b>", "</b></p>")}.get(block.style, ("<p>", "</p>"))
    return "".join(f"{tag[0]}{line}{tag[1]}" for line in lines)


def to_html(doc: RunDocument, drawn: dict[str, bytes | str] | None = None) -> str:
    """report.html: the sections of report.md, with the figures of ``drawn`` (:func:`figures`; written beside it
    under ``figures/`` by ``reports.writer``); None draws no figures (a check that the document renders)."""
    drawn = drawn or {}
    parts = [f"<!doctype html><meta charset='utf-8'><title>latent-claims {html.escape(str(doc.run_id))}</title>"
             f"<style>{STYLE}</style><main>", "<h1>latent-claims report</h1>",
             "<nav class='meta'><a href='../index.html'>every run</a> · <a href='../trends.html'>trends</a>: each "
             "record's deciding statistic run by run</nav>"]
    for section in report_sections(doc):
        inner = "\n".join(filter(None, (_html_block(block, drawn) for block in section.blocks)))
        if section.collapsed:
            parts.append(collapsed(section.title, inner))
        else:
            anchor = f" id='{html.escape(section.anchor)}'" if section.anchor else ""
            parts += ([f"<h{section.level}{anchor}>{html.escape(section.title)}</h{section.level}>"]
                      if section.title else []) + [inner]
    return "\n".join(parts) + "</main>"
