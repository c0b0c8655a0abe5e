"""report.md and report.html from a run's :class:`reports.document.RunDocument` (reports/SCHEMA.md).

Layout, for 42 claims × 20 subjects, read in a minute: the header; what changed since the baseline; the
summary, one line per claim (on how many subjects it holds, where it fails or is inconclusive, what changed
since the last run), each claim linked to its section; the claims × subjects matrix, grouped (trained zoo,
untrained twins, groups, references, your models), its claim column fixed while it scrolls sideways; then,
collapsed, the coverage of the catalogue, the agreement between builds and the models; then one section per
claim: statement and source once, each threshold's derivation once, a table of subjects, figures, and each
subject's details (collapsed). The tables come from ``reports.tables``. Figures are PNG files beside the
report (``figures/``, see :func:`figures`), loaded as the reader scrolls to them.
"""

import html
import os

from joblib import Parallel, delayed

from reports import plots, shipped_verdicts
from reports.checks import FAILS_AS_EXPECTED, HOLDS, INCONCLUSIVE, NOT_INFORMATIVE, RED, ClaimRecord
from reports.document import RunDocument
from reports.records import count_outcomes, ledger_quotes_disagree
from reports.source_numbers import NOTE as SOURCE_NOTE, provenance, source_rows
from reports.fact_tables import BUILDS_NOTE, builds_rows, model_rows, time_rows
from reports.tables import (IMPLEMENTATION_NOTE, claims_of, column_groups, coverage, detail_tables, is_implementation,
                            label, matrix, num, subject_rows, summary_rows, thresholds)

ZOO_BUILDS = {"shipped": "the shipped weights of models/shipped/", "local": "trained on this machine, not shipped",
             "mixed": "shipped weights and models trained on this machine", None: "no trained zoo model"}
MATRIX_NOTE = ("claims × subjects; each cell: the outcome and the claim check's statistic with its interval: 95 %, or "
               "the lower-α level its claim table gives (with n) where the claim is sequential over prompts")


def md_table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table (cells' "|" escaped)."""
    def esc(c):
        return str(c).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(map(esc, header)) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(map(esc, row)) + " |" for row in rows])


def _zoo_build(doc: RunDocument) -> str:
    """Where the run's trained zoo models came from; a run that stopped before any says so (not "no trained zoo
    model", which would read as a run without one)."""
    if doc.zoo_build is None and not doc.complete:
        return "no trained zoo model measured before the run stopped"
    return ZOO_BUILDS.get(doc.zoo_build, doc.zoo_build)


def header_lines(doc: RunDocument) -> list[str]:
    """The run facts: what makes the run replayable, and how it ended."""
    v, device, counts = doc.versions, doc.device, count_outcomes(r.outcome for r in doc.records)
    lines = [
        f"run {doc.run_id} · {doc.created_utc} · git {doc.git} · exit status {doc.exit_status} · "
        f"errors {counts.get('error', 0)}" + (" · INTERRUPTED" if doc.interrupted else "")
        + (" · INCOMPLETE: " + "; ".join(doc.incomplete) if doc.incomplete else ""),
        "outcomes: " + ", ".join(f"{n} {o}" for o, n in counts.items()),
        f"zoo {doc.zoo} ({_zoo_build(doc)}) · device {device['device']} ({device.get('gpu', device['platform'])}) · "
        f"dtype {device['dtype']} · seed {doc.seed} · wall {doc.wall_seconds} s · "
        f"peak RSS {doc.peak_rss_mib} MiB" + _planned(doc.models or {}),
        f"python {v['python']} · torch {v['torch']} · transformers {v['transformers']} · tokenizers {v['tokenizers']}"
        + (" · NOT THE LOCK: " + "; ".join(doc.versions_off_lock) if doc.versions_off_lock else ""),
        "replay: " + doc.replay,
    ]
    stale = [f"{r.claim} on {label(r)}" for r in doc.records
             if ledger_quotes_disagree(r, doc.models or {})]
    if stale:
        lines.append(f"LEDGER OUT OF DATE: the why of {len(stale)} ledger entries quotes a decision this run did not "
                     f"reach on the same weights, or other numbers on the machine it names ({', '.join(stale)}): "
                     "measure them again and rewrite the why (claims/expected_verdicts.toml)")
    redrawn = {name: m["prompt_windows_redrawn"] for name, m in (doc.models or {}).items()
               if m.get("prompt_windows_redrawn")}
    if redrawn:
        lines.append("prompt windows redrawn as not text (mostly whitespace, or one token repeated; batch n × length: "
                     "windows): " + "; ".join(f"{name} " + ", ".join(f"{k}: {v}" for k, v in shapes.items())
                                              for name, shapes in redrawn.items()))
    if doc.merged_from:
        lines.append("merged from runs: " + ", ".join(map(str, doc.merged_from)))
    lines += [f"MISSING: shard {s} did not report; its claims are not in this report" for s in doc.shards_missing or ()]
    bench = doc.benchmarks
    if bench:
        lines.append(f"benchmarks ({bench['file']}, {bench['created']}): " + "; ".join(bench["lines"]))
    return lines


def _digest(value) -> str:
    return str(value)[:12] if value else "not recorded"


def _statuses(statuses: dict) -> str:
    return ", ".join(f"{name}: {status}" for name, status in statuses.items()) or "no claim check"


def baseline_lines(doc: RunDocument) -> list[str]:
    """What changed since the baseline run, most important first: what makes the comparison unlike, which weights
    were compared, then measured changes apart from changes of the ledger or the procedure."""
    cmp = doc.baseline
    lines = [f"Compared with {cmp['baseline']} (run {cmp['baseline_run_id']}):"]
    lines += [f"- NOT LIKE FOR LIKE: {d}" for d in cmp.get("differences", [])]
    lines += [f"- RETRAINED IN PLACE: {m['new']} has the same name but other weights (sha256 "
              f"{_digest(m['old_weights_sha256'])} → {_digest(m['new_weights_sha256'])})"
              for m in cmp.get("retrained_in_place", [])]
    lines += [f"- compared {m['old']} (weights {_digest(m['old_weights_sha256'])}) with {m['new']} "
              f"(weights {_digest(m['new_weights_sha256'])})" for m in cmp.get("models", [])
              if m["old"] != m["new"]]
    lines += [f"- MEASURED {c['claim']} on {c['model']}: {_statuses(c['was'])} → {_statuses(c['now'])} "
              f"(outcome {c['outcome_was']} → {c['outcome_now']}; {c['test']})" for c in cmp.get("measured_changes", [])]
    lines += [f"- ledger only: {c['claim']} on {c['model']}: {c['was']} → {c['now']}, the claim checks measured the "
              f"same ({c['test']})" for c in cmp.get("ledger_changes", [])]
    lines += [f"- method changed: {c['claim']} on {c['model']}: version {c['was']} → {c['now']}, numbers not compared"
              for c in cmp.get("method_changed", [])]
    lines += [f"- moved: {m['claim']} on {m['model']}, {m['check']}: {num(m['was'], '.4g')} → {num(m['now'], '.4g')} "
              f"(tolerance {num(m['tolerance'])})"
              for m in cmp["moved"]]
    lines += [f"- new test: {t}" for t in cmp["new"]] + [f"- no longer run: {t}" for t in cmp["missing"]]
    if not any(line.startswith(("- MEASURED", "- ledger only", "- method", "- moved", "- new", "- no longer"))
               for line in lines):
        lines.append("- no outcome changed and no statistic moved beyond its tolerance")
    return lines


def markdown(doc: RunDocument) -> str:
    """report.md: the same sections as report.html, without figures."""
    out = ["# latent-claims report", "", *[f"{line}  " for line in header_lines(doc)], ""]
    if doc.against_shipped:
        out += ["## This machine's builds against the shipped weights", "",
                *[f"- {line}" for line in shipped_verdicts.lines(doc.against_shipped)], ""]
    if doc.baseline:
        out += ["## Changes since the baseline", "", *baseline_lines(doc), ""]
    out += ["## Summary", "", md_table(*summary_rows(doc)), ""]
    out += [f"## Outcomes ({MATRIX_NOTE})", "", md_table(*matrix(doc)), ""]
    out += ["## Coverage of the catalogue", "", md_table(*coverage(doc)), ""]
    if doc.builds_agree:
        out += ["## Agreement between builds", "", BUILDS_NOTE, "", md_table(*builds_rows(doc)), ""]
        out += [f"- not run on the seed siblings: {claim_id}: {why}" for claim_id, why in
                (doc.builds_not_run or {}).items()] + [""]
    out += ["## Models", "", md_table(*model_rows(doc)), ""]
    out += ["## Where the time goes", "", md_table(*time_rows(doc)), ""]
    for claim_id, entry, records in claims_of(doc):
        out += [f"## {claim_id} — {entry.get('statement', '')}", "", _source(entry, records), ""]
        if is_implementation(doc, claim_id):
            out += [f"*{IMPLEMENTATION_NOTE}*", ""]
        out += [f"- {role} check *{shown}*{_from(entry, name, key)}: {derivation}"
                for role, name, shown, derivation, key in thresholds(records)] + [""]
        beside = source_rows(entry, records)
        if beside:
            out += [f"**Source vs measured** ({SOURCE_NOTE})", "", md_table(*beside), ""]
        out += [md_table(*subject_rows(records, doc.models or {})), ""]
        for procedure in dict.fromkeys(r.procedure for r in records if r.procedure):
            out += [f"Procedure: {procedure}", ""]
        for r in records:
            for title, header, rows in detail_tables(r.details):
                out += [f"**{label(r)} — {title}**", "", md_table(header, rows), ""]
    return "\n".join(out)


def _planned(models: dict) -> str:
    """" (largest capture planned: 812 MiB, ref-opt-125m)": the estimate ``fixtures.memory_estimate`` made of the
    largest first capture, beside the measured peak; "" where no model has one (runs before it was recorded)."""
    planned = {name: m["capture_estimate_mib"] for name, m in models.items() if m.get("capture_estimate_mib")}
    if not planned:
        return ""
    name = max(planned, key=planned.get)
    return f" (largest capture planned: {planned[name]:,.0f} MiB, {name})"


def _from(entry: dict, name: str, key: str = "") -> str:
    """" (threshold: source)": where a check's threshold comes from (the catalogue's ``thresholds``), or ""."""
    found = provenance(entry, name, key)
    return f" (threshold: {found})" if found else ""


def _source(entry: dict, records: list[ClaimRecord]) -> str:
    return (f"Source: {entry.get('source', '')}; {entry.get('section', '')}. "
            + (f"Source's figures: {entry['figures']}. " if entry.get("figures") else "")
            + f"Procedure version {', '.join(sorted({str(r.version) for r in records}))}.")


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
        if first and links:
            claim = str(c).split()[0]
            text = f"<a href='#{html.escape(claim)}'>{text}</a>"
        return f"<td{_cls(c) if colour else ''}>{text}</td>"
    above = ("<tr><th></th>" + "".join(f"<th colspan='{n}'>{html.escape(g)}</th>" for g, n in groups) + "</tr>"
             if groups else "")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(td(c, i == 0) for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table>{above}<tr>{head}</tr>{body}</table>"


def collapsed(title: str, inner: str, open_: bool = False) -> str:
    """A <details> block: ``inner`` shown when the reader opens ``title``."""
    return f"<details{' open' if open_ else ''}><summary>{html.escape(title)}</summary>{inner}</details>"


def figure_name(index: int, record: ClaimRecord) -> str:
    """The file of a record's figure under ``figures/``: its place in the records and its claim, e.g. 012-S0.1.png."""
    return f"{index:03d}-{record.claim}.png"


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


def to_html(doc: RunDocument, drawn: dict[str, bytes | str] | None = None) -> str:
    """report.html: the same content as report.md, with the figures of ``drawn`` (:func:`figures`; written beside
    it under ``figures/`` by ``reports.writer``); None draws no figures (a check that the document renders)."""
    esc, drawn = html.escape, drawn or {}
    parts = [f"<!doctype html><meta charset='utf-8'><title>latent-claims {esc(str(doc.run_id))}</title>"
             f"<style>{STYLE}</style><main>", "<h1>latent-claims report</h1>",
             *[f"<div class='meta'>{esc(line)}</div>" for line in header_lines(doc)]]
    if doc.against_shipped:
        parts += ["<h2>This machine's builds against the shipped weights</h2><ul>",
                  *[f"<li>{esc(line)}</li>" for line in shipped_verdicts.lines(doc.against_shipped)], "</ul>"]
    if doc.baseline:
        parts += ["<h2>Changes since the baseline</h2><ul>",
                  *[f"<li>{esc(line.lstrip('- '))}</li>" for line in baseline_lines(doc)], "</ul>"]
    parts += ["<h2>Summary</h2>", html_table(*summary_rows(doc), links=True, colour=False)]
    groups = [(name, len(members)) for name, members in column_groups(doc)]
    parts += ["<h2>Outcomes</h2>", f"<p class='meta'>{esc(MATRIX_NOTE)}</p>",
              f"<div class='wide'>{html_table(*matrix(doc), groups=groups, links=True)}</div>"]
    parts.append(collapsed("Coverage of the catalogue", html_table(*coverage(doc))))
    if doc.builds_agree:
        parts.append(collapsed("Agreement between builds", f"<p class='meta'>{esc(BUILDS_NOTE)}</p>"
                               + html_table(*builds_rows(doc)) + "".join(
                                   f"<p class='meta'>not run on the seed siblings: {esc(c)}: {esc(why)}</p>"
                                   for c, why in (doc.builds_not_run or {}).items())))
    parts.append(collapsed("Models", html_table(*model_rows(doc))))
    parts.append(collapsed("Where the time goes", html_table(*time_rows(doc), colour=False)))
    index = {id(r): i for i, r in enumerate(doc.records)}
    for claim_id, entry, records in claims_of(doc):
        parts += [f"<h2 id='{esc(claim_id)}'>{esc(claim_id)} — {esc(entry.get('statement', ''))}</h2>",
                  f"<div class='meta'>{esc(_source(entry, records))}</div>"
                  + (f"<p class='meta'><b>{esc(IMPLEMENTATION_NOTE)}</b></p>" if is_implementation(doc, claim_id) else ""),
                  "<ul>" + "".join(f"<li>{esc(role)} check <i>{esc(shown)}</i>{esc(_from(entry, name, key))}: {esc(d)}</li>"
                                   for role, name, shown, d, key in thresholds(records)) + "</ul>",
                  f"<div class='wide'>{html_table(*subject_rows(records, doc.models or {}))}</div>"]
        beside = source_rows(entry, records)
        if beside:
            parts.append(f"<p><b>Source vs measured</b> <span class='meta'>({esc(SOURCE_NOTE)})</span></p>"
                         f"<div class='wide'>{html_table(*beside, colour=False)}</div>")
        parts += [f"<p>Procedure: {esc(p)}</p>" for p in dict.fromkeys(r.procedure for r in records if r.procedure)]
        shown = [_figure(figure_name(index[id(r)], r), drawn.get(figure_name(index[id(r)], r)), claim_id, r)
                 for r in records if r.plot and drawn]
        if shown:
            parts.append("<div class='figs'>" + "".join(shown) + "</div>")
        for r in records:
            tables = detail_tables(r.details)
            if tables:
                parts.append(collapsed(f"{label(r)}: details",
                                       "".join(f"<b>{esc(t)}</b>" + html_table(h, rows) for t, h, rows in tables)))
    return "\n".join(parts) + "</main>"
