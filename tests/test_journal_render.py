"""`python -m reports journal FILE` renders a killed run's journal once, as the version that wrote it, and says what is
wrong with a damaged one (issue 74, case 15)."""

import json

from reports.__main__ import main
from reports.journal import Journal, journal_header
from reports.results_file import SCHEMA
from tests.builders import load, machine, settings_for


def _journal(tmp_path, **header_changes):
    run = machine(tmp_path, "a", {"tiny-w96": 96})
    doc = load(run)
    journal = Journal.start(tmp_path / "killed", {k: v for k, v in doc.items() if k != "records"} | header_changes)
    for r in doc["records"]:
        journal.record(r)
    return journal.path


def test_a_journal_rendered_twice_makes_one_run_folder(tmp_path, capsys):
    path = _journal(tmp_path)
    assert main(["journal", str(path)]) == 0
    folder = capsys.readouterr().out.strip()
    assert main(["journal", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"already rendered as {folder}" in err
    assert len([p for p in path.parent.glob("20*") if p.is_dir() and not p.is_symlink()]) == 1


def test_a_journal_of_another_schema_is_not_relabelled(tmp_path, capsys):
    path = _journal(tmp_path, schema="latent-claims/results/8")
    assert main(["journal", str(path)]) == 2
    err = capsys.readouterr().err
    assert "latent-claims/results/8" in err and SCHEMA in err and "git checkout" in err


def test_a_record_without_its_test_is_named_by_line(tmp_path, capsys):
    path = _journal(tmp_path)
    lines = path.read_text().splitlines()
    entry = json.loads(lines[1])
    del entry["record"]["test"]
    lines[1] = json.dumps(entry)
    path.write_text("\n".join(lines) + "\n")
    assert main(["journal", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "'test'" in err and "error: " + str(path) + ": 'test'" not in err


def test_the_journal_header_names_the_claims_the_run_selected(tmp_path):
    """A rendered journal listed all 42 claims as "not run": its header lacked claims_selected."""
    header = journal_header(settings_for(tmp_path), ["S0.3", "S0.3", "S2.1"])
    assert header["claims_selected"] == ["S0.3", "S2.1"] and header["records"] == []
