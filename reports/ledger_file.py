"""``python -m reports ledger RUN [--ledger FILE] [--write]``: refresh the measured part of a ledger's whys from a run
(``reports.ledger_text``), and write the file back as the user made it (issue 74, cases 8, 9, 12, 13).

- the file is rewritten in place (``models.atomic_files.replace_text_in_place``): a symlinked ledger stays a link
  and its target is rewritten; its mode stays;
- two writers at once do not lose an update: the read, the rewrite and the replace happen under a lock
  (``filelock``, a lock file in the system's temporary folder keyed by the ledger's real path, so nothing is left
  beside the ledger), and the file is read again just before it is replaced: an edit made meanwhile by anything
  that does not take the lock (an editor) is rewritten again from, never written over;
- the shipped ledger (claims/expected_verdicts.toml) quotes runs of the shipped settings and refuses a run made with
  others; a user's own ledger is refreshed at the user's settings (docs/red-verdict.md, step 3), which are named;
- a ledger that cannot be written, or an entry without ``version``, is an error saying so before anything is said
  rewritten.
"""

import hashlib
import os
import sys
import tempfile
import tomllib
from contextlib import nullcontext
from pathlib import Path

from filelock import FileLock, Timeout

from reports import ledger_text
from reports.ledger_keys import LEDGER

SHIPPED_LEDGER = LEDGER  # the ledger whose whys quote runs of the shipped settings
LOCK_SECONDS = 60  # how long a writer waits for another to finish
TRIES = 3  # rewrites from a file changed meanwhile before giving up


def lock_for(ledger: Path) -> FileLock:
    """The lock every ``ledger --write`` on this file takes: one per real path (a link and its target share it)."""
    key = hashlib.sha256(str(ledger.resolve()).encode()).hexdigest()[:16]
    return FileLock(Path(tempfile.gettempdir()) / f"latent-claims-ledger-{key}.lock", timeout=LOCK_SECONDS)


def _refused(doc, ledger: Path) -> tuple[list[str], list[str]]:
    """(what refuses a --write from this run, what is only said): an interrupted or incomplete run is refused for
    every ledger; other settings than the shipped verdicts' only for the shipped ledger."""
    from reports.shipped_verdicts import load, settings_differ

    broken = (["the run was interrupted: its records are incomplete"] if doc.interrupted else []) + \
        ([f"the run is incomplete ({'; '.join(doc.incomplete)})"] if doc.incomplete else [])
    settings = settings_differ(doc, load())
    shipped = ledger.resolve() == Path(SHIPPED_LEDGER).resolve()
    return broken + (settings if shipped else []), ([] if shipped else settings)


def _writable(path: Path) -> str:
    """Why ``path`` (a link's target) cannot be rewritten in place, or ""."""
    target = path.resolve()
    if not os.access(target, os.W_OK):
        return f"cannot write {path} (the file is read-only)"
    if not os.access(target.parent, os.W_OK):
        return f"cannot write {path} (its folder {target.parent} is read-only: the file is replaced atomically)"
    return ""


def refresh_ledger(run: str, ledger: str, write: bool) -> int:
    """``python -m reports ledger``: print each measured entry's state; with ``write``, rewrite the file.

    Args:
        run: a run folder holding results.json, or the file.
        ledger: the ledger file (TOML) to refresh.
        write: rewrite ``ledger`` in place (atomically, its link and mode kept, under a lock) where a why changed;
            else only print.
    Returns:
        the exit status: 0, or 2 when the run or the ledger cannot be read, an entry is malformed, or with
        ``write`` when the ledger cannot be written, the run was interrupted, or (the shipped ledger only) the run
        was made with other settings than the shipped verdicts (seed, prompts, dtype, scale, zoo).
    """
    from models.atomic_files import replace_text_in_place
    from reports.__main__ import _results_of
    from reports.results_file import ResultsFileError

    path = Path(ledger)
    try:
        doc = _results_of(run)
    except ResultsFileError as err:
        print(f"error: {run}: {err}", file=sys.stderr)
        return 2
    refused, said = _refused(doc, path)
    if refused and write:
        print(f"error: {run}: the shipped ledger's whys quote runs of the shipped settings, and this run differs: "
              f"{'; '.join(refused)}; nothing written: measure the entries again with `make claims` or "
              "`pytest claims -m gpu --claim ...` at the shipped settings", file=sys.stderr)
        return 2
    if said:
        print(f"note: {ledger} is refreshed from a run at other settings than the shipped verdicts': "
              f"{'; '.join(said)}; its whys will quote this run", file=sys.stderr)
    unwritable = _writable(path) if write and path.exists() else ""
    if unwritable:
        print(f"error: {unwritable}; nothing written: make it writable, or leave out --write to see what would "
              "change", file=sys.stderr)
        return 2
    try:
        with lock_for(path) if write else nullcontext():  # a dry run takes no lock
            for _ in range(TRIES):
                read = path.read_text(encoding="utf-8")
                text, refreshes = ledger_text.rewrite(read, doc)
                if not write or not any(r.why for r in refreshes):
                    break
                if path.read_text(encoding="utf-8") == read:  # read again just before the replace
                    replace_text_in_place(path, text)
                    break
            else:
                print(f"error: {ledger} kept changing while it was rewritten ({TRIES} tries); nothing written: run "
                      "again when no one else is editing it", file=sys.stderr)
                return 2
    except Timeout:
        print(f"error: another `reports ledger --write` has held {ledger} for {LOCK_SECONDS} s; nothing written: "
              "run again when it is done", file=sys.stderr)
        return 2
    except (OSError, tomllib.TOMLDecodeError) as err:  # the ledger unreadable or not TOML, or the replace failed
        print(f"error: {ledger}: {err}; nothing written", file=sys.stderr)
        return 2
    except ValueError as err:  # the ledger's layout, or a record without a failed check: the message says which
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not refreshes:
        print(f"no entry of {ledger} applies to run {doc.run_id or run}: it measured none of their claims, models "
              "and tests; nothing to re-measure")
    for r in refreshes:
        print(f"{r.entry}: {r.note}" + (f"\n    why = {r.why}" if r.why and not write else ""))
    return 0
