"""``python -m reports merge``: runs made on several machines become one report; incomparable runs are refused."""

import json
import subprocess
from pathlib import Path

import pytest

from reports import render, tables, writer
from reports.merge import MergeError, merge
from reports.records import add_model_facts
from reports.document import RunDocument
from reports.results_file import SCHEMA
from tests.builders import CLEAN, edit, load, machine
from tests.helpers import run_cli

REPO = Path(__file__).resolve().parent.parent
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def cli(*args) -> subprocess.CompletedProcess:
    """``python -m reports ARGS`` in this process (``tests.helpers.run_cli``)."""
    return run_cli("reports", *args)


@pytest.fixture
def two_machines(tmp_path) -> tuple[Path, Path]:
    a = machine(tmp_path, "machine-a", {"tiny-w128": 128}, exitstatus=1, peak_rss=300.0)
    b = machine(tmp_path, "machine-b", {"tiny-w96": 96}, peak_rss=200.0)
    edit(b, interrupted=True, wall_seconds=9999.0)
    return a, b


def check_merged(folder: Path, a: Path, b: Path) -> None:
    doc, da, db = load(folder), load(a), load(b)
    assert RunDocument.from_json(doc).records == writer.sort_records(
        RunDocument.from_json(da).records + RunDocument.from_json(db).records)
    assert [(r["claim"], r["model"]) for r in doc["records"]] == [
        ("S0.3", "tiny-w96"), ("S0.3", "tiny-w128"), ("S0.10", "tiny-w96"), ("S0.10", "tiny-w128")]
    assert doc["merged_from"] == [da["run_id"], db["run_id"]] and doc["run_id"] == folder.name
    assert set(doc["models"]) == {"tiny-w128", "tiny-w96"}
    assert doc["peak_rss_mib"] == 300.0 and doc["wall_seconds"] == 9999.0
    assert doc["exit_status"] == 1 and doc["interrupted"] is True
    assert doc["schema"] == SCHEMA and doc["seed"] == 0 and doc["zoo"] == "tiny" and doc["git"] == CLEAN
    assert doc["corpus"] == da["corpus"] and doc["catalogue"] == da["catalogue"] and doc["device"] == da["device"]
    assert doc["replay"] == da["replay"] + " --model tiny-w96" and doc["created_utc"] >= da["created_utc"]
    md = (folder / "report.md").read_text()
    header = render.md_table(*tables.matrix(RunDocument.from_json(doc))).splitlines()[0]
    assert header == "| claim | tiny-w96 | tiny-w128 |" and header in md
    assert "| S0.3 | holds 0.2 [0.19, 0.21] | holds 0.2 [0.19, 0.21] |" in md
    assert "merged from runs: " + ", ".join(doc["merged_from"]) in md
    assert (folder / "report.html").is_file()
    assert (folder.parent / "latest").resolve() == folder.resolve()
    assert folder.name in (folder.parent / "index.html").read_text()


def test_the_cli_merges_two_machines_runs_into_one_report(tmp_path, two_machines):
    a, b = two_machines
    out = tmp_path / "merged"
    done = cli("merge", a, b / "results.json", "--report-dir", out)  # a folder or its results.json
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip())
    assert folder.parent == out and done.stderr == ""
    check_merged(folder, a, b)


def test_the_function_merges_and_a_second_merge_gets_its_own_folder(tmp_path, two_machines):
    a, b = two_machines
    first, warnings = merge([a, b], tmp_path / "merged")
    assert warnings == []
    check_merged(first, a, b)
    second, _ = merge([str(b), str(a)], str(tmp_path / "merged"))
    assert second != first and (first / "results.json").is_file()
    assert load(second)["merged_from"] == [load(b)["run_id"], load(a)["run_id"]]


def test_a_shard_that_did_not_report_is_named(tmp_path, two_machines):
    a, b = two_machines
    edit(a, shard="tiny-w96", replay="pytest claims -m gpu --zoo tiny --seed 0 --shard tiny-w96")
    edit(b, shard="tiny-w128", replay="pytest claims -m gpu --zoo tiny --seed 0 --shard tiny-w128")
    expected = tmp_path / "shards.json"
    expected.write_text(json.dumps(["tiny-w96", "tiny-w128", "ref-gpt2-small"]))
    done = cli("merge", a, b, "--shards", expected, "--report-dir", tmp_path / "merged")
    assert done.returncode == 1, done.stderr  # written, but an incomplete merge cannot pass for a complete one
    assert "warning: shard ref-gpt2-small did not report" in done.stderr
    assert "error: the merged report is incomplete: 1 of the --shards did not report" in done.stderr
    folder = Path(done.stdout.strip())
    assert load(folder)["shards_missing"] == ["ref-gpt2-small"] and load(folder)["exit_status"] == 1
    assert load(folder)["replay"] == "pytest claims -m gpu --zoo tiny --seed 0"  # the shards together: a whole run
    assert "MISSING: shard ref-gpt2-small did not report" in (folder / "report.md").read_text()
    expected.write_text(json.dumps({"tiny-w96": 1}))
    done = cli("merge", a, b, "--shards", expected, "--report-dir", tmp_path / "merged")
    assert done.returncode == 2 and "not a JSON list of names; write it with pytest --list-shards" in done.stderr


def test_a_dirty_checkout_is_merged_with_a_warning(tmp_path, two_machines):
    a, b = two_machines
    edit(b, git=CLEAN + "+dirty")
    done = cli("merge", a, b, "--report-dir", tmp_path / "merged")
    assert done.returncode == 0, done.stderr
    assert "uncommitted changes" in done.stderr and str(b / "results.json") in done.stderr
    assert load(Path(done.stdout.strip()))["git"] == CLEAN + "+dirty"


def assert_refused(done: subprocess.CompletedProcess, out: Path, *names: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == "" and done.stderr.startswith("error: ")
    for name in names:
        assert name in done.stderr, (name, done.stderr)
    assert not out.exists() or not any(out.iterdir()), "a refused merge wrote something"


@pytest.mark.parametrize("field, change, values", [
    ("seed", {}, ("0", "1")),
    ("git", {"git": OTHER}, (repr(CLEAN), repr(OTHER))),
])
def test_the_cli_refuses_runs_with_another_seed_or_commit(tmp_path, field, change, values):
    a = machine(tmp_path, "machine-a", {"tiny-w128": 128})
    b = machine(tmp_path, "machine-b", {"tiny-w96": 96}, seed=1 if field == "seed" else 0)
    edit(b, **change)
    out = tmp_path / "merged"
    done = cli("merge", a, b, "--report-dir", out)
    assert_refused(done, out, f"{field} (", *(f"{v} in run" for v in values),
                   f"run {load(a)['run_id']} ({a / 'results.json'})", f"run {load(b)['run_id']} ({b / 'results.json'})")


def test_the_cli_refuses_a_record_in_two_runs(tmp_path):
    a = machine(tmp_path, "machine-a", {"tiny-w128": 128})
    b = machine(tmp_path, "machine-b", {"tiny-w128": 128, "tiny-w96": 96})
    out = tmp_path / "merged"
    assert_refused(cli("merge", a, b, "--report-dir", out), out, "duplicate record", "S0.3, tiny-w128",
                   str(a / "results.json"), str(b / "results.json"))


def refused(tmp_path: Path, *inputs) -> str:
    """The message of a merge the function refuses; checks that nothing was written."""
    with pytest.raises(MergeError) as err:
        merge(list(inputs), tmp_path / "merged")
    assert not (tmp_path / "merged").exists(), "a refused merge wrote something"
    return str(err.value)


@pytest.mark.parametrize("field, change, shown", [
    ("git", {"git": OTHER + "+dirty"}, repr(OTHER + "+dirty")),
    ("schema", {"schema": "latent-claims/results/4"}, "'latent-claims/results/4'"),  # a schema this version reads
    ("zoo", {"zoo": "full"}, "'full'"),
    ("corpus.sha256", {"corpus": {"name": "other", "sha256": "f" * 64, "characters": 10}}, repr("f" * 64)),
])
def test_the_function_refuses_runs_that_measured_different_things(tmp_path, field, change, shown):
    a = machine(tmp_path, "machine-a", {"tiny-w128": 128})
    b = machine(tmp_path, "machine-b", {"tiny-w96": 96})
    edit(b, **change)
    message = refused(tmp_path, a, b)
    assert message.startswith(f"cannot merge: {field} (") and f"{shown} in run {load(b)['run_id']}" in message
    assert str(a / "results.json") in message and str(b / "results.json") in message


def test_the_same_run_twice_is_refused(tmp_path):
    a = machine(tmp_path, "machine-a", {"tiny-w128": 128})
    assert "given twice" in refused(tmp_path, a, a.parent / "latest")


def test_a_missing_or_unreadable_input_is_refused(tmp_path):
    a = machine(tmp_path, "machine-a", {"tiny-w128": 128})
    out = tmp_path / "merged"
    assert_refused(cli("merge", a, tmp_path / "nowhere", "--report-dir", out), out, "nowhere", "no such")
    (tmp_path / "empty").mkdir()
    assert "without results.json" in refused(tmp_path, a, tmp_path / "empty")
    (tmp_path / "bad.json").write_text("{not json")
    assert "bad.json: is not JSON" in refused(tmp_path, a, tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]")
    assert "not a latent-claims results.json" in refused(tmp_path, a, tmp_path / "list.json")
    (tmp_path / "old.json").write_text(json.dumps({"schema": "latent-claims/results/1", "records": []}))
    assert "old.json: has schema 'latent-claims/results/1', expected" in refused(tmp_path, a, tmp_path / "old.json")
    assert "nothing to merge" in refused(tmp_path)


def test_usage(tmp_path):
    done = cli("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m reports")
    assert "merge" in done.stdout
    assert cli("merge").returncode == 2  # no run folder: argparse's usage error
    assert "--report-dir OUT" in cli("merge", "--help").stdout


def test_runs_an_older_version_left_in_reports_move_to_runs(tmp_path):
    """Only the project's own runs/ adopts, from its reports package folder; a user's folder named runs beside a
    reports/ of their own keeps both as they are (issue 59, item 5)."""
    old = machine(tmp_path, "reports", {"tiny-w96": 96})
    (tmp_path / "reports" / "__init__.py").write_text("")  # the package's code stays where it is
    assert writer.adopt_old_runs(tmp_path / "runs", project=tmp_path) == [old.name]
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["__init__.py"]
    new = machine(tmp_path, "runs", {"tiny-w96": 96})
    assert old.name in (tmp_path / "runs" / "index.html").read_text() and new.name in (tmp_path / "runs" / "index.html").read_text()
    user = tmp_path / "user"
    mine = machine(user, "reports", {"tiny-w96": 96})  # e.g. what `python -m reports merge --report-dir reports` wrote
    before = sorted(p.name for p in (user / "reports").iterdir())
    machine(user, "runs", {"tiny-w96": 96})
    assert sorted(p.name for p in (user / "reports").iterdir()) == before and mine.is_dir()
    assert "index.html" in before and "latest" in before


def test_a_users_own_index_html_is_never_replaced(tmp_path):
    """Issue 59, item 5: the suite wrote its index over a user's own index.html in the report folder."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "index.html").write_text("<p>my notes</p>")
    folder = machine(tmp_path, "mine", {"tiny-w96": 96})
    assert (tmp_path / "mine" / "index.html").read_text() == "<p>my notes</p>"
    assert folder.name in (tmp_path / "mine" / "latent-claims-index.html").read_text()
    machine(tmp_path, "ours", {"tiny-w96": 96})
    again = machine(tmp_path, "ours", {"tiny-w96": 96})  # the suite's own index is its to rewrite
    assert again.name in (tmp_path / "ours" / "index.html").read_text()


def test_model_facts_of_two_processes_keep_both_processes_redrawn_windows():
    """Two workers (or shards) that loaded one model: the first's facts stay, an empty one is filled from the
    second, and the prompt windows each redrew are united, not lost to whichever process reported last."""
    models = {"tiny-w96": {"load_seconds": 1.0, "prompt_batch": None, "prompt_windows_redrawn": {"16 × 35": 1}}}
    add_model_facts(models, {"tiny-w96": {"load_seconds": 2.0, "prompt_batch": [32, 128],
                                          "prompt_windows_redrawn": {"512 × 10": 5}},
                             "tiny-w128": {"load_seconds": 3.0}})
    assert models["tiny-w96"] == {"load_seconds": 1.0, "prompt_batch": [32, 128],
                                  "prompt_windows_redrawn": {"512 × 10": 5, "16 × 35": 1}}
    assert models["tiny-w128"] == {"load_seconds": 3.0}


def test_a_model_that_loaded_in_one_process_is_not_reported_as_failed_by_another():
    """A failed load (only role and error) gives way to a successful one, in either order; facts of other weights or
    another build are not mixed into the kept ones."""
    good = {"role": "trained", "weights_sha256": "a", "build": {"cpu": "x"}, "load_seconds": 1.0, "prompt_batch": None}
    failed = {"role": "trained", "error": "out of memory"}
    for first, second in ((failed, good), (good, failed)):
        models = {"tiny-w96": dict(first)}
        add_model_facts(models, {"tiny-w96": dict(second)})
        assert models["tiny-w96"] == good
    models = {"tiny-w96": dict(good)}
    add_model_facts(models, {"tiny-w96": {**good, "build": {"gpu": "H100"}, "prompt_batch": [64, 128]}})
    assert models["tiny-w96"]["prompt_batch"] is None  # another build's capture is not this one's


def test_a_report_dir_inside_an_input_run_is_refused(tmp_path):
    """Issue 59, item 13: `reports merge RUN --report-dir RUN` wrote the merged folder inside the input run."""
    run = machine(tmp_path, "runs", {"tiny-w96": 96})
    before = sorted(p.name for p in run.iterdir())
    for inside in (run, run / "more"):
        with pytest.raises(MergeError, match="is inside the input run"):
            merge([run], inside)
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written into the run


def test_a_shard_run_made_with_model_instead_of_shard_is_not_called_missing(tmp_path, two_machines):
    """Issue 59, item 13: `reports merge --shards` over runs made with `--model` named every shard "MISSING" although
    its claims were in the report: a shard is reported by a run made for it or by its records."""
    from reports.merge import load_run, merge_runs

    a, b = two_machines  # made with --model tiny-w128 and --model tiny-w96: no shard field
    merged = merge_runs([load_run(a), load_run(b)], ["tiny-w96", "tiny-w128", "ref-gpt2-small"])
    assert merged.doc.shards_missing == ["ref-gpt2-small"]
