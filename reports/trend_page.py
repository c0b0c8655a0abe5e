"""``<report dir>/trends.html``: every record's deciding statistic night by night, for a team to read at a glance.

Beside ``index.html`` (``reports.history``), which says in words what changed from one run to the next, this page
shows each claim × model's headline statistic with its interval and threshold over the complete runs of one replay
command (``reports.trends``), one small plot per record (``reports.trend_plots``), coloured by outcome, with marks
where the procedure version, the weights, torch or transformers or the commit changed. At the top, per command:
the records drifting toward their threshold over the last runs and those that flipped. Two selects filter by claim
and by model, preset by the address's ``?claim=S0.3&model=tiny-w96`` (a few lines of inline script; the page needs
no network).

Written by ``reports.writer`` after each run, beside the index, and by ``python -m reports trends RUNS_DIR``.
"""

import html
from pathlib import Path

from models.atomic_files import atomic_write_text
from reports.checks import FAILS_AS_EXPECTED, HOLDS, INCONCLUSIVE, NOT_INFORMATIVE, RED
from reports.document import RunDocument
from reports.history import GENERATOR, index_path, trends_path
from reports.tables import claim_order, natural
from reports.trend_plots import OUTCOME_COLOURS, Sparklines, data_url, legend, sparklines
from reports.trends import (LAST, Drift, Flip, Night, Series, by_command, drift, flips, night_marks, night_of,
                            read_nights, series_marks, series_of)

CARD_CLASS = {HOLDS: "ok", FAILS_AS_EXPECTED: "na", NOT_INFORMATIVE: "na", INCONCLUSIVE: "undecided",
              **{o: "red" for o in RED}}  # a card's left border by its newest outcome, as the report's cells

STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}h2{margin-top:1.6em}h3{margin:1em 0 .3em}
.meta{color:#555;font-size:13px}.grid{display:flex;flex-wrap:wrap;gap:8px}
.card{border:1px solid #ccc;border-left:5px solid #ccc;padding:4px 6px;width:236px;font-size:12px}
.card img{display:block;width:230px;height:58px}.card .t{font-weight:600;overflow-wrap:anywhere}
.ok{border-left-color:#2e7d32}.red{border-left-color:#c62828}.na{border-left-color:#9e9e9e}
.undecided{border-left-color:#e0a000}.filters{position:sticky;top:0;background:#fff;padding:6px 0;z-index:1;
border-bottom:1px solid #ddd}.key span{margin-right:1em;font-size:12px;white-space:nowrap}
.dot{display:inline-block;width:9px;height:9px;border-radius:50%}.bar{display:inline-block;width:14px;height:0;
vertical-align:middle}[hidden]{display:none!important}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px;text-align:left}code{font-size:13px}
.card summary{font-weight:normal}"""

SCRIPT = """const claim=document.getElementById('claim'),model=document.getElementById('model');
function pick(){let n=0;for(const e of document.querySelectorAll('.item')){
e.hidden=(claim.value&&e.dataset.claim!==claim.value)||(model.value&&e.dataset.model!==model.value);
if(!e.hidden&&e.classList.contains('card'))n++}
for(const s of document.querySelectorAll('.claim'))s.hidden=!s.querySelector('.card:not([hidden])');
document.getElementById('shown').textContent=n+' records shown'}
const asked=new URLSearchParams(location.search);
for(const s of [claim,model])if([...s.options].some(o=>o.value===asked.get(s.id)))s.value=asked.get(s.id);
claim.addEventListener('change',pick);model.addEventListener('change',pick);pick();"""


def write_trends(base: Path, docs: list[RunDocument] | None = None, out: Path | None = None, last: int = LAST) -> Path:
    """Write the trends page of the run folders under ``base`` (atomically); return its path.

    Args:
        base: a folder of run folders (a report folder, a checkout of the nightly-history branch).
        docs: the results documents of those runs where the caller has them already (``reports.history.runs``),
            else they are read one at a time (:func:`reports.trends.read_nights`).
        out: the file to write; default ``reports.history.trends_path`` (never a user's own trends.html).
        last: the runs the summary looks back over.
    Raises:
        OSError: where the page cannot be written.
    """
    nights = read_nights(base) if docs is None else sorted(
        (night_of(d) for d in docs if d.complete), key=lambda n: (n.created_utc, n.run_id))
    path = out or trends_path(base)
    atomic_write_text(path, render(nights, last, index_link(base, path)))
    return path


def index_link(base: Path, page: Path) -> str:
    """The href of the index of ``base`` from ``page``: the suite's index (``reports.history.index_path``)."""
    index = index_path(base).resolve()
    try:
        return index.relative_to(page.resolve().parent).as_posix()
    except ValueError:
        return index.as_uri()


def render(nights: list[Night], last: int = LAST, index_href: str = "index.html") -> str:
    """The page's HTML for ``nights`` (complete runs, oldest first): per replay command, the summary and a card per
    record; filters over all of them."""
    esc = html.escape
    commands = by_command(nights)
    sections, claims, models = [], set(), set()
    for number, (replay, group) in enumerate(commands.items()):
        every = series_of(group)
        claims |= {s.claim for s in every}
        models |= {s.model for s in every}
        sections.append(_command(number, replay, group, every, last, sparklines()))
    options = {name: "".join(f"<option>{esc(v)}</option>" for v in sorted(values, key=order))
               for name, values, order in (("claim", claims, claim_order), ("model", models, natural))}
    head = (f"<!doctype html><html lang='en'><meta charset='utf-8'>{GENERATOR}<title>latent-claims trends</title>"
            f"<style>{STYLE}</style><h1>latent-claims trends</h1><p class='meta'>{len(nights)} complete runs of "
            f"{len(commands)} replay command{'s' if len(commands) != 1 else ''}; each record's deciding statistic "
            "(its headline claim check), the interval as a bar, the threshold dashed; "
            f"<a href='{esc(index_href)}'>every run, with what changed</a></p>")
    filters = ("<div class='filters'>claim <select id='claim' aria-label='claim'><option value=''>all</option>"
               f"{options['claim']}</select> model <select id='model' aria-label='model'><option value=''>all</option>"
               f"{options['model']}</select> <span id='shown' class='meta'></span><div class='key'>"
               + "".join(f"<span><i class='dot' style='background:{c}'></i> {esc(o)}</span>"
                         for o, c in OUTCOME_COLOURS.items())
               + "".join(f"<span><i class='bar' style='border-top:2px {'dotted' if s == ':' else 'solid'} {c}'></i> "
                         f"{esc(w)}</span>" for w, c, s in legend()) + "</div></div>")
    body = "".join(sections) or "<p>No complete run in this folder yet.</p>"
    return f"{head}{filters}{body}<script>{SCRIPT}</script></html>"


def _command(number: int, replay: str, nights: list[Night], every: list[Series], last: int,
             plots: Sparklines) -> str:
    """One replay command's section: its summary, a card per record grouped by claim, its nights."""
    esc = html.escape
    ids = {s.key: f"r{number}-{i}" for i, s in enumerate(every)}
    drifting = sorted(filter(None, (drift(s, last) for s in every)), key=lambda d: d.runs_left)
    flipped = [f for s in every for f in flips(s, nights, last)]
    shared = night_marks(nights)
    out = [f"<section class='command'><h2>Runs of one command</h2><p><code>{esc(replay or '(no replay command)')}"
           "</code></p>"
           f"<p class='meta'>{len(nights)} complete runs, {esc(nights[0].created_utc)} to {esc(nights[-1].created_utc)}"
           f"; the summary reads the last {min(last, len(nights))}</p>",
           f"<h3 id='drifting-{number}'>Drifting toward its threshold</h3>",
           _items([_drift_line(d) for d in drifting], [d.series for d in drifting], ids,
                  f"no record's margin shrank at each of the last {last} runs"),
           f"<h3 id='flipped-{number}'>Flipped</h3>",
           _items([_flip_line(f) for f in flipped], [f.series for f in flipped], ids,
                  f"no outcome changed in the last {last} runs")]
    for claim in dict.fromkeys(s.claim for s in every):
        cards = "".join(_card(s, ids[s.key], nights, shared, plots) for s in every if s.claim == claim)
        out.append(f"<section class='claim' data-claim='{esc(claim)}'><h3>{esc(claim)}</h3><div class='grid'>"
                   f"{cards}</div></section>")
    rows = "".join(f"<tr><td>{esc(n.run_id)}</td><td>{esc(n.created_utc)}</td><td>{esc(n.git)}</td>"
                   f"<td>{esc(n.versions['torch'])}</td><td>{esc(n.versions['transformers'])}</td></tr>"
                   for n in reversed(nights))
    out.append("<details><summary>the runs, newest first</summary><table><tr><th>run</th><th>created</th><th>commit"
               f"</th><th>torch</th><th>transformers</th></tr>{rows}</table></details></section>")
    return "".join(out)


def _items(lines: list[str], series: list[Series], ids: dict, none: str) -> str:
    """A summary list, each line a link to its record's card, filterable; ``none`` where it is empty."""
    esc = html.escape
    if not lines:
        return f"<p class='meta'>{esc(none)}</p>"
    return "<ul>" + "".join(
        f"<li class='item' data-claim='{esc(s.claim)}' data-model='{esc(s.model)}'><a href='#{ids[s.key]}'>"
        f"{esc(s.label)}</a>: {esc(line)}</li>" for line, s in zip(lines, series)) + "</ul>"


def _drift_line(d: Drift) -> str:
    """A drifting record in words: "margin 0.29 → 0.09 decades over 4 runs; at this pace at its threshold in about
    1 run"."""
    unit = d.series.latest.headline.unit
    side = "margin" if d.margins[-1] > 0 else "short of passing by"
    runs = round(d.runs_left) or 1
    return (f"{side} {abs(d.margins[0]):.3g} → {abs(d.margins[-1]):.3g} {unit} over {len(d.margins)} runs; at this "
            f"pace at its threshold in about {runs} run{'s' if runs != 1 else ''}")


def _flip_line(f: Flip) -> str:
    """A flip in words: "holds → fails in run 20261122T031500Z"."""
    return f"{f.was} → {f.now} in run {f.run_id}"


def _card(series: Series, anchor: str, nights: list[Night], shared: list, plots: Sparklines) -> str:
    """One record's card: its plot, its newest reading in words, its own marks in words (collapsed, newest first)."""
    esc = html.escape
    latest, own = series.latest, series_marks(series)
    head = latest.headline
    svg = plots.svg(series, len(nights), [*shared, *own])
    name = f"{series.model} · {series.key[2]}{f'[{series.key[3]}]' if series.key[3] else ''}"
    plot = (f"<img loading='lazy' alt='{esc(series.label)}: {esc(head.name if head else '')} by run' "
            f"src=\"{html.escape(data_url(svg), quote=False)}\">" if svg else "<p class='meta'>no finite statistic</p>")
    now = (f"{head.name}: {head.value:.4g} [{head.ci_low:.4g}, {head.ci_high:.4g}] {head.unit}, threshold "
           f"{head.comparison} {head.threshold:.4g}; " if head else "")
    listed = "".join(f"<div>{esc(nights[m.night].run_id)}: {esc(m.text)}</div>" for m in reversed(own))
    marks = (f"<details class='meta'><summary>{len(own)} change{'s' if len(own) != 1 else ''} of weights or procedure"
             f"</summary>{listed}</details>" if own else "")
    return (f"<div class='card item {CARD_CLASS.get(latest.outcome, 'na')}' id='{anchor}' "
            f"data-claim='{esc(series.claim)}' data-model='{esc(series.model)}'><div class='t'>{esc(name)}</div>{plot}"
            f"<div class='meta'>{esc(now)}{esc(latest.outcome or '?')} in {esc(nights[series.readings[-1][0]].run_id)}"
            f" ({len(series.readings)} of {len(nights)} runs)</div>{marks}</div>")
