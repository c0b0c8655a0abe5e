"""`python -m reports ledger RUN --write` keeps the user's file as it was made (issue 74, cases 8, 9, 12, 13): a
symlinked ledger stays a link and its target is rewritten, the file's mode stays, two writers do not lose an update,
a user's own ledger can be refreshed at the user's settings, and a read-only ledger or an entry without `version`
gets a clear error."""

import json
import os
import stat
import threading

import pytest

import reports.ledger_file as ledger_file
from reports.__main__ import main
from tests.builders import run_failing_as_expected


def _entry(claim: str, sha: str, why: str = "old words. Measured on weights 000000000000 (x, torch 1): old.",
           version: str = "version = 1\n") -> str:
    return (f'[[expected]]\nclaim = "{claim}"\n{version}model = "tiny-w96"\nfingerprint = "f"\n'
            f'weights_sha256 = "{sha}"\nwhy = "{why}"\nwould_change = "c"\n')


@pytest.fixture
def measured(tmp_path):
    """(run folder, ledger file with one entry the run measured)."""
    run = tmp_path / "run"
    run.mkdir()
    sha, rec = run_failing_as_expected(run)
    ledger = tmp_path / "ledger.toml"
    ledger.write_text("# mine\n" + _entry(rec.claim, sha))
    return run, ledger


def test_a_symlinked_ledger_stays_a_link_and_its_target_is_rewritten(tmp_path, measured):
    run, target = measured
    link = tmp_path / "link.toml"
    link.symlink_to(target)
    assert main(["ledger", str(run), "--ledger", str(link), "--write"]) == 0
    assert link.is_symlink() and "abababababab" in target.read_text()


def test_the_ledgers_mode_is_kept(measured):
    run, ledger = measured
    ledger.chmod(0o600)
    assert main(["ledger", str(run), "--ledger", str(ledger), "--write"]) == 0
    assert "abababababab" in ledger.read_text() and stat.S_IMODE(ledger.stat().st_mode) == 0o600


def test_two_writers_at_once_do_not_lose_an_update(tmp_path, measured, monkeypatch):
    """Case 9: each writer re-reads the ledger under a lock, so a line another changed meanwhile is kept."""
    run, ledger = measured
    from reports import ledger_text

    real = ledger_text.rewrite
    started, other_done = threading.Event(), threading.Event()

    def slow_rewrite(text, doc):
        started.set()
        other_done.wait(timeout=2)  # the other writer edits the file while this one holds its text
        return real(text, doc)

    def other_writer():
        started.wait(timeout=5)
        ledger.write_text(ledger.read_text().replace("# mine", "# mine, edited meanwhile"))
        other_done.set()

    monkeypatch.setattr(ledger_text, "rewrite", slow_rewrite)
    thread = threading.Thread(target=other_writer)
    thread.start()
    assert main(["ledger", str(run), "--ledger", str(ledger), "--write"]) == 0
    thread.join()
    text = ledger.read_text()
    assert "# mine, edited meanwhile" in text and "abababababab" in text  # neither update is lost


def test_a_users_own_ledger_is_refreshed_at_the_users_settings(tmp_path, measured, capsys):
    """Case 12: docs/red-verdict.md's step 3 refreshes the user's own ledger from the user's own run."""
    run, ledger = measured
    doc = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps({**doc, "seed": 3, "prompts": [8, 64]}))
    assert main(["ledger", str(run), "--ledger", str(ledger), "--write"]) == 0
    assert "abababababab" in ledger.read_text()
    assert "--seed 3" in capsys.readouterr().err  # said, not refused
    monkeypatch_shipped = pytest.MonkeyPatch()
    monkeypatch_shipped.setattr(ledger_file, "SHIPPED_LEDGER", ledger)
    try:
        ledger.write_text(ledger.read_text().replace("abababababab (", "000000000000 ("))
        before = ledger.read_text()
        assert main(["ledger", str(run), "--ledger", str(ledger), "--write"]) == 2
        assert "the shipped ledger's whys quote runs of the shipped settings" in capsys.readouterr().err
        assert ledger.read_text() == before
    finally:
        monkeypatch_shipped.undo()


def test_a_read_only_ledger_is_an_error_before_anything_is_said_rewritten(measured, capsys, monkeypatch):
    run, ledger = measured
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(ledger) else real_access(p, mode))
    before = ledger.read_text()
    assert main(["ledger", str(run), "--ledger", str(ledger), "--write"]) == 2
    out = capsys.readouterr()
    assert f"cannot write {ledger}" in out.err and "rewritten" not in out.out and "Traceback" not in out.err
    assert ledger.read_text() == before


def test_an_entry_without_a_version_is_named(tmp_path, measured, capsys):
    run, ledger = measured
    ledger.write_text(ledger.read_text().replace("version = 1\n", ""))
    assert main(["ledger", str(run), "--ledger", str(ledger)]) == 2
    err = capsys.readouterr().err
    assert "entry 1" in err and "version" in err and "KeyError" not in err
