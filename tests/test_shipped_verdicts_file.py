"""models/shipped/verdicts.json is written only from what it may hold (issue 74, cases 4 and 5): no error record over
a good one, no older procedure version over a newer one, no record on a model outside the zoo (a local path), the
header's machines those whose records it holds, and never over a file that cannot be read."""

import json

import pytest

import models.shipped as shipped_zoo
from reports.__main__ import main
from reports.results_file import SCHEMA


def _record(model: str, outcome: str = "holds", version: int = 2, value: float | None = 0.5) -> dict:
    checks = [] if value is None else [{"name": "x", "value": value, "ci_low": value - 0.1, "ci_high": value + 0.1,
                                         "threshold": 0.0}]
    return {"claim": "S4.1", "version": version, "model": model, "test": f"claims/t.py::test_x[{model}]",
            "outcome": outcome, "checks": checks}


def _run(tmp_path, name: str, records: list[dict], cpu: str = "Intel (AVX512)") -> str:
    models = {r["model"]: {"role": "trained", "zoo_build": "shipped", "build": {"cpu": cpu}} for r in records}
    doc = {"schema": SCHEMA, "run_id": name, "git": "abc", "zoo_build": "shipped", "interrupted": False,
           "versions": {"torch": "2"}, "models": models, "records": records, "seed": 0, "prompts": [32, 128],
           "max_prompts": 128, "zoo": "tiny", "device": {"dtype": "float32"}, "source_scale": False}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture
def verdicts(tmp_path, monkeypatch):
    target = tmp_path / "verdicts.json"
    monkeypatch.setattr(shipped_zoo, "VERDICTS", target)
    return target


def _kept(verdicts) -> dict:
    return json.loads(verdicts.read_text())


def test_a_merge_keeps_a_good_record_over_an_error_and_a_newer_version_over_an_older(tmp_path, verdicts, capsys):
    assert main(["shipped", _run(tmp_path, "whole", [_record("tiny-w96"), _record("tiny-w128")]), "--write"]) == 0
    before = _kept(verdicts)["records"]
    partial = _run(tmp_path, "partial", [_record("tiny-w96", "error", value=None),
                                         _record("tiny-w128", "fails", version=1, value=-0.5)])
    assert main(["shipped", partial, "--merge", "--write"]) == 0
    out = capsys.readouterr()
    assert _kept(verdicts)["records"] == before
    assert "kept the file's S4.1|test_x[tiny-w96] (holds) over this run's error" in out.err
    assert "kept the file's S4.1|test_x[tiny-w128] (version 2) over this run's older version 1" in out.err


def test_a_whole_run_does_not_write_an_error_over_a_good_record(tmp_path, verdicts, capsys):
    assert main(["shipped", _run(tmp_path, "whole", [_record("tiny-w96")]), "--write"]) == 0
    written = verdicts.read_text()
    assert main(["shipped", _run(tmp_path, "again", [_record("tiny-w96", "error", value=None)]), "--write"]) == 2
    err = capsys.readouterr().err
    assert "error: kept the file's S4.1|test_x[tiny-w96] (holds) over this run's error" in err and "nothing written" in err
    assert verdicts.read_text() == written


def test_records_on_models_outside_the_zoo_are_left_out_and_named(tmp_path, verdicts, capsys):
    mixed = _run(tmp_path, "mixed", [_record("tiny-w96"), _record(str(tmp_path / "w96"))])
    assert main(["shipped", mixed, "--write"]) == 0
    assert list(_kept(verdicts)["records"]) == ["S4.1|test_x[tiny-w96]"]
    assert "left out 1 record on models that are not the zoo's" in capsys.readouterr().err


def test_a_merge_names_every_machine_whose_records_the_file_holds(tmp_path, verdicts):
    assert main(["shipped", _run(tmp_path, "whole", [_record("tiny-w96"), _record("tiny-w128")]), "--write"]) == 0
    other = _run(tmp_path, "other", [_record("tiny-w96", value=0.6)], cpu="AMD EPYC (AVX2)")
    assert main(["shipped", other, "--merge", "--write"]) == 0
    kept = _kept(verdicts)
    assert kept["machines"] == ["AMD EPYC (AVX2)", "Intel (AVX512)"]
    assert kept["updated_by"][-1]["machines"] == ["AMD EPYC (AVX2)"]


@pytest.mark.parametrize("damage", ["<<<<<<< HEAD\n", "[]", '{"records": 3}'])
def test_a_damaged_verdicts_file_is_never_written_over(tmp_path, verdicts, capsys, damage):
    """Case 5: a file with a merge-conflict line was read as empty, and --write replaced 343 records with 2."""
    verdicts.write_text(damage + '{"records": {}}\n')
    run = _run(tmp_path, "whole", [_record("tiny-w96")])
    assert main(["shipped", run]) == 0
    assert f"cannot read {verdicts}" in capsys.readouterr().err  # the dry run warns
    assert main(["shipped", run, "--write"]) == 2
    err = capsys.readouterr().err
    assert f"cannot read {verdicts}" in err and "nothing written" in err
    assert verdicts.read_text() == damage + '{"records": {}}\n'
