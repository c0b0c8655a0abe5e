"""The run's journal: each record appended to a file in the report folder as it is made, so that a run killed
without a word (SIGKILL: the OOM killer on a GPU machine) keeps what it measured (issue 67, case 6).

The process that writes the report (the xdist controller, or a serial run) opens
``<report dir>/journal-<UTC start>-<pid>.jsonl`` at its first record. Its first line is the run's facts
(``{"kind": "run", "doc": results.json without records}``), each further line one record
(``{"kind": "record", "record": ...}`` as results.json stores it), each followed in a serial run by the loaded
models' facts (``{"kind": "models", "models": ...}``, weights digests included); every line is one ``os.write`` to a file opened
with ``O_APPEND``, so a kill leaves whole lines and at most a torn last one. When the report is written the journal
is removed: results.json holds every record. ``python -m reports journal FILE`` renders a left-over journal as a
run folder, marked interrupted: once (:func:`rendered_as` finds an earlier rendering), only a journal of this
version's schema (an older one is not relabelled as the current), and a damaged line is named by its number.
The header names the claims the run selected (:func:`journal_header`), so a rendered report does not list every
other claim as "not run".
"""

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from reports.document import RunDocument
from reports.records import zoo_build_of
from reports.writer import finite_json

KILLED = "killed: rendered from its journal {name}; the process ended without writing its report"


class Journal:
    """An append-only JSON-lines file of one run's records.

    Attributes:
        path: the journal's file.
    """

    def __init__(self, path: Path, header: dict):
        """Create ``path`` and write ``header`` (results.json's keys, no records) as its first line.

        Raises:
            OSError: if the file cannot be created (the caller goes on without a journal).
        """
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_EXCL, 0o644)
        self.append("run", "doc", header)

    @classmethod
    def start(cls, report_dir: Path, header: dict) -> "Journal":
        """A new journal under ``report_dir``, named by the UTC time and this process' id."""
        report_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        return cls(report_dir / f"journal-{stamp}-{os.getpid()}.jsonl", header)

    def append(self, kind: str, key: str, value: dict) -> None:
        """Append one line ``{"kind": kind, key: value}`` with one write (NaN and inf as null)."""
        line = json.dumps(finite_json({"kind": kind, key: value}), default=float, allow_nan=False)
        os.write(self._fd, (line + "\n").encode())

    def record(self, record_json: dict) -> None:
        """Append one record as results.json stores it."""
        self.append("record", "record", record_json)

    def remove(self) -> None:
        """Close and delete the journal: the report holds its records."""
        os.close(self._fd)
        self.path.unlink(missing_ok=True)


def journal_header(settings, selected: list[str] | None) -> dict:
    """A journal's first line's ``doc``: results.json's keys without records, of an interrupted run, with the claim
    ids of the tests the run selected (``claims_selected``; None where this process collected none).

    Args:
        settings: the run's ``fixtures.settings.Settings``.
        selected: the selected tests' claim ids (repeats allowed), or None.
    """
    from fixtures.catalogue import catalogue_json
    from reports.writer import results

    header = results(settings, [], {}, 2, 0.0, catalogue_json(), selected=selected)  # 2: pytest's INTERRUPTED
    return finite_json(header.to_json())


def read(path: Path) -> RunDocument:
    """The run a journal holds, marked interrupted: its facts and every whole record line, a later record of the
    same test replacing an earlier one (as the collector does); a torn last line is left out.

    Raises:
        ValueError: if the file's first line is not a journal's header, its schema is not this version's (an older
            journal is not relabelled as the current schema: render it with the version that wrote it), or a line
            is not a record or models line as this version writes them (naming the line).
        OSError: if it cannot be read.
    """
    from reports.results_file import SCHEMA

    lines = path.read_text(encoding="utf-8").splitlines()
    entries = []
    for number, line in enumerate(lines, start=1):
        try:
            entries.append((number, json.loads(line)))
        except ValueError:
            continue  # the line the kill tore
    if not entries or not isinstance(entries[0][1], dict) or entries[0][1].get("kind") != "run":
        raise ValueError(f"{path}: not a latent-claims journal (its first line is not the run's facts)")
    schema = (entries[0][1].get("doc") or {}).get("schema")
    if schema != SCHEMA:
        git = (entries[0][1].get("doc") or {}).get("git") or "the commit that wrote it"
        raise ValueError(f"{path}: a journal of schema {schema!r}, and this version writes {SCHEMA!r}: render it "
                         f"with the version that wrote it (git checkout {str(git).removesuffix('+dirty')}), so that "
                         "its records are not relabelled")
    records, models = {}, {}
    for number, entry in entries[1:]:
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if kind == "record":
            record = entry.get("record")
            if not isinstance(record, dict) or not isinstance(record.get("test"), str):
                raise ValueError(f"{path}: line {number}: a record without its 'test' (the node id): the journal is "
                                 "damaged; remove that line to render the rest")
            records[record["test"]] = record
        elif kind == "models" and isinstance(entry.get("models"), dict):  # the pool's facts as of each record
            models.update(entry["models"])
    doc = RunDocument.from_json({**entries[0][1]["doc"], "records": list(records.values()),
                                 "models": dict(sorted(models.items()))})
    doc.interrupted, doc.exit_status = True, max(int(doc.exit_status or 0), 2)
    doc.zoo_build = zoo_build_of(doc.models)
    doc.incomplete = [*doc.incomplete, KILLED.format(name=path.name)]
    return doc


def rendered_as(path: Path, base: Path) -> Path | None:
    """The run folder under ``base`` an earlier ``python -m reports journal`` made from this journal (its
    ``incomplete`` names the journal's file), or None."""
    from reports import history

    said = KILLED.format(name=path.name)
    earlier = [d for d in history.runs(base) if said in (d.incomplete or [])]
    return base / earlier[-1].run_id if earlier else None
