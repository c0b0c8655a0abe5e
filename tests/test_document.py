"""The run document (reports/document.py, issue 44): its fields are SCHEMA.md's keys, every results.json this
project writes is a valid --baseline, and a failure in any stage of reporting keeps the records."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.catalogue import catalogue_json
from fixtures.path_checks import check_baseline
from reports import baseline, history, render, writer
from reports.document import RunDocument, field_names
from reports.merge import load_run, merge_runs
from tests.builders import SPECTRA, record, settings_for
from tests.helpers import pytest_child

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
    doc.run_id = f"2026010{len(name)}T000000Z"
    path = tmp_path / name / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc.to_json()))
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
        merged.run_id = "20260109T000000Z"
        path = tmp_path / "merged.json"
        path.write_text(json.dumps(merged.to_json()))
    elif kind.startswith("schema"):
        path = _older(run, int(kind.split()[1]))
    else:
        path = run
    startup_facts = {"seed": 0, "prompts": [32, 128], "max_prompts": 128, "zoo": "tiny", "corpus": {},
                     "source_scale": None, "device": {"dtype": "float32"}, "records": []}
    assert check_baseline(str(path), startup_facts) == path  # compared with this run's facts at startup
    out = baseline.compare(path, RunDocument.from_json(json.loads(run.read_text())))
    assert out["verdict_changes"] == [] and out["moved"] == []
    assert out["differences"] == []  # an older schema's unrecorded facts are no difference


def test_the_merged_document_carries_every_fact_of_its_runs(tmp_path):
    a, b = _run(tmp_path, "a", "tiny-w96"), _run(tmp_path, "b", "tiny-w128")
    doc = merge_runs([load_run(a), load_run(b)]).doc.to_json()
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
    """Through pytest: the records are kept and the exit status is not 0 (``fixtures.collector``). A child process:
    the plugin that breaks the report replaces a function of ``reports.render`` for the whole process."""
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
    done = pytest_child("claims", "-m", "gpu", "--claim", "S4.1", "--model", "tiny-w96", "--report-dir",
                        str(tmp_path / "runs"), "-p", "break_render", "-q", "-p", "no:cacheprovider", cwd=root,
                        env={"PYTHONPATH": f"{root}:{tmp_path}"}, timeout=600)
    return done, (tmp_path / "runs" / "latest")


def _s08(outcome: str, second: tuple[float, float, float]):
    """A user model's S0.8 record: the headline (smallest margin) straddles 0, the other claim check is ``second``."""
    from reports.checks import Check, ClaimRecord

    checks = [Check("alpha of block 1 minus the twin's", -0.0392, -0.0947, 0.0137, "", ">", 0.0, "d"),
              Check("alpha, final minus first", *second, "", ">", 0.0, "d")]
    rec = ClaimRecord("S0.8", 1, "/long/path/to/my-checkpoint", "claims/x.py::t[/long/path/to/my-checkpoint]", {},
                      checks, "p")
    rec.outcome = outcome
    return rec


def test_a_cell_shows_the_check_that_decided_and_a_folder_by_its_name():
    """FAILS shows the decisively failed check, not the straddling headline (S0.8 on a user's folder)."""
    from reports.tables import cell, label

    failed = _s08("fails", (-0.0442, -0.0912, -0.0123))
    assert failed.headline.value == -0.0392  # the smallest margin straddles...
    assert cell(failed).startswith("FAILS -0.0442 [-0.0912, -0.0123]")  # ...the cell shows what decided
    undecided = _s08("inconclusive", (0.05, 0.01, 0.09))
    assert cell(undecided).startswith("inconclusive -0.0392 [-0.0947, 0.0137]")
    assert label(failed) == "my-checkpoint"


@pytest.mark.subprocess
@pytest.mark.nightly  # a serial and an -n 2 run compared: an equality run, nightly (issue 57)
def test_a_run_under_xdist_is_a_baseline(tmp_path):
    """-n 2: the controller writes the document from its workers' records; it serves as --baseline like any run."""
    root = Path(__file__).resolve().parent.parent

    def run(*extra):
        return pytest_child("claims", "-m", "gpu", "--claim", "S4.1", "--model", "tiny-w96", "--model", "tiny-w128",
                            "-p", "no:cacheprovider", "-q", *extra, cwd=root, timeout=600)

    first = run("-n", "2", "--report-dir", str(tmp_path / "xdist"))
    assert first.returncode == 0, (first.stdout + first.stderr)[-2000:]
    second = run("--baseline", str(tmp_path / "xdist" / "latest" / "results.json"), "--report-dir", str(tmp_path / "c"))
    assert second.returncode == 0, (second.stdout + second.stderr)[-2000:]
    compared = json.loads((tmp_path / "c" / "latest" / "results.json").read_text())["baseline"]
    assert compared["verdict_changes"] == [] and compared["new"] == [] and compared["missing"] == []


GPU_RUN = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu" / "2026-11-26-h200" / "call1-source" / "results.json"


def _written(records: list[dict]) -> list[dict]:
    """Records as results.json holds them: through the writer's NaN-to-null and JSON, without the keys the
    document adds beside each record (``ledger_build``, ``ledger_quotes_disagree``)."""
    return [{k: v for k, v in r.items() if k not in ("ledger_build", "ledger_quotes_disagree")}
            for r in json.loads(json.dumps(writer.finite_json(records)))]


def test_a_record_read_back_is_the_record_written():
    from reports.checks import Check, ClaimRecord

    nan = ClaimRecord("S4.1", 2, "tiny-w96", "claims/s4_ffn/t.py::test_x[tiny-w96]", {"variant": "a"},
                      [Check("ratio", float("nan"), float("nan"), float("inf"), "x", "<", 1.0, "d", n=8,
                             confidence=0.95, interval="BCa bootstrap, 1000 resamples")],
                      outcome="error", message="a NaN", looks=[{"scale": 1, "prompts": 8}], interrupted=True,
                      not_informative_checks={"floor": "no siblings"}, wall_seconds=None, function="test_x")
    written = _written([record(0.2).to_json(), record(-0.1, "tiny-w96", plot=SPECTRA).to_json(), nan.to_json()])
    assert _written([ClaimRecord.from_json(r).to_json() for r in written]) == written
    back = ClaimRecord.from_json(written[2])
    assert back.interrupted and back.checks[0].status == "inconclusive" and not back.checks[0].passed  # null: NaN
    assert "interrupted" not in written[0]  # present only where true, as schema 8 documents it


def test_records_of_an_older_schema_read_with_their_function_from_the_node_id():
    from reports.checks import ClaimRecord

    doc = json.loads(GPU_RUN.read_text())
    assert doc["schema"] == "latent-claims/results/7"
    for raw in doc["records"]:
        raw.pop("function", None)  # as schema 6 and older wrote them
        rec = ClaimRecord.from_json(raw)
        assert rec.function == raw["test"].split("::")[-1].split("[")[0]
        assert [c.name for c in rec.checks] == [c["name"] for c in raw["checks"]]
        assert [c.margin for c in rec.checks] == pytest.approx([c["margin"] for c in raw["checks"]], nan_ok=True)


def test_a_record_on_a_test_report_comes_back_as_the_same_object():
    """Between processes (xdist, JUnit XML) a record is JSON on the test report; the collector gets it back as a
    ``ClaimRecord``, equal to the one the test made."""
    from types import SimpleNamespace

    from fixtures.recording import records_of
    from fixtures.stash import RECORD_PROPERTY
    from reports.checks import ClaimRecord

    made = record(0.2, plot=SPECTRA)
    report = SimpleNamespace(user_properties=[("other", "x"), (RECORD_PROPERTY, json.dumps(made.to_json()))])
    [back] = records_of(report)
    assert isinstance(back, ClaimRecord) and back == made
