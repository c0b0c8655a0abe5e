"""``<report dir>/index.html``: every run in the report folder, newest first, with what changed.

Runs are compared with the previous run of the same replay command (the
nightly history): outcomes that changed are listed per run.
"""

import html
import json
from pathlib import Path

from models.atomic_files import atomic_write_text
from reports.document import RunDocument
from reports.records import count_outcomes, record_key


def runs(base: Path, exclude: str | None = None) -> list[RunDocument]:
    """The results documents of the run folders under ``base``, oldest first (unreadable or damaged ones left out,
    and the folder named ``exclude``: the run being written)."""
    docs = []
    for path in sorted(base.glob("*/results.json")):
        if path.parent.is_symlink() or path.parent.name == exclude:
            continue
        try:
            docs.append(RunDocument.from_json(json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return sorted(docs, key=lambda d: (d.created_utc or "", d.run_id or ""))


def changes(previous: RunDocument, doc: RunDocument) -> list[dict]:
    """Outcome changes from ``previous`` to ``doc``: [{"claim", "model", "test", "was", "now"}] (the shape of the
    baseline's ``verdict_changes``)."""
    old = {record_key(r): r.outcome for r in previous.records}
    out = []
    for r in doc.records:
        was = old.get(record_key(r))
        if was is not None and was != r.outcome:
            out.append({"claim": r.claim, "model": r.model, "test": r.test, "was": was, "now": r.outcome})
    return out


def change_text(change: dict) -> str:
    """A verdict change as a line: "S4.2 on tiny-w96: holds → fails"."""
    return f"{change['claim']} on {change['model']}: {change['was']} → {change['now']}"


def previous_run(earlier: list[RunDocument], replay: str | None) -> RunDocument | None:
    """The newest complete run of ``earlier`` (:func:`runs`) made by the same replay command (the previous night),
    or None. An interrupted run is passed over: its missing records would hide a change (:func:`interrupted_since`
    names the ones passed over)."""
    same = [d for d in earlier if d.replay == replay and d.complete]
    return same[-1] if same else None


def interrupted_since(earlier: list[RunDocument], replay: str | None, previous: RunDocument | None) -> list[str]:
    """The run ids of the interrupted runs of the same replay command newer than ``previous`` (all of them where it is
    None): the runs :func:`previous_run` passed over."""
    after = (previous.created_utc or "", previous.run_id or "") if previous else ("", "")
    return [str(d.run_id) for d in earlier
            if d.replay == replay and not d.complete and (d.created_utc or "", d.run_id or "") > after]


GENERATOR = "<meta name='generator' content='latent-claims'>"  # marks an index.html the suite wrote
OWN_INDEX = "latent-claims-index.html"  # the suite's index where the folder holds a user's own index.html


def written_by_suite(path: Path) -> bool:
    """Whether ``path`` is an index the suite wrote (it carries ``GENERATOR``); False where it is absent."""
    try:
        return GENERATOR in path.read_text(encoding="utf-8", errors="replace")[:1000]
    except OSError:
        return False


OWN_TRENDS = "latent-claims-trends.html"  # the suite's trends page where the folder holds a user's own trends.html


def index_path(base: Path) -> Path:
    """Where the suite's index of ``base`` goes: ``index.html``, unless the folder holds an index.html of the user's
    (one without ``GENERATOR``), which is never replaced: then ``OWN_INDEX`` beside it."""
    index = base / "index.html"
    return index if not index.exists() or written_by_suite(index) else base / OWN_INDEX


def trends_path(base: Path) -> Path:
    """Where the suite's trends page of ``base`` (``reports.trend_page``) goes: ``trends.html``, unless the folder
    holds a trends.html of the user's, which is never replaced: then ``OWN_TRENDS`` beside it."""
    page = base / "trends.html"
    return page if not page.exists() or written_by_suite(page) else base / OWN_TRENDS


def write_index(base: Path, docs: list[RunDocument] | None = None) -> None:
    """Rewrite the suite's index of ``base`` (:func:`index_path`) from the run folders under ``base``, or from
    ``docs`` (:func:`runs`' documents, oldest first) where the caller has them already."""
    rows, last_of = [], {}
    for doc in runs(base) if docs is None else docs:
        previous = last_of.get(doc.replay)
        counts = count_outcomes(r.outcome or "?" for r in doc.records)
        moved = changes(previous, doc) if previous else []
        rows.append((doc, counts, moved, previous))
        if doc.complete:  # the next run is compared with the newest complete one (previous_run)
            last_of[doc.replay] = doc
    esc = html.escape
    body = "".join(
        f"<tr><td><a href='{esc(str(d.run_id))}/report.html'>{esc(str(d.run_id))}</a></td><td>{esc(d.created_utc or '')}</td>"
        f"<td><code>{esc(d.replay or '')}</code></td><td>{esc(', '.join(f'{n} {o}' for o, n in c.items()))}</td>"
        f"<td>{'<br>'.join(esc(change_text(m)) for m in moved) or ('first run of this command' if p is None else 'no change')}</td></tr>"
        for d, c, moved, p in reversed(rows))
    atomic_write_text(index_path(base),
                      f"<!doctype html><meta charset='utf-8'>{GENERATOR}<title>latent-claims runs</title>"
                      "<style>body{font-family:system-ui,sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:3px 7px;"
                      "font-size:13px;vertical-align:top}table{border-collapse:collapse}</style><h1>latent-claims runs</h1>"
                      f"<p><a href='{esc(trends_path(base).name)}'>trends</a>: each record's deciding statistic run by "
                      "run, and the records drifting toward their threshold</p>"
                      "<table><tr><th>run</th><th>created</th><th>replay</th><th>outcomes</th>"
                      f"<th>changed since the previous run of the same command</th></tr>{body}</table>")
