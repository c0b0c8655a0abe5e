"""The report: results.json, report.md/html, the latest link, the history index, baseline comparison, no overwrites."""

import json
import os
import stat
from pathlib import Path

import pytest
import torch

from fixtures.catalogue import catalogue_json
from fixtures.settings import Settings
from reports import render, writer
from reports.baseline import compare
from reports.records import Check, ClaimRecord


def settings_for(tmp_path: Path, baseline=None) -> Settings:
    return Settings("tiny", (), "cpu", torch.float32, 0, None, tmp_path / "reports", baseline)


def record(value: float, model="tiny-w128", plot=None, outcome=None, version=1, control=0.5) -> dict:
    checks = [Check("straightening", value, value - 0.01, value + 0.01, "decades", ">", 0.0, "S0 Fig 2: positive drop"),
              Check("learned", control, control - 0.01, control + 0.01, "decades", ">", 0.0, "S0.5 twin", role="control")]
    rec = ClaimRecord("S0.3", version, model, f"claims/s0_spectra/test_spectra.py::t[{model}]", {}, checks,
                      "procedure", {"slope_by_layer": {"embed": -0.1, "block 1": -1.2}}, plot)
    rec.outcome = outcome or ("holds" if value - 0.01 > 0 else "fails")
    return rec.to_json()


def write(s: Settings, records: list[dict], exitstatus: int = 0) -> Path:
    return writer.write_run(s, records, {}, exitstatus, 100.0, catalogue_json())


SPECTRA = {"kind": "loglog", "x": [0.0, 0.1, 0.2, 0.3], "panels": {"m": {"embed": [1, 1, 1, 1], "block 1": [4, 3, 2, 1]}}}


def test_run_writes_three_files_an_index_and_points_latest(tmp_path):
    s = settings_for(tmp_path)
    folder = write(s, [record(0.2, plot=SPECTRA), record(-0.1, "tiny-w96")])
    assert {p.name for p in folder.iterdir()} == {"results.json", "report.md", "report.html"}
    assert (s.report_dir / "latest").resolve() == folder.resolve()
    assert folder.name in (s.report_dir / "index.html").read_text()
    doc = json.loads((folder / "results.json").read_text())
    assert doc["schema"] == writer.SCHEMA and doc["seed"] == 0 and not doc["interrupted"]
    assert [r["outcome"] for r in doc["records"]] == ["fails", "holds"]  # sorted by claim, model (w96 < w128), test
    assert doc["records"][1]["checks"][0]["margin"] == pytest.approx(0.19)
    assert "data:image/png;base64," in (folder / "report.html").read_text()
    md = (folder / "report.md").read_text()
    # the cell shows the claim check's statistic, not the control's margin
    assert "| S0.3 | FAILS -0.1 [-0.11, -0.09] | holds 0.2 [0.19, 0.21] |" in md


def test_report_files_are_readable_by_others_under_the_usual_umask(tmp_path):
    old = os.umask(0o022)
    try:
        folder = write(settings_for(tmp_path), [record(0.2)])
    finally:
        os.umask(old)
    for path in [folder, *folder.iterdir(), folder.parent / "index.html"]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o044 == 0o044, path


def test_each_claim_has_one_section_with_its_statement_thresholds_and_a_table_of_models(tmp_path):
    md = (write(settings_for(tmp_path), [record(0.2), record(0.3, "tiny-w96")]) / "report.md").read_text()
    assert md.count("## S0.3 — In a trained model the hidden-state spectrum straightens") == 1
    assert md.count("claim check *straightening > 0 decades*: S0 Fig 2: positive drop") == 1
    assert "**tiny-w96 — slope_by_layer**" in md and "| block 1 | -1.2 |" in md  # details as tables, not JSON


def test_coverage_lists_every_catalogued_claim(tmp_path):
    doc = json.loads((write(settings_for(tmp_path), [record(0.2)]) / "results.json").read_text())
    header, rows = render.coverage(doc)
    assert len(rows) == 42
    assert rows[2][:3] == ["S0.3", rows[2][1], "t"] and rows[0][2] == "not yet implemented"


def test_a_failed_control_and_an_error_are_named_in_the_matrix(tmp_path):
    records = [record(0.2, control=-1.0, outcome="control failed"), record(0.2, "tiny-w96", outcome="error")]
    records[1]["message"] = "RuntimeError: Expected all tensors to be on the same device\nTraceback ..."
    md = (write(settings_for(tmp_path), records) / "report.md").read_text()
    assert "CONTROL FAILED: learned" in md and "| ERROR: RuntimeError: Expected all tensors to be on the same device |" in md
    assert "exit status 0 · errors 1" in md


def test_a_second_run_gets_its_own_folder_and_an_interruption_is_marked(tmp_path):
    s = settings_for(tmp_path)
    first = write(s, [record(0.2)])
    second = write(s, [record(0.2)], 2)
    assert first != second and (first / "results.json").exists()
    assert json.loads((second / "results.json").read_text())["interrupted"] is True


def test_the_index_lists_outcome_changes_against_the_previous_run_of_the_same_command(tmp_path):
    s = settings_for(tmp_path)
    write(s, [record(0.2)])
    write(s, [record(-0.2)])
    assert "S0.3 on tiny-w128: holds → fails" in (s.report_dir / "index.html").read_text()


def test_a_real_latest_folder_of_the_user_is_left_alone(tmp_path):
    s = settings_for(tmp_path)
    (s.report_dir / "latest").mkdir(parents=True)
    (s.report_dir / "latest" / "mine.txt").write_text("keep")
    write(s, [record(0.2)])
    assert (s.report_dir / "latest" / "mine.txt").read_text() == "keep"


def test_baseline_lists_outcome_changes_and_moved_statistics(tmp_path):
    s = settings_for(tmp_path)
    old = write(s, [record(0.2), record(0.5, "tiny-w96")]) / "results.json"
    changes = compare(old, [record(-0.2), record(0.505, "tiny-w96")])
    assert [(c["model"], c["was"], c["now"]) for c in changes["verdict_changes"]] == [("tiny-w128", "holds", "fails")]
    assert [m["model"] for m in changes["moved"]] == ["tiny-w128"]  # 0.005 is inside the tolerance 0.02


def test_a_new_procedure_version_is_a_changed_method_not_moved_numbers(tmp_path):
    old = write(settings_for(tmp_path), [record(0.2)]) / "results.json"
    changes = compare(old, [record(0.9, version=2)])
    assert changes["method_changed"] == [{"claim": "S0.3", "model": "tiny-w128", "test": record(0.2)["test"], "was": 1, "now": 2}]
    assert changes["moved"] == []


def test_baseline_changes_come_first_in_the_report(tmp_path):
    old = write(settings_for(tmp_path), [record(0.2)]) / "results.json"
    md = (write(settings_for(tmp_path, baseline=old), [record(-0.2)], 1) / "report.md").read_text()
    assert md.index("Changes since the baseline") < md.index("## Outcomes")
    assert "OUTCOME S0.3 on tiny-w128: holds → fails" in md


def test_a_file_that_is_not_results_json_is_refused(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("[]")
    with pytest.raises(ValueError, match="not a latent-claims results.json"):
        compare(path, [])


@pytest.mark.parametrize("comparison, low, value, high, role, status", [
    (">", 0.1, 0.2, 0.3, "claim", "passed"),
    (">", -0.3, -0.2, -0.1, "claim", "failed"),
    (">", -0.1, 0.05, 0.2, "claim", "inconclusive"),  # the interval contains the threshold 0
    (">", -0.1, -0.05, 0.2, "claim", "inconclusive"),  # also with the point estimate on the failing side
    (">", 0.0, 0.0, 0.0, "claim", "failed"),  # exact and equal: not > 0, and never inconclusive
    ("<", -0.3, -0.2, -0.1, "claim", "passed"),
    ("<", 0.1, 0.2, 0.3, "claim", "failed"),
    ("<", -0.1, 0.05, 0.2, "claim", "inconclusive"),
    (">", -0.1, 0.05, 0.2, "control", "failed"),  # a control must clear its threshold
])
def test_a_check_is_passed_failed_or_inconclusive_by_where_its_interval_lies(comparison, low, value, high, role,
                                                                             status):
    from reports.records import Check

    check = Check("s", value, low, high, "u", comparison, 0.0, "d", role)
    assert check.status == status
    assert (check.sample_factor is None) == (status != "inconclusive")
