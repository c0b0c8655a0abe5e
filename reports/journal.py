"""The run's journal: each record appended to a file in the report folder as it is made, so that a run killed
without a word (SIGKILL: the OOM killer on a GPU machine) keeps what it measured (issue 67, case 6).

The process that writes the report (the xdist controller, or a serial run) opens
``<report dir>/journal-<UTC start>-<pid>.jsonl`` at its first record. Its first line is the run's facts
(``{"kind": "run", "doc": results.json without records}``), each further line one record
(``{"kind": "record", "record": ...}`` as results.json stores it), each followed in a serial run by the loaded
models' facts (``{"kind": "models", "models": ...}``, weights digests included); every line is one ``os.write`` to a file opened
with ``O_APPEND``, so a kill leaves whole lines and at most a torn last one. When the report is written the journal
is removed: results.json holds every record. ``python -m reports journal FILE`` renders a left-over journal as a
run folder, marked interrupted.
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


def read(path: Path) -> RunDocument:
    """The run a journal holds, marked interrupted: its facts and every whole record line, a later record of the
    same test replacing an earlier one (as the collector does); a torn last line is left out.

    Raises:
        ValueError: if the file's first line is not a journal's header.
        OSError: if it cannot be read.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue  # the line the kill tore
    if not entries or entries[0].get("kind") != "run":
        raise ValueError(f"{path}: not a latent-claims journal (its first line is not the run's facts)")
    records, models = {}, {}
    for entry in entries[1:]:
        if entry.get("kind") == "record":
            records[entry["record"]["test"]] = entry["record"]
        elif entry.get("kind") == "models":  # the pool's facts as of each record: the latest of each model
            models.update(entry["models"])
    doc = RunDocument.from_json({**entries[0]["doc"], "records": list(records.values()),
                                 "models": dict(sorted(models.items()))})
    doc.interrupted, doc.exit_status = True, max(int(doc.exit_status or 0), 2)
    doc.zoo_build = zoo_build_of(doc.models)
    doc.incomplete = [*doc.incomplete, KILLED.format(name=path.name)]
    return doc
