"""report.md and report.html from a results.json document (keys in reports/SCHEMA.md).

Layout, for 42 claims × 10 models: header, changes since the baseline, the
claims × models matrix (each cell: the claim check's statistic and the
outcome; a failed control or an error is named), the coverage of the
catalogue, the models, then one section per claim: statement and source once,
each threshold's derivation once, a table of subjects, figures side by side,
and each subject's details as tables.
"""

import html
import re

from reports import plots
from reports.records import HOLDS, RED


def fmt(x) -> str:
    """A number as the report shows it: 4 significant digits, "—" for None."""
    return "—" if x is None else f"{x:.4g}" if isinstance(x, float) else str(x)


def num(x, spec: str = ".3g") -> str:
    """A number in a format spec, "—" where it is missing (NaN and inf are stored as null)."""
    return "—" if x is None else format(x, spec)


def natural(name: str) -> list:
    """Sort key that orders numbers in names by value: tiny-w96 < tiny-w128."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


def claim_order(claim_id: str) -> list:
    """Sort key of claim ids: S0.2 < S0.10 < S1.1."""
    return [int(p) if p.isdigit() else p for p in claim_id[1:].split(".")]


def test_name(record: dict) -> str:
    """The test function of a record, e.g. "test_final_norm_removes_scale"."""
    return record["test"].split("::")[-1].split("[")[0]


def label(record: dict) -> str:
    """The subject of a record as the matrix names it: model, plus the test's other parameters."""
    params = "-".join(record["params"].values())
    return record["model"] + (f" [{params}]" if params else "")


def cell(record: dict) -> str:
    """The matrix cell: the outcome with the claim check's statistic, or what went wrong."""
    head = record.get("headline")
    value = f" {num(head['value'])} [{num(head['ci_low'])}, {num(head['ci_high'])}]" if head else ""
    params = "-".join(record["params"].values())
    suffix = f" ({params})" if params else ""
    if record["outcome"] == "control failed":
        claim_passed = all(c["passed"] for c in record["checks"] if c["role"] == "claim")
        failed = [c["name"] for c in record["checks"] if c["role"] == "control" and not c["passed"]
                  and (claim_passed or not c.get("guards_pass"))]
        return f"CONTROL FAILED: {'; '.join(failed)}{suffix}"
    if record["outcome"] == "error":
        first = record["message"].strip().splitlines()[0] if record["message"].strip() else ""
        return f"ERROR{': ' + first[:120] if first else ''}{'…' if len(first) > 120 else ''}{suffix}"
    word = record["outcome"].upper() if record["outcome"] in RED else record["outcome"]
    return f"{word}{value}{suffix}"


def matrix(doc: dict) -> tuple[list[str], list[list[str]]]:
    """Claims × models: one cell per (claim, model), several tests joined by line breaks."""
    claims = sorted({r["claim"] for r in doc["records"]}, key=claim_order)
    models = sorted(dict.fromkeys(r["model"] for r in doc["records"]), key=natural)
    cells: dict[tuple[str, str], list[str]] = {}
    several = {c for c in claims if len({test_name(r) for r in doc["records"] if r["claim"] == c}) > 1}
    for r in doc["records"]:
        suffix = f" — {test_name(r)}" if r["claim"] in several else ""
        cells.setdefault((r["claim"], r["model"]), []).append(cell(r) + suffix)
    names = {c: c + (" (implementation check)" if is_implementation(doc, c) else "") for c in claims}
    return ["claim"] + models, [[names[c]] + ["<br>".join(cells.get((c, m), ["·"])) for m in models] for c in claims]


IMPLEMENTATION_NOTE = ("Implementation check: the claim is an identity of the mechanism, true for any weights, trained "
                       "or random. 'holds' says that the captured activations are what the source's algebra says "
                       "they are on this architecture and dtype (its controls show the check sees a violation), not "
                       "that the model learned anything.")


def is_implementation(doc: dict, claim_id: str) -> bool:
    """Whether the catalogue marks a claim as an implementation check (an identity, S1.1-S1.3)."""
    return (doc.get("catalogue") or {}).get(claim_id, {}).get("kind") == "implementation"


def coverage(doc: dict) -> tuple[list[str], list[list[str]]]:
    """Every catalogued claim: its tests, the models they ran on, and the outcomes."""
    rows = []
    for claim_id, entry in sorted(doc["catalogue"].items(), key=lambda kv: claim_order(kv[0])):
        records = [r for r in doc["records"] if r["claim"] == claim_id]
        tests = sorted({r["test"].split("[")[0].split("::")[-1] for r in records})
        counts: dict[str, int] = {}
        for r in records:
            counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
        kind = "[implementation check] " if entry.get("kind") == "implementation" else ""
        rows.append([claim_id, kind + entry["statement"][:90] + ("…" if len(entry["statement"]) > 90 else ""),
                     ", ".join(tests) or "not yet implemented",
                     ", ".join(dict.fromkeys(r["model"] for r in records)) or "—",
                     ", ".join(f"{n} {o}" for o, n in counts.items()) or "—"])
    return ["claim", "statement", "tests", "models run", "outcomes"], rows


def subject_rows(records: list[dict]) -> tuple[list[str], list[list[str]]]:
    """One claim's table: per subject the claim check's statistic, interval, threshold, margin, outcome, why."""
    header = ["subject", "test", "outcome", "claim check", "value", "interval (level, n)", "threshold", "margin",
              "note"]
    rows = []
    for r in records:
        head = r.get("headline") or {}
        check = next((c for c in r["checks"] if c["name"] == head.get("name")), None)
        note = r["message"] if r["outcome"] != HOLDS else ""
        if r.get("scaled"):
            note = f"scaled form: {r['scaled']} {note}".strip()
        if r["expected"] != "holds" and r["outcome"] != "fails as expected":
            note = f"{note} (ledger: {r['expected_reason']})".strip()
        if r.get("ledger_build") == "another build":
            note = f"{note} (ledger measured on another build)".strip()
        if r.get("ledger_quotes_disagree"):
            note = f"{note} (the ledger's why does not match this run: {'; '.join(r['ledger_quotes_disagree'])})".strip()
        if len(r.get("looks") or ()) > 1:
            note = f"looked at {' → '.join(str(look['prompts']) for look in r['looks'])} prompts. {note}".strip()
        rows.append([label(r), test_name(r), r["outcome"], head.get("name", "—"), fmt(head.get("value")),
                     f"[{fmt(head.get('ci_low'))}, {fmt(head.get('ci_high'))}]{_level(check)}" if head else "—",
                     f"{check['comparison']} {fmt(check['threshold'])}" if check else "—",
                     num(head["margin"], "+.4g") if head else "—", note[:400]])
    return header, rows


def _level(check: dict | None) -> str:
    """" (98.3 %, n = 128)": an interval's level and sample, where the record has them (schema 5)."""
    if not check or check.get("confidence") is None:
        return ""
    n = f", n = {check['n']}" if check.get("n") else ""
    return f" ({check['confidence']:.1%}{n})"


def thresholds(records: list[dict]) -> list[tuple[str, str, str]]:
    """Each distinct check of a claim once: (role, "name comparison threshold", derivation)."""
    seen: dict[str, tuple[str, str, str]] = {}
    for r in records:
        for c in r["checks"]:
            seen.setdefault(c["name"], (c["role"], f"{c['name']} {c['comparison']} {fmt(c['threshold'])} {c['unit']}",
                                        c["derivation"]))
    return list(seen.values())


def detail_tables(details: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """A record's details as (title, header, rows) tables.

    Shapes understood: {key: scalar} (one table of scalars), {key: {label: scalar}} (one row per label),
    {key: {label: {field: scalar}}} and {key: [{field: scalar}]} (one row per item), {key: [scalars]}.
    """
    tables, scalars = [], []
    for key, value in details.items():
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            fields = list(dict.fromkeys(f for v in value.values() for f in v))
            tables.append((key, ["", *fields], [[str(k), *(fmt(v.get(f)) for f in fields)] for k, v in value.items()]))
        elif isinstance(value, dict):
            tables.append((key, ["", "value"], [[str(k), fmt(v)] for k, v in value.items()]))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            fields = list(dict.fromkeys(f for v in value for f in v))
            tables.append((key, ["#", *fields], [[str(i + 1), *(fmt(v.get(f)) for f in fields)] for i, v in enumerate(value)]))
        elif isinstance(value, list):
            tables.append((key, [str(i + 1) for i in range(len(value))], [[fmt(v) for v in value]]))
        else:
            scalars.append([key, fmt(value)])
    return ([("details", ["", "value"], scalars)] if scalars else []) + tables


def header_lines(doc: dict) -> list[str]:
    """The run facts: what makes the run replayable, and how it ended."""
    v, counts = doc["versions"], {}
    for r in doc["records"]:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    lines = [
        f"run {doc['run_id']} · {doc['created_utc']} · git {doc['git']} · exit status {doc['exit_status']} · "
        f"errors {counts.get('error', 0)}" + (" · INTERRUPTED" if doc["interrupted"] else ""),
        "outcomes: " + ", ".join(f"{n} {o}" for o, n in counts.items()),
        f"zoo {doc['zoo']} · device {doc['device']['device']} ({doc['device'].get('gpu', doc['device']['platform'])}) · "
        f"dtype {doc['device']['dtype']} · seed {doc['seed']} · wall {doc['wall_seconds']} s · "
        f"peak RSS {doc['peak_rss_mib']} MiB",
        f"python {v['python']} · torch {v['torch']} · transformers {v['transformers']} · tokenizers {v['tokenizers']}"
        + (" · NOT THE LOCK: " + "; ".join(doc["versions_off_lock"]) if doc.get("versions_off_lock") else ""),
        "replay: " + doc["replay"],
    ]
    if doc.get("merged_from"):
        lines.append("merged from runs: " + ", ".join(doc["merged_from"]))
    bench = doc.get("benchmarks")
    if bench:
        lines.append(f"benchmarks ({bench['file']}, {bench['created']}): " + "; ".join(bench["lines"]))
    return lines


def _digest(value) -> str:
    return str(value)[:12] if value else "not recorded"


def _statuses(statuses: dict) -> str:
    return ", ".join(f"{name}: {status}" for name, status in statuses.items()) or "no claim check"


def baseline_lines(doc: dict) -> list[str]:
    """What changed since the baseline run, most important first: what makes the comparison unlike, which weights
    were compared, then measured changes apart from changes of the ledger or the procedure."""
    cmp = doc["baseline"]
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


def builds_rows(doc: dict) -> tuple[list[str], list[list[str]]]:
    """The builds-agree table: per claim test, how many trainings of one recipe (the model and its seed
    siblings) give each outcome."""
    header = ["claim", "test", "recipe", "builds agree", "outcome per build"]
    rows = [[b["claim"], b["test"] + (f" [{b['params']}]" if b["params"] else ""), b["recipe"], b["summary"],
             "; ".join(f"{name}: {outcome}" for name, outcome in b["builds"].items())]
            for b in sorted(doc.get("builds_agree") or [], key=lambda b: (claim_order(b["claim"]), b["test"]))]
    return header, rows


BUILDS_NOTE = ("The same recipe trained at S4's other seeds (the seed siblings) is another set of weights: where "
               "the builds disagree, a verdict follows the training run as much as the recipe. Each build keeps "
               "its own verdict in the matrix.")


def model_rows(doc: dict) -> tuple[list[str], list[list[str]]]:
    """The models table: size, training, the residual-identity check, timings, or the load error."""
    header = ["model", "role", "arch", "params", "d_model", "blocks", "train s", "val loss", "identity error",
              "forward s", "capture s", "captured"]
    rows = []
    for name, m in doc["models"].items():
        if "error" in m:
            rows.append([name, m["role"], "ERROR: " + m["error"][:300]] + [""] * 9)
            continue
        ident = m.get("residual_identity") or {}
        rows.append([name, m["role"], m["architecture"], f"{m['n_params']:,}", str(m["d_model"]), str(m["n_blocks"]),
                     fmt(m["train_seconds"] and round(m["train_seconds"], 1)), fmt(m["final_val_loss"]),
                     f"{fmt(ident.get('max_relative_error'))} (≤ {fmt(ident.get('tolerance'))})" if ident else "—",
                     fmt(m["forward_seconds"]), fmt(m["capture_seconds"]), str(len(m.get("captured") or [])) + " names"])
    return header, rows


def _claims(doc: dict):
    for claim_id in sorted({r["claim"] for r in doc["records"]}, key=claim_order):
        yield claim_id, doc["catalogue"].get(claim_id, {}), [r for r in doc["records"] if r["claim"] == claim_id]


def md_table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table (cells' "|" escaped)."""
    def esc(c):
        return str(c).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(map(esc, header)) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(map(esc, row)) + " |" for row in rows])


def markdown(doc: dict) -> str:
    """report.md."""
    out = ["# latent-claims report", "", *[f"{line}  " for line in header_lines(doc)], ""]
    if doc["baseline"]:
        out += ["## Changes since the baseline", "", *baseline_lines(doc), ""]
    out += ["## Outcomes (claims × models; the claim check's statistic and interval: 95 %, or the lower-α level its claim table gives where the claim is sequential over prompts)", "", md_table(*matrix(doc)), ""]
    out += ["## Coverage of the catalogue", "", md_table(*coverage(doc)), ""]
    if doc.get("builds_agree"):
        out += ["## Agreement between builds", "", BUILDS_NOTE, "", md_table(*builds_rows(doc)), ""]
        out += [f"- not run on the seed siblings: {claim_id}: {why}" for claim_id, why in
                (doc.get("builds_not_run") or {}).items()] + [""]
    out += ["## Models", "", md_table(*model_rows(doc)), ""]
    for claim_id, entry, records in _claims(doc):
        out += [f"## {claim_id} — {entry.get('statement', '')}", "",
                f"Source: {entry.get('source', '')}; {entry.get('section', '')}. "
                + (f"Source's figures: {entry['figures']}. " if entry.get("figures") else "")
                + f"Procedure version {', '.join(sorted({str(r['version']) for r in records}))}.", ""]
        if is_implementation(doc, claim_id):
            out += [f"*{IMPLEMENTATION_NOTE}*", ""]
        out += [f"- {role} check *{name}*: {derivation}" for role, name, derivation in thresholds(records)] + [""]
        out += [md_table(*subject_rows(records)), ""]
        for procedure in dict.fromkeys(r["procedure"] for r in records if r["procedure"]):
            out += [f"Procedure: {procedure}", ""]
        for r in records:
            for title, header, rows in detail_tables(r["details"]):
                out += [f"**{label(r)} — {title}**", "", md_table(header, rows), ""]
    return "\n".join(out)


STYLE = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.meta{color:#555;font-size:13px}h2{margin-top:1.8em}.figs{display:flex;flex-wrap:wrap;gap:8px}
.figs img{max-width:49%}.red{background:#fde2e2}.ok{background:#e6f4e6}.na{background:#eee}.undecided{background:#fff3c4}details{margin:.3em 0}"""


def html_table(header: list[str], rows: list[list[str]]) -> str:
    """An HTML table; "<br>" in a cell is kept, every other character escaped; outcome cells coloured."""
    def td(c):
        text = html.escape(str(c)).replace("&lt;br&gt;", "<br>")
        low = str(c).lower()
        cls = " class='red'" if low.startswith(("fails ", "fails", "holds unexpectedly", "control failed", "error")) \
            and not low.startswith("fails as expected") else " class='ok'" if low.startswith("holds") else \
            " class='na'" if low.startswith(("not informative", "fails as expected")) else \
            " class='undecided'" if low.startswith("inconclusive") else ""
        return f"<td{cls}>{text}</td>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    return f"<table><tr>{head}</tr>" + "".join("<tr>" + "".join(td(c) for c in row) + "</tr>" for row in rows) + "</table>"


def figure(claim_id: str, record: dict) -> str:
    """A record's figure as an inline <img>; a note instead where its data cannot be drawn (a NaN stored as null)."""
    alt = html.escape(f"{claim_id} on {label(record)}")
    try:
        return f"<img alt='{alt}' src='data:image/png;base64,{plots.render(record['plot'])}'>"
    except (TypeError, ValueError, KeyError) as err:
        return f"<p class='meta'>figure of {alt} could not be drawn: {html.escape(str(err))}</p>"


def to_html(doc: dict) -> str:
    """report.html: the same content as report.md, self-contained, with the figures inlined."""
    esc = html.escape
    parts = [f"<!doctype html><meta charset='utf-8'><title>latent-claims {esc(doc['run_id'])}</title><style>{STYLE}</style>",
             "<h1>latent-claims report</h1>", *[f"<div class='meta'>{esc(line)}</div>" for line in header_lines(doc)]]
    if doc["baseline"]:
        parts += ["<h2>Changes since the baseline</h2><ul>",
                  *[f"<li>{esc(line.lstrip('- '))}</li>" for line in baseline_lines(doc)], "</ul>"]
    parts += ["<h2>Outcomes</h2><p class='meta'>claims × models; the claim check's statistic and interval: 95 %, or the lower-α level its claim table gives (with n) where the claim is sequential over prompts</p>",
              html_table(*matrix(doc)), "<h2>Coverage of the catalogue</h2>", html_table(*coverage(doc))]
    if doc.get("builds_agree"):
        parts += ["<h2>Agreement between builds</h2>", f"<p class='meta'>{esc(BUILDS_NOTE)}</p>",
                  html_table(*builds_rows(doc))]
        parts += [f"<p class='meta'>not run on the seed siblings: {esc(c)}: {esc(why)}</p>"
                  for c, why in (doc.get("builds_not_run") or {}).items()]
    parts += ["<h2>Models</h2>", html_table(*model_rows(doc))]
    for claim_id, entry, records in _claims(doc):
        parts += [f"<h2 id='{esc(claim_id)}'>{esc(claim_id)} — {esc(entry.get('statement', ''))}</h2>",
                  f"<div class='meta'>Source: {esc(entry.get('source', ''))}; {esc(entry.get('section', ''))}."
                  + (f" Source's figures: {esc(entry['figures'])}." if entry.get("figures") else "") + "</div>"
                  + (f"<p class='meta'><b>{esc(IMPLEMENTATION_NOTE)}</b></p>" if is_implementation(doc, claim_id) else ""),
                  "<ul>" + "".join(f"<li>{esc(role)} check <i>{esc(name)}</i>: {esc(d)}</li>"
                                   for role, name, d in thresholds(records)) + "</ul>",
                  html_table(*subject_rows(records))]
        parts += [f"<p>Procedure: {esc(p)}</p>" for p in dict.fromkeys(r["procedure"] for r in records if r["procedure"])]
        figures = [figure(claim_id, r) for r in records if r.get("plot")]
        if figures:
            parts.append("<div class='figs'>" + "".join(figures) + "</div>")
        for r in records:
            tables = detail_tables(r["details"])
            if tables:
                parts.append(f"<details><summary>{esc(label(r))}: details</summary>"
                             + "".join(f"<b>{esc(t)}</b>" + html_table(h, rows) for t, h, rows in tables) + "</details>")
    return "\n".join(parts)
