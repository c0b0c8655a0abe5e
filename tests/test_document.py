"""The run document (reports/document.py, issue 44): its fields are SCHEMA.md's keys, every results.json this
project writes is a valid --baseline, and a failure in any stage of reporting keeps the records."""

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.catalogue import catalogue_json
from fixtures.option_checks import check_baseline
from reports import baseline, history, render, writer
from reports.document import RunDocument, field_names
from reports.merge import load_run, merge_runs
from tests.test_reports import record, settings_for

SCHEMA_MD = Path(__file__).resolve().parent.parent / "reports" / "SCHEMA.md"


def test_the_document_has_exactly_the_schemas_keys_in_its_order():
    table = SCHEMA_MD.read_text(encoding="utf-8").split("\nA record:")[0]
    keys = re.findall(r"^\| `([a-z_]+)` \|", table, re.M)
    assert field_names() == keys


def test_a_builder_that_forgets_a_key_fails_at_once():
    with pytest.raises(TypeError, match="source_scale"):
        RunDocument(**{k: None for k in field_names() if k != "source_scale"})


def _run(tmp_path: Path, name: str, model: str, **settings) -> Path:
    """A run folder's results.json with one S0.3 record on ``model``, as the plugin writes it."""
    s = replace(settings_for(tmp_path / name), **settings)
    doc = writer.results(s, [record(0.2, model)], {model: {"weights_sha256": "ab" * 32}}, 0, 100.0, catalogue_json())
    path = tmp_path / name / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**doc, "run_id": f"2026010{len(name)}T000000Z"}))
    return path


def _older(path: Path, schema: int) -> Path:
    """The same run as an older schema wrote it: without the keys later schemas added."""
    doc = json.loads(path.read_text())
    dropped = {5: ("user_groups", "builds_not_run"), 6: ("zoo_build", "user_groups", "builds_not_run"),
               4: ("max_prompts", "zoo_build", "user_groups", "builds_not_run", "source_scale", "versions_off_lock")}
    for key in dropped[schema]:
        doc.pop(key, None)
    for r in doc["records"]:
        r.pop("function", None)
        r.pop("not_informative_checks", None)
        if schema < 6:
            r.pop("wall_seconds", None)
        if schema < 5:
            r.pop("looks", None)
    doc["schema"] = f"latent-claims/results/{schema}"
    out = path.with_name(f"schema{schema}.json")
    out.write_text(json.dumps(doc))
    return out


KINDS = ("run", "shard", "merged", "schema 4", "schema 5", "schema 6")


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_results_json_is_a_baseline(tmp_path, kind):
    """A run, a shard, a merged nightly (the crash of issue 44: KeyError 'source_scale') and older schemas."""
    run = _run(tmp_path, "run", "tiny-w96")
    if kind == "shard":
        path = _run(tmp_path, "shard", "tiny-w96", shard="tiny-w96")
    elif kind == "merged":
        other = _run(tmp_path, "other", "tiny-w128")
        merged = merge_runs([load_run(run), load_run(other)]).doc
        path = tmp_path / "merged.json"
        path.write_text(json.dumps({**merged, "run_id": "20260109T000000Z"}))
    elif kind.startswith("schema"):
        path = _older(run, int(kind.split()[1]))
    else:
        path = run
    startup_facts = {"seed": 0, "prompts": [32, 128], "max_prompts": 128, "zoo": "tiny", "corpus": {},
                     "source_scale": None, "device": {"dtype": "float32"}, "records": []}
    assert check_baseline(str(path), startup_facts) == path  # compared with this run's facts at startup
    now = json.loads(run.read_text())
    out = baseline.compare(path, now["records"], now["models"], now)
    assert out["verdict_changes"] == [] and out["moved"] == []
    assert out["differences"] == []  # an older schema's unrecorded facts are no difference


def test_the_merged_document_carries_every_fact_of_its_runs(tmp_path):
    a, b = _run(tmp_path, "a", "tiny-w96"), _run(tmp_path, "b", "tiny-w128")
    doc = merge_runs([load_run(a), load_run(b)]).doc
    assert list(doc) == field_names()
    assert doc["source_scale"] is False and doc["max_prompts"] == json.loads(a.read_text())["max_prompts"]
    assert doc["command"][:4] == ["python", "-m", "reports", "merge"]  # its own, not the first input's


STAGES = [  # (what to break, the stage the report names)
    (baseline, "compare", "baseline comparison"),
    (history, "runs", "changes since the last run"),
    (render, "figures", "figures"),
    (render, "markdown", "report.md"),
    (render, "to_html", "report.html"),
    (history, "write_index", "index"),
]


@pytest.mark.parametrize(("module", "name", "stage"), STAGES, ids=[s for _, _, s in STAGES])
def test_a_failing_stage_keeps_results_json_and_names_the_failure(tmp_path, monkeypatch, module, name, stage):
    s = settings_for(tmp_path, baseline=_run(tmp_path, "earlier", "tiny-w96"))

    def broken(*args, **kwargs):
        raise RuntimeError("injected")
    monkeypatch.setattr(module, name, broken)
    with pytest.raises(writer.ReportIncomplete) as failed:
        writer.write_run(s, [record(0.2, "tiny-w96"), record(-0.1, "tiny-w128")], {}, 0, 100.0, catalogue_json())
    folder = failed.value.folder
    doc = json.loads((folder / "results.json").read_text())
    assert sorted(r["model"] for r in doc["records"]) == ["tiny-w128", "tiny-w96"]
    assert failed.value.failures == [f"{stage}: RuntimeError: injected"]
    note = f"REPORT INCOMPLETE: results.json holds every record, but these stages of writing the report failed: {stage}"
    assert note in (folder / "report.md").read_text() and note in (folder / "report.html").read_text()


@pytest.mark.subprocess
def test_a_failing_report_makes_the_run_exit_non_zero(run_with_broken_report):
    """Through pytest: the records are kept and the exit status is not 0 (``fixtures.collector``)."""
    done, folder = run_with_broken_report
    assert done.returncode == 1
    assert json.loads((folder / "results.json").read_text())["records"]
    assert "REPORT INCOMPLETE" in (folder / "report.md").read_text()


@pytest.fixture
def run_with_broken_report(tmp_path):
    """A claims run (S4.1 on tiny-w96, seconds) whose report.md rendering is broken by a plugin."""
    plugin = tmp_path / "break_render.py"
    plugin.write_text("import reports.render as r\n"
                      "def _broken(*a, **k):\n    raise RuntimeError('injected')\n"
                      "r.markdown = _broken\n")
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "pytest", "claims", "-m", "gpu", "--claim", "S4.1", "--model",
                           "tiny-w96", "--report-dir", str(tmp_path / "runs"), "-p", "break_render", "-q",
                           "-p", "no:cacheprovider"], cwd=root, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    return done, (tmp_path / "runs" / "latest")


def _s08(outcome: str, second: tuple[float, float, float]) -> dict:
    """A user model's S0.8 record: the headline (smallest margin) straddles 0, the other claim check is ``second``."""
    from reports.checks import Check, ClaimRecord

    checks = [Check("alpha of block 1 minus the twin's", -0.0392, -0.0947, 0.0137, "", ">", 0.0, "d"),
              Check("alpha, final minus first", *second, "", ">", 0.0, "d")]
    rec = ClaimRecord("S0.8", 1, "/long/path/to/my-checkpoint", "claims/x.py::t[/long/path/to/my-checkpoint]", {},
                      checks, "p")
    rec.outcome = outcome
    return rec.to_json()


def test_a_cell_shows_the_check_that_decided_and_a_folder_by_its_name():
    """FAILS shows the decisively failed check, not the straddling headline (S0.8 on a user's folder)."""
    from reports.tables import cell, label

    failed = _s08("fails", (-0.0442, -0.0912, -0.0123))
    assert failed["headline"]["value"] == -0.0392  # the smallest margin straddles...
    assert cell(failed).startswith("FAILS -0.0442 [-0.0912, -0.0123]")  # ...the cell shows what decided
    undecided = _s08("inconclusive", (0.05, 0.01, 0.09))
    assert cell(undecided).startswith("inconclusive -0.0392 [-0.0947, 0.0137]")
    assert label(failed) == "my-checkpoint"


@pytest.mark.subprocess
def test_a_run_under_xdist_is_a_baseline(tmp_path):
    """-n 2: the controller writes the document from its workers' records; it serves as --baseline like any run."""
    root = Path(__file__).resolve().parent.parent

    def run(*extra):
        return subprocess.run([sys.executable, "-m", "pytest", "claims", "-m", "gpu", "--claim", "S4.1", "--model",
                               "tiny-w96", "--model", "tiny-w128", "-p", "no:cacheprovider", "-q", *extra], cwd=root,
                              capture_output=True, text=True, timeout=600)

    first = run("-n", "2", "--report-dir", str(tmp_path / "xdist"))
    assert first.returncode == 0, (first.stdout + first.stderr)[-2000:]
    second = run("--baseline", str(tmp_path / "xdist" / "latest" / "results.json"), "--report-dir", str(tmp_path / "c"))
    assert second.returncode == 0, (second.stdout + second.stderr)[-2000:]
    compared = json.loads((tmp_path / "c" / "latest" / "results.json").read_text())["baseline"]
    assert compared["verdict_changes"] == [] and compared["new"] == [] and compared["missing"] == []
