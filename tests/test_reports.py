"""The report: results.json, report.md/html, the latest link, baseline comparison, no overwrites."""

import json
from pathlib import Path

import pytest
import torch

from fixtures.settings import Settings
from reports import writer
from reports.baseline import compare
from reports.records import Check, ClaimRecord


def settings_for(tmp_path: Path, baseline=None) -> Settings:
    return Settings("tiny", (), "cpu", torch.float32, 0, None, tmp_path / "reports", baseline)


def record(value: float, model="tiny-w128", plot=None) -> ClaimRecord:
    check = Check("straightening", value, value - 0.01, value + 0.01, "decades", ">", 0.0, "S0 Fig 2: positive drop")
    return ClaimRecord("S0.3", "S0 Fig 2", model, f"claims/test_spectra.py::t[{model}]", [check], "procedure", {}, plot)


SPECTRA = {"kind": "spectra", "freqs": [0.0, 0.1, 0.2, 0.3], "panels": {"m": {"embed": [1, 1, 1, 1], "block 1": [4, 3, 2, 1]}}}


def test_run_writes_three_files_and_points_latest(tmp_path):
    s = settings_for(tmp_path)
    folder = writer.write_run(s, [record(0.2, plot=SPECTRA), record(-0.1, "tiny-w96")], None, 0)
    assert {p.name for p in folder.iterdir()} == {"results.json", "report.md", "report.html"}
    assert (s.report_dir / "latest").resolve() == folder.resolve()
    doc = json.loads((folder / "results.json").read_text())
    assert doc["schema"] == writer.SCHEMA and doc["seed"] == 0 and not doc["interrupted"]
    assert [r["verdict"] for r in doc["records"]] == ["holds", "fails"]
    assert doc["records"][0]["checks"][0]["margin"] == pytest.approx(0.19)
    assert "data:image/png;base64," in (folder / "report.html").read_text()
    assert "| S0.3 | holds +0.19 | FAILS (unexpected) -0.11 |" in (folder / "report.md").read_text()


def test_a_second_run_gets_its_own_folder_and_an_interruption_is_marked(tmp_path):
    s = settings_for(tmp_path)
    first = writer.write_run(s, [record(0.2)], None, 0)
    second = writer.write_run(s, [record(0.2)], None, 2)
    assert first != second and (first / "results.json").exists()
    assert json.loads((second / "results.json").read_text())["interrupted"] is True


def test_a_real_latest_folder_of_the_user_is_left_alone(tmp_path):
    s = settings_for(tmp_path)
    (s.report_dir / "latest").mkdir(parents=True)
    (s.report_dir / "latest" / "mine.txt").write_text("keep")
    writer.write_run(s, [record(0.2)], None, 0)
    assert (s.report_dir / "latest" / "mine.txt").read_text() == "keep"


def test_baseline_lists_verdict_changes_and_moved_statistics(tmp_path):
    s = settings_for(tmp_path)
    old = writer.write_run(s, [record(0.2), record(0.5, "tiny-w96")], None, 0) / "results.json"
    now = [record(-0.2).to_json(), record(0.505, "tiny-w96").to_json()]
    changes = compare(old, now)
    assert [(c["model"], c["was"], c["now"]) for c in changes["verdict_changes"]] == [("tiny-w128", "holds", "fails")]
    assert [m["model"] for m in changes["moved"]] == ["tiny-w128"]  # 0.005 is inside the tolerance 0.02


def test_baseline_changes_come_first_in_the_report(tmp_path):
    old = writer.write_run(settings_for(tmp_path), [record(0.2)], None, 0) / "results.json"
    folder = writer.write_run(settings_for(tmp_path, baseline=old), [record(-0.2)], None, 1)
    md = (folder / "report.md").read_text()
    assert md.index("Changes since the baseline") < md.index("## Verdicts")
    assert "VERDICT S0.3 on tiny-w128: holds → fails" in md


def test_a_file_that_is_not_results_json_is_refused(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("[]")
    with pytest.raises(ValueError, match="not a latent-claims results.json"):
        compare(path, [])
