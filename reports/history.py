"""``<report dir>/index.html``: every run in the report folder, newest first, with what changed.

Runs are compared with the previous run of the same replay command (the
nightly history): outcomes that changed are listed per run.
"""

import html
import json
from pathlib import Path

from models.cache import atomic_write_text


def _runs(base: Path) -> list[dict]:
    docs = []
    for path in sorted(base.glob("*/results.json")):
        if path.parent.is_symlink():
            continue
        try:
            docs.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return sorted(docs, key=lambda d: (d.get("created_utc") or "", d.get("run_id") or ""))


def changes(previous: dict, doc: dict) -> list[str]:
    """Outcome changes from ``previous`` to ``doc``, as "claim on subject: was → now"."""
    old = {(r["claim"], r["model"], r["test"]): r.get("outcome") for r in previous.get("records", [])}
    out = []
    for r in doc.get("records", []):
        was = old.get((r["claim"], r["model"], r["test"]))
        if was is not None and was != r.get("outcome"):
            out.append(f"{r['claim']} on {r['model']}: {was} → {r.get('outcome')}")
    return out


def write_index(base: Path) -> None:
    """Rewrite ``base/index.html`` from the run folders under ``base``."""
    rows, last_of = [], {}
    for doc in _runs(base):
        previous = last_of.get(doc.get("replay"))
        counts: dict[str, int] = {}
        for r in doc.get("records", []):
            counts[r.get("outcome", "?")] = counts.get(r.get("outcome", "?"), 0) + 1
        moved = changes(previous, doc) if previous else []
        rows.append((doc, counts, moved, previous))
        last_of[doc.get("replay")] = doc
    esc = html.escape
    body = "".join(
        f"<tr><td><a href='{esc(d['run_id'])}/report.html'>{esc(d['run_id'])}</a></td><td>{esc(d.get('created_utc', ''))}</td>"
        f"<td><code>{esc(d.get('replay', ''))}</code></td><td>{esc(', '.join(f'{n} {o}' for o, n in c.items()))}</td>"
        f"<td>{'<br>'.join(esc(m) for m in moved) or ('first run of this command' if p is None else 'no change')}</td></tr>"
        for d, c, moved, p in reversed(rows))
    atomic_write_text(base / "index.html",
                      "<!doctype html><meta charset='utf-8'><title>latent-claims runs</title>"
                      "<style>body{font-family:system-ui,sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:3px 7px;"
                      "font-size:13px;vertical-align:top}table{border-collapse:collapse}</style><h1>latent-claims runs</h1>"
                      "<table><tr><th>run</th><th>created</th><th>replay</th><th>outcomes</th>"
                      f"<th>changed since the previous run of the same command</th></tr>{body}</table>")
