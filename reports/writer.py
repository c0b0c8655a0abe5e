"""Writes a run's results.json, report.md and report.html, and prints the terminal summary.

Each run gets its own folder ``<report dir>/<run id>/``; ``<report dir>/latest``
is a symbolic link to the newest. Files are written atomically, and an
existing run folder is never overwritten. A run interrupted part-way still
writes what it measured (``"interrupted": true``).
"""

import html
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from models.cache import atomic_write_text
from reports import baseline, plots
from reports.records import ClaimRecord

SCHEMA = "latent-claims/results/1"  # documented key by key in reports/SCHEMA.md
REPO = Path(__file__).resolve().parent.parent
STARTED = time.perf_counter()


def git_revision() -> str:
    """The checkout's commit hash, with "+dirty" when there are uncommitted changes; "unknown" outside git."""
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def replay_command(settings) -> str:
    """The claims command that reproduces this run's numbers on the same machine."""
    models = "".join(f" --model {m}" for m in settings.models)
    corpus = f" --corpus {settings.corpus}" if settings.corpus else ""
    return f"pytest claims -m gpu --zoo {settings.zoo} --device {settings.device} --dtype {settings.dtype_name} --seed {settings.seed}{corpus}{models}"


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in ("torch", "transformers", "tokenizers", "safetensors", "numpy", "scipy", "pytest", "hypothesis", "matplotlib"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


def _device(settings) -> dict:
    import torch

    out = {"device": settings.device, "dtype": settings.dtype_name,
           "cpu_count": os.cpu_count(), "platform": platform.platform()}
    if settings.device.startswith("cuda"):
        out["gpu"] = torch.cuda.get_device_name(settings.device)
        out["gpu_peak_memory_mib"] = round(torch.cuda.max_memory_allocated(settings.device) / 2**20, 1)
    return out


def results(settings, records: list[ClaimRecord], pool, exitstatus: int, run_id: str) -> dict:
    """The results.json document (keys documented in reports/SCHEMA.md)."""
    record_json = [r.to_json() for r in records]
    doc = {
        "schema": SCHEMA,
        "run_id": run_id,
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": ["pytest", *sys.argv[1:]],
        "replay": replay_command(settings),
        "interrupted": exitstatus == 2,
        "exit_status": int(exitstatus),
        "seed": settings.seed,
        "zoo": settings.zoo,
        "corpus": pool and {"name": pool.corpus.name, "sha256": pool.corpus.sha256, "characters": len(pool.corpus.text)},
        "versions": _versions(),
        "git": git_revision(),
        "device": _device(settings),
        "wall_seconds": round(time.perf_counter() - STARTED, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "models": pool.describe() if pool else {},
        "records": record_json,
        "baseline": baseline.compare(settings.baseline, record_json) if settings.baseline else None,
    }
    return doc


def _fmt(x) -> str:
    return "—" if x is None else f"{x:.4g}" if isinstance(x, float) else str(x)


def _matrix(doc: dict) -> tuple[list[str], list[list[str]]]:
    claims = sorted({r["claim"] for r in doc["records"]}, key=lambda c: [int(p) if p.isdigit() else p for p in c[1:].split(".")])
    models = list(dict.fromkeys(r["model"] for r in doc["records"]))
    cells: dict[tuple[str, str], list[str]] = {}
    for r in doc["records"]:
        verdict = {("holds", "holds"): "holds", ("fails", "fails"): "fails (ledger)",
                   ("fails", "holds"): "FAILS (unexpected)", ("holds", "fails"): "HOLDS (ledger expects fails)"}
        variant = r["details"].get("variant")
        cells.setdefault((r["claim"], r["model"]), []).append(
            f"{verdict[r['verdict'], r['expected']]} {r['worst_margin']:+.3g}" + (f" [{variant}]" if variant else ""))
    rows = [[c] + ["<br>".join(cells.get((c, m), ["·"])) for m in models] for c in claims]
    return ["claim"] + models, rows


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c).replace('&lt;br&gt;', '<br>')}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


CHECK_HEADER = ["role", "check", "value", "95 % interval", "unit", "threshold", "margin", "passed"]


def _check_rows(record: dict) -> list[list[str]]:
    return [[c["role"], c["name"], _fmt(c["value"]), f"[{_fmt(c['ci_low'])}, {_fmt(c['ci_high'])}]", c["unit"],
             f"{c['comparison']} {_fmt(c['threshold'])}", f"{c['margin']:+.4g}", "yes" if c["passed"] else "NO"]
            for c in record["checks"]]


def _header_lines(doc: dict) -> list[str]:
    v = doc["versions"]
    return [
        f"run {doc['run_id']} · {doc['created_utc']} · git {doc['git']}" + (" · INTERRUPTED" if doc["interrupted"] else ""),
        f"zoo {doc['zoo']} · device {doc['device']['device']} ({doc['device'].get('gpu', platform.machine())}) · "
        f"dtype {doc['device']['dtype']} · seed {doc['seed']} · wall {doc['wall_seconds']} s · peak RSS {doc['peak_rss_mib']} MiB",
        f"python {v['python']} · torch {v['torch']} · transformers {v['transformers']} · tokenizers {v['tokenizers']}",
        "replay: " + doc["replay"],
    ]


def _baseline_lines(doc: dict) -> list[str]:
    cmp = doc["baseline"]
    if not cmp:
        return []
    lines = [f"Compared with {cmp['baseline']} (run {cmp['baseline_run_id']}):"]
    lines += [f"- VERDICT {c['claim']} on {c['model']}: {c['was']} → {c['now']} ({c['test']})" for c in cmp["verdict_changes"]]
    lines += [f"- moved: {m['claim']} on {m['model']}, {m['check']}: {m['was']:.4g} → {m['now']:.4g} (tolerance {m['tolerance']:.3g})"
              for m in cmp["moved"]]
    lines += [f"- new test: {t}" for t in cmp["new"]] + [f"- no longer run: {t}" for t in cmp["missing"]]
    if len(lines) == 1:
        lines.append("- no verdict changed and no statistic moved beyond its tolerance")
    return lines


def _model_rows(doc: dict) -> tuple[list[str], list[list[str]]]:
    header = ["model", "role", "arch", "params", "d_model", "blocks", "train s", "val loss", "forward s", "capture s"]
    rows = [[name, m["role"], m["architecture"], f"{m['n_params']:,}", str(m["d_model"]), str(m["n_blocks"]),
             _fmt(m["train_seconds"] and round(m["train_seconds"], 1)), _fmt(m["final_val_loss"]),
             _fmt(m["forward_seconds"]), _fmt(m["capture_seconds"])] for name, m in doc["models"].items()]
    return header, rows


def render_markdown(doc: dict) -> str:
    """report.md: header, baseline changes, the claims x models matrix, models, then one section per claim."""
    out = ["# latent-claims report", "", *[f"{line}  " for line in _header_lines(doc)], ""]
    if doc["baseline"]:
        out += ["## Changes since the baseline", "", *_baseline_lines(doc), ""]
    out += ["## Verdicts (claims × models; smallest margin over the claim's checks)", "", _md_table(*_matrix(doc)), ""]
    out += ["## Models", "", _md_table(*_model_rows(doc)), ""]
    for claim in dict.fromkeys(r["claim"] for r in doc["records"]):
        out += [f"## {claim}", ""]
        for r in (r for r in doc["records"] if r["claim"] == claim):
            expected = f" — expected to fail: {r['expected_reason']}" if r["expected"] == "fails" else ""
            out += [f"### {claim} on {r['model']}: {r['verdict']}{expected}", "", f"Source: {r['source']}. Test: `{r['test']}`", ""]
            out += [_md_table(CHECK_HEADER, _check_rows(r)), ""]
            out += [f"- threshold of *{c['name']}*: {c['derivation']}" for c in r["checks"]]
            if r["procedure"]:
                out += ["", f"Procedure: {r['procedure']}"]
            if r["details"]:
                out += ["", "Details: `" + json.dumps(r["details"], default=float)[:1500] + "`"]
            out.append("")
    return "\n".join(out)


STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px;text-align:left}
th{background:#f3f3f3}.meta{color:#555;font-size:13px}h3{margin-top:1.6em}img{max-width:100%}"""


def render_html(doc: dict) -> str:
    """report.html: the same content as report.md, self-contained, with the figures inlined."""
    esc = html.escape
    parts = [f"<!doctype html><meta charset='utf-8'><title>latent-claims {esc(doc['run_id'])}</title><style>{STYLE}</style>",
             "<h1>latent-claims report</h1>", *[f"<div class='meta'>{esc(line)}</div>" for line in _header_lines(doc)]]
    if doc["baseline"]:
        parts += ["<h2>Changes since the baseline</h2><ul>", *[f"<li>{esc(line.lstrip('- '))}</li>" for line in _baseline_lines(doc)], "</ul>"]
    parts += ["<h2>Verdicts</h2><p class='meta'>claims × models; the number is the smallest margin over the claim's checks</p>",
              _html_table(*_matrix(doc)), "<h2>Models</h2>", _html_table(*_model_rows(doc))]
    for r in doc["records"]:
        expected = f" — expected to fail: {r['expected_reason']}" if r["expected"] == "fails" else ""
        parts += [f"<h3>{esc(r['claim'])} on {esc(r['model'])}: {esc(r['verdict'])}{esc(expected)}</h3>",
                  f"<div class='meta'>Source: {esc(r['source'])}. Test: {esc(r['test'])}</div>",
                  _html_table(CHECK_HEADER, _check_rows(r)),
                  "<ul>" + "".join(f"<li>threshold of <i>{esc(c['name'])}</i>: {esc(c['derivation'])}</li>" for c in r["checks"]) + "</ul>"]
        if r["procedure"]:
            parts.append(f"<p>Procedure: {esc(r['procedure'])}</p>")
        if r["plot"]:
            parts.append(f"<img alt='{esc(r['claim'])} figure' src='data:image/png;base64,{plots.render(r['plot'])}'>")
    return "\n".join(parts)


def _run_folder(base: Path) -> tuple[str, Path]:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        run_id = stamp if n == 0 else f"{stamp}-{n}"
        folder = base / run_id
        try:
            folder.mkdir(parents=True)
            return run_id, folder
        except FileExistsError:
            continue
    raise RuntimeError(f"could not make a new run folder under {base}")


def _point_latest(base: Path, folder: Path) -> None:
    link, tmp = base / "latest", base / f".latest.{os.getpid()}"
    if link.exists() and not link.is_symlink():
        return  # a real folder of the user's: never replace it
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(folder.name)
    os.replace(tmp, link)


def write_run(settings, records: list[ClaimRecord], pool, exitstatus: int) -> Path:
    """Write the run folder and point ``latest`` at it; return the folder."""
    run_id, folder = _run_folder(settings.report_dir)
    doc = results(settings, records, pool, exitstatus, run_id)
    atomic_write_text(folder / "results.json", json.dumps(doc, indent=1, default=float))
    atomic_write_text(folder / "report.md", render_markdown(doc))
    atomic_write_text(folder / "report.html", render_html(doc))
    _point_latest(settings.report_dir, folder)
    return folder


def summarize(terminal, records: list[ClaimRecord], folder: Path | None) -> None:
    """Print the verdict of every record and where the report went."""
    if not records:
        return
    terminal.section("latent-claims verdicts")
    for r in records:
        expected = "" if r.verdict == r.expected else f"  (expected {r.expected})"
        worst = r.deciding
        terminal.write_line(f"{r.claim:6} {r.model:28} {r.verdict:6} worst margin {worst.margin:+.4g} ({worst.name}){expected}")
    if folder:
        terminal.write_line(f"report: {folder}/report.html (results.json, report.md beside it)")
