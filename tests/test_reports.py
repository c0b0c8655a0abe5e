"""The report: results.json, report.md/html, the latest link, the history index, baseline comparison, no overwrites."""

import html
import json
import re
import os
import shutil
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.catalogue import catalogue_json, load_catalogue
from fixtures.settings import Settings
from reports import baseline, render, sections, tables, writer
from latent_instruments.stats import Estimate
from reports.records import builds_agree
from reports.checks import Check, ClaimRecord
from reports.document import RunDocument
from reports.results_file import SCHEMA
from tests.builders import SPECTRA, record, run_failing_as_expected, settings_for


def as_doc(doc: dict) -> RunDocument:
    """A results document (a dict as results.json holds it, keys an older schema or a test leaves out filled in)."""
    return RunDocument.from_json({"records": [], **doc})


def compare(old: Path, records: list[ClaimRecord], models: dict | None = None, facts: dict | None = None,
            mapping: dict | None = None) -> dict:
    """``baseline.compare`` of ``records`` run with ``facts`` (default: the baseline's own, like for like)."""
    doc = as_doc({**(facts if facts is not None else json.loads(old.read_text())), "models": models or {}})
    doc.records = list(records)
    return baseline.compare(old, doc, mapping)


def write(s: Settings, records: list[dict], exitstatus: int = 0) -> Path:
    return writer.write_run(s, records, {}, exitstatus, 100.0, catalogue_json())


def test_run_writes_three_files_an_index_and_points_latest(tmp_path):
    s = settings_for(tmp_path)
    folder = write(s, [record(0.2, plot=SPECTRA), record(-0.1, "tiny-w96")])
    assert {p.name for p in folder.iterdir()} == {"results.json", "report.md", "report.html", "figures"}
    assert (s.report_dir / "latest").resolve() == folder.resolve()
    assert folder.name in (s.report_dir / "index.html").read_text()
    doc = json.loads((folder / "results.json").read_text())
    assert doc["schema"] == SCHEMA and doc["seed"] == 0 and not doc["interrupted"]
    assert [r["outcome"] for r in doc["records"]] == ["fails", "holds"]  # sorted by claim, model (w96 < w128), test
    assert doc["records"][1]["checks"][0]["margin"] == pytest.approx(0.19)
    figures = list((folder / "figures").iterdir())
    assert len(figures) == 1 and figures[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"src='figures/{figures[0].name}'" in (folder / "report.html").read_text()
    md = (folder / "report.md").read_text()
    # the cell shows the claim check's statistic, not the control's margin
    assert "| S0.3 | FAILS -0.1 [-0.11, -0.09] | holds 0.2 [0.19, 0.21] |" in md


def test_a_whole_runs_figures_drawn_in_processes_are_the_bytes_drawn_one_by_one(monkeypatch):
    """From FIGURES_IN_PROCESSES figures on (here 3), worker processes draw them: the same PNG bytes, in the records'
    order, and a figure that cannot be drawn says why, as one by one."""
    doc = as_doc({})
    doc.records = [record(0.1 * i, plot={**SPECTRA, "panels": {"m": {"block 1": [4, 3, 2, 1 + i]}}}) for i in range(3)]
    doc.records += [record(0.5, plot={"kind": "no such kind"}), record(0.6)]  # 4 figures, one bad; a record without
    monkeypatch.setattr(render, "FIGURES_IN_PROCESSES", 3)
    in_processes = render.figures(doc)
    monkeypatch.setattr(render, "FIGURES_IN_PROCESSES", 5)
    one_by_one = render.figures(doc)
    assert list(in_processes) == list(one_by_one) and len(in_processes) == 4
    assert in_processes == one_by_one
    assert isinstance(in_processes[render.figure_name(3, doc.records[3])], str)


def test_s0_6s_figure_shows_its_spectra_beside_the_out_of_sample_calibration_of_its_margin():
    """Issue 64, item 2: S0.6's figure draws the catalogue's K calibration values, their margin, and the record's
    statistic with its interval, next to the spectra, in one PNG wider than the spectra alone."""
    from PIL import Image
    import io
    from claims.s0_spectra.bends import calibration_figure
    from reports import plots
    calibration = next(iter(load_catalogue().claims["S0.6"].calibrations)).at(12)
    panel = calibration_figure(calibration, Estimate(0.05, 0.04, 0.06, 0.95, 128), "ref-opt-125m")
    assert sorted(calibration.values) == panel["series"]["calibration inits' high ends (sorted)"]["value"]
    assert [calibration.margin] * 2 == next(s["value"] for k, s in panel["series"].items() if k.startswith("margin"))
    alone, both = plots.render(SPECTRA), plots.render({"kind": "beside", "figures": [SPECTRA, panel]})
    assert Image.open(io.BytesIO(both)).width > Image.open(io.BytesIO(alone)).width
    with pytest.raises(KeyError):
        plots.render({"kind": "beside", "figures": [{"kind": "beside", "figures": []}]})


def test_a_cells_colour_comes_from_its_records_outcome_not_from_its_words():
    """Issue 65, item 5: the HTML report coloured a cell by parsing its text; now by the outcome the cell carries
    (``reports.tables.OutcomeCell``), and an outcome is an enum whose value results.json keeps."""
    from reports.checks import FAILS, Outcome
    from reports.tables import OutcomeCell

    assert render.html_table(["a"], [[OutcomeCell("holds? no: the words are not the outcome", FAILS)]]).count("red") == 1
    assert "class=" not in render.html_table(["a"], [["fails, said in a details table"]])
    assert json.dumps({"outcome": Outcome.FAILS_AS_EXPECTED}) == '{"outcome": "fails as expected"}'
    assert Outcome("fails as expected") is Outcome.FAILS_AS_EXPECTED


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
    assert "### tiny-w96: details\n\n**slope_by_layer**" in md and "| block 1 | -1.2 |" in md  # details as tables, not JSON


def test_coverage_lists_every_catalogued_claim(tmp_path):
    doc = json.loads((write(settings_for(tmp_path), [record(0.2)]) / "results.json").read_text())
    header, rows = tables.coverage(as_doc(doc))
    assert len(rows) == len(load_catalogue().claims)
    assert rows[2][:3] == ["S0.3", rows[2][1], "t"] and rows[0][2] == "not run (not selected in this run)"


def test_an_implementation_check_is_marked_as_one_in_the_matrix_coverage_and_its_section(tmp_path):
    """S1.1-S1.3 are identities of softmax attention: their 'holds' must not read as a finding about the model."""
    simplex = replace(record(0.2), claim="S1.1", test="claims/s1_attention/test_identity.py::t[tiny-w128]")
    folder = write(settings_for(tmp_path), [record(0.2), simplex])
    doc = json.loads((folder / "results.json").read_text())
    assert doc["catalogue"]["S1.1"]["kind"] == "implementation" and doc["catalogue"]["S0.3"]["kind"] == "empirical"
    md = (folder / "report.md").read_text()
    assert "| S1.1 (implementation check) | holds" in md and "| S0.3 | holds" in md
    assert md.count(tables.IMPLEMENTATION_NOTE) == 1
    rows = {row[0]: row[1] for row in tables.coverage(as_doc(doc))[1]}
    assert rows["S1.3"].startswith("[implementation check] ") and not rows["S0.3"].startswith("[")
    assert html.escape(tables.IMPLEMENTATION_NOTE) in (folder / "report.html").read_text()


def test_a_failed_control_and_an_error_are_named_in_the_matrix(tmp_path):
    records = [record(0.2, control=-1.0, outcome="control failed"), record(0.2, "tiny-w96", outcome="error")]
    records[1].message = "RuntimeError: Expected all tensors to be on the same device\nTraceback ..."
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


def test_a_change_is_not_hidden_by_an_interrupted_run_between(tmp_path):
    """Issue 59, item 4: a run interrupted with no records between a 'holds' and a 'fails' of the same command is
    passed over: the change is reported against the last complete run, which names the interrupted one."""
    s = settings_for(tmp_path)
    write(s, [record(0.2)])
    cut = write(s, [])
    doc = json.loads((cut / "results.json").read_text())
    doc["interrupted"] = True
    (cut / "results.json").write_text(json.dumps(doc))
    last = write(s, [record(-0.2)])
    since = json.loads((last / "results.json").read_text())["changes_since_last_run"]
    assert [(c["was"], c["now"]) for c in since["changes"]] == [("holds", "fails")]
    assert since["interrupted_since"] == [cut.name] and since["run_id"] != cut.name
    assert f"interrupted since: {cut.name}" in (last / "report.md").read_text()
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


def test_an_exact_statistic_that_differs_by_float_noise_has_not_moved(tmp_path):
    """Issue 65, item 5: after fine-tuning one of the zoo's checkpoints, an exact control (S4.5's 9 on every vector,
    a zero-width interval) came back as 9.0000001 and was listed as "moved: 9 → 9 (tolerance 0)". Float noise is
    no movement; a real change of the same statistic still is."""
    def exact(value):
        rec = record(0.2)
        rec.checks[1] = Check("identity ratio", value, value, value, "fraction", ">", 1e-3, "exact", role="control")
        return rec

    old = write(settings_for(tmp_path), [exact(9.0)]) / "results.json"
    assert compare(old, [exact(9.0000001)])["moved"] == []
    assert [m["check"] for m in compare(old, [exact(9.5)])["moved"]] == ["identity ratio"]


def test_a_check_whose_name_was_reworded_is_paired_by_its_key(tmp_path):
    """Issue 65, item 3: a baseline pairs checks by key, so a reworded display name is no measured change and its
    statistic is still compared."""
    def keyed(value, name):
        rec = record(value)
        rec.checks[0] = replace(rec.checks[0], name=name, key="S0.3/straightening")
        rec.checks[1] = replace(rec.checks[1], key="S0.3/learned")
        return rec

    old = write(settings_for(tmp_path), [keyed(0.2, "straightening")]) / "results.json"
    same = compare(old, [keyed(0.2, "straightening: scatter at the last block minus at the first")])
    assert same["measured_changes"] == [] and same["moved"] == []
    moved = compare(old, [keyed(0.5, "straightening, reworded")])
    assert [m["check"] for m in moved["moved"]] == ["straightening, reworded"]


def test_a_schema_5_baseline_whose_control_straddled_is_no_measured_change(tmp_path):
    """Before schema 6 a straddling control was stored as "failed"; the same numbers now say "inconclusive"."""
    old = write(settings_for(tmp_path), [record(0.2, control=0.005, outcome="inconclusive")]) / "results.json"
    doc = json.loads(old.read_text())
    doc["schema"] = "latent-claims/results/5"
    doc["records"][0]["checks"][1]["status"] = "failed"
    doc["records"][0]["outcome"] = "control failed"
    old.write_text(json.dumps(doc))
    changes = compare(old, [record(0.2, control=0.005, outcome="inconclusive")])
    assert changes["measured_changes"] == []  # the control's numbers did not move: no change of measurement
    assert [c["now"] for c in changes["verdict_changes"]] == ["inconclusive"]
    decided = compare(old, [record(0.2, control=0.5)])
    assert [c["now"] for c in decided["measured_changes"]] == [{"straightening": "passed", "learned (control)": "passed"}]


def test_the_zoo_build_of_a_run_comes_from_its_trained_models():
    from reports.records import zoo_build_of

    def facts(*builds):
        return {f"m{i}": {"role": "trained", "zoo_build": b} for i, b in enumerate(builds)} | {"r": {"role": "reference"}}
    assert zoo_build_of(facts("shipped", "shipped")) == "shipped" and zoo_build_of(facts("local")) == "local"
    assert zoo_build_of(facts("shipped", "local")) == "mixed" and zoo_build_of(facts()) is None


def test_a_new_procedure_version_is_a_changed_method_not_moved_numbers(tmp_path):
    old = write(settings_for(tmp_path), [record(0.2)]) / "results.json"
    changes = compare(old, [record(0.9, version=2)])
    assert changes["method_changed"] == [{"claim": "S0.3", "model": "tiny-w128", "test": record(0.2).test, "was": 1, "now": 2}]
    assert changes["moved"] == []


def test_baseline_changes_come_first_in_the_report(tmp_path):
    old = write(settings_for(tmp_path), [record(0.2)]) / "results.json"
    md = (write(settings_for(tmp_path, baseline=old), [record(-0.2)], 1) / "report.md").read_text()
    assert md.index("Changes since the baseline") < md.index("## Outcomes")
    assert ("MEASURED S0.3 on tiny-w128: straightening: passed, learned (control): passed → straightening: failed, "
            "learned (control): passed (outcome holds → fails") in md


def _models(**digests) -> dict:
    return {name.replace("_", "-"): {"weights_sha256": digest * 64} for name, digest in digests.items()}


def _baseline(tmp_path: Path, records: list[ClaimRecord], models: dict) -> Path:
    """A results.json whose models carry only their weight digests (all the comparison reads of them)."""
    path = write(settings_for(tmp_path), records) / "results.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "models": models}))
    return path


def test_a_baseline_map_pairs_an_upgraded_model_under_a_new_name_and_states_both_digests(tmp_path):
    old = _baseline(tmp_path, [record(0.2, "old-ckpt")], _models(old_ckpt="a"))
    changes = compare(old, [record(-0.2, "new-ckpt")], _models(new_ckpt="b"), mapping={"old-ckpt": "new-ckpt"})
    assert changes["new"] == [] and changes["missing"] == []
    assert changes["models"] == [{"old": "old-ckpt", "new": "new-ckpt", "old_weights_sha256": "a" * 64,
                                  "new_weights_sha256": "b" * 64, "same_weights": False,
                                  "old_config_sha256": None, "new_config_sha256": None, "same_config": None}]
    [measured] = changes["measured_changes"]
    assert (measured["model"], measured["was"]["straightening"], measured["now"]["straightening"]) == (
        "new-ckpt", "passed", "failed")
    assert changes["retrained_in_place"] == []  # another name: an upgrade, not a retraining in place
    unmapped = compare(old, [record(-0.2, "new-ckpt")], _models(new_ckpt="b"))
    assert unmapped["measured_changes"] == [] and unmapped["new"] and unmapped["missing"]  # compared with nothing


def test_the_same_name_on_other_weights_is_flagged_as_retrained_in_place(tmp_path):
    old = _baseline(tmp_path, [record(0.2)], _models(tiny_w128="a"))
    changes = compare(old, [record(0.2)], _models(tiny_w128="c"))
    assert [m["new"] for m in changes["retrained_in_place"]] == ["tiny-w128"]
    assert compare(old, [record(0.2)], _models(tiny_w128="a"))["retrained_in_place"] == []
    assert "RETRAINED IN PLACE: tiny-w128" in "\n".join(sections.baseline_lines(as_doc({"baseline": changes})))


def test_a_change_of_the_ledger_alone_is_not_a_measured_change(tmp_path):
    old = write(settings_for(tmp_path), [record(-0.2)]) / "results.json"
    listed = replace(record(-0.2, outcome="fails as expected"), expected="fails")  # a ledger entry came
    changes = compare(old, [listed])
    assert changes["measured_changes"] == [] and changes["moved"] == []
    assert [(c["was"], c["now"]) for c in changes["ledger_changes"]] == [("fails", "fails as expected")]


def test_a_baseline_of_another_seed_or_prompt_batch_is_named_as_such_first(tmp_path):
    old = write(settings_for(tmp_path), [record(0.2)]) / "results.json"
    doc = json.loads(old.read_text())
    changes = compare(old, [record(0.2)], {}, {**doc, "seed": 7, "prompts": [64, 128]})
    assert changes["differences"] == ["--seed: 0 in the baseline, 7 here", "--prompts: [32, 128] in the baseline, "
                                      "[64, 128] here"]
    md = render.markdown(as_doc({**doc, "baseline": changes}))
    assert md.index("NOT LIKE FOR LIKE: --seed") < md.index("## Outcomes")


def test_a_file_that_is_not_results_json_is_refused(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("[]")
    with pytest.raises(ValueError, match="not a latent-claims results.json"):
        baseline.compare(path, as_doc({}))


@pytest.mark.parametrize("comparison, low, value, high, role, status", [
    (">", 0.1, 0.2, 0.3, "claim", "passed"),
    (">", -0.3, -0.2, -0.1, "claim", "failed"),
    (">", -0.1, 0.05, 0.2, "claim", "inconclusive"),  # the interval contains the threshold 0
    (">", -0.1, -0.05, 0.2, "claim", "inconclusive"),  # also with the point estimate on the failing side
    (">", 0.0, 0.0, 0.0, "claim", "failed"),  # exact and equal: not > 0, and never inconclusive
    ("<", -0.3, -0.2, -0.1, "claim", "passed"),
    ("<", 0.1, 0.2, 0.3, "claim", "failed"),
    ("<", -0.1, 0.05, 0.2, "claim", "inconclusive"),
    (">", -0.1, 0.05, 0.2, "control", "inconclusive"),  # a straddling control is undecided, like a claim check
    (">", -0.3, -0.2, -0.1, "control", "failed"),  # only a control wholly on the failing side fails
])
def test_a_check_is_passed_failed_or_inconclusive_by_where_its_interval_lies(comparison, low, value, high, role,
                                                                             status):
    from reports.checks import Check

    check = Check("s", value, low, high, "u", comparison, 0.0, "d", role)
    assert check.status == status
    assert (check.sample_factor is None) == (status != "inconclusive")


def test_the_builds_agree_table_counts_outcomes_over_a_recipes_seed_siblings(tmp_path):
    siblings = {"tiny-w96-seed1442": "tiny-w96", "tiny-w96-seed88": "tiny-w96", "tiny-w96-seed99999": "tiny-w96"}
    records = [record(0.2, "tiny-w96"), record(0.2, "tiny-w96-seed1442"), record(-0.2, "tiny-w96-seed88"),
               record(0.005, "tiny-w96-seed99999", outcome="inconclusive"), record(0.2, "tiny-w128")]
    records[2].outcome = "fails as expected"
    [row] = builds_agree(records, siblings)
    assert row["recipe"] == "tiny-w96" and len(row["builds"]) == 4
    assert row["summary"] == "holds on 2 of 4 builds, fails on 1, inconclusive on 1"
    assert builds_agree([record(0.2, "tiny-w96")], siblings) == []  # one build: nothing to agree on
    folder = writer.write_run(settings_for(tmp_path), records, {}, 0, 1.0, catalogue_json())
    assert "holds on 2 of 4 builds, fails on 1, inconclusive on 1" in (folder / "report.md").read_text()
    doc = RunDocument.from_json(json.loads((folder / "results.json").read_text()))
    header, rows = tables.matrix(doc)  # issue 56, item 5: the recipe's verdict beside the main model's own
    cells = dict(zip(header, rows[0]))
    assert "· recipe: holds on 2 of 4 builds, fails on 1, inconclusive on 1 ·" in cells["tiny-w96"]
    assert "recipe:" not in cells["tiny-w96-seed88"] and "recipe:" not in cells["tiny-w128"]
    # issue 77: one build holds where another fails: every build's cell and the summary say seed-unstable
    assert row["seed_unstable"] == "seed-unstable (holds on 2 of 4 builds)"
    assert all(cells[m].endswith("· seed-unstable (holds on 2 of 4 builds)") for m in row["builds"])
    assert "seed-unstable" not in cells["tiny-w128"]
    [summary] = tables.summary_rows(doc)[1]
    assert "seed-unstable (holds on 2 of 4 builds) of tiny-w96" in summary[2]


def test_siblings_that_agree_or_are_undecided_are_not_seed_unstable():
    from reports.records import seed_unstable
    assert seed_unstable({"holds": 3, "inconclusive": 1}, 4) == ""
    assert seed_unstable({"fails": 2, "inconclusive": 2}, 4) == ""
    assert seed_unstable({"fails": 1, "holds": 1}, 2) == "seed-unstable (holds on 1 of 2 builds)"


def test_a_ledger_why_whose_recipes_builds_disagree_says_seed_unstable_not_a_finding():
    """Issue 77, item 4: where one sibling holds and this build fails, the refreshed why leads with "Seed-unstable
    (holds on k of n builds)" and calls it no finding; once the builds agree again the prefix goes."""
    from reports.ledger_text import rewrite
    failing = replace(record(-0.2, outcome="fails as expected"), model="tiny-w96", version=1)
    holding = replace(record(0.2), model="tiny-w96-seed88", version=1)
    doc = as_doc({"models": {"tiny-w96": {"weights_sha256": "ab" * 32, "build": {}}}})
    doc.records = [failing, holding]
    doc.builds_agree = builds_agree(doc.records, {"tiny-w96-seed88": "tiny-w96"})
    text = (f'[[expected]]\nclaim = "{failing.claim}"\nversion = 1\nmodel = "tiny-w96"\nfingerprint = "f"\n'
            f'weights_sha256 = "{"ab" * 32}"\nwhy = "the extra layers help. Measured on weights x"\nwould_change = "c"\n')
    new, [done] = rewrite(text, doc)
    assert done.why.startswith("Seed-unstable (holds on 1 of 2 builds): another build of the recipe holds where this "
                               "one fails, so this is no finding about the model. The extra layers help.")
    doc.records, doc.builds_agree = [failing], []
    again, [done] = rewrite(new.replace('"Builds of this recipe', '"'), doc)
    assert done.why.startswith("the extra layers help.") or not done.why


def test_a_control_that_changed_is_a_measured_change_not_the_ledger(tmp_path):
    old = write(settings_for(tmp_path), [record(0.2)]) / "results.json"
    changes = compare(old, [record(0.2, control=-0.5, outcome="control failed")])
    assert changes["ledger_changes"] == []
    [measured] = changes["measured_changes"]
    assert measured["was"]["learned (control)"] == "passed" and measured["now"]["learned (control)"] == "failed"


def test_a_catalogue_entry_of_an_unknown_kind_is_refused_with_its_id(tmp_path):
    from fixtures.catalogue import CATALOGUE, load_catalogue
    bad = tmp_path / "catalogue.toml"
    bad.write_text(CATALOGUE.read_text().replace('kind = "implementation"', 'kind = "identity"', 1))
    with pytest.raises(ValueError, match="S1.1: kind 'identity'"):
        load_catalogue(bad)


def test_a_source_number_that_is_not_a_number_or_repeats_a_quantity_is_refused(tmp_path):
    from fixtures.catalogue import load_catalogue
    from tests.helpers import claims_copy
    bad = claims_copy(tmp_path / "a", ("s4_ffn/parameters.toml", 'value = "SOURCE_SHARE"', 'value = "65.71 %"'))
    with pytest.raises(ValueError, match="S4.1: a source number's value: '65.71 %' is not an expression"):
        load_catalogue(bad)
    bad = claims_copy(tmp_path / "b", ("s4_ffn/feedforward.toml", 'quantity = "block 2: H(no attention)"',
                                       'quantity = "block 1: H(no attention)"'))
    with pytest.raises(ValueError, match="S4.2: two source numbers share a quantity"):
        load_catalogue(bad)


def test_a_measured_value_stands_beside_the_sources_number_and_an_unknown_quantity_is_refused():
    """Issue 56, item 1: a record keeps its value beside the catalogue's number of the same quantity, and the report's
    table shows the source's number, where it is in the source, and each subject's value ("—" where not measured)."""
    from fixtures.catalogue import catalogue_json
    from fixtures.recording import source_beside
    from reports.source_numbers import source_rows

    beside = source_beside("S4.2", {"block 1: H(no FFN)": 0.194})
    assert beside == {"block 1: H(no FFN)": {"source": 0.70, "measured": 0.194}}
    with pytest.raises(ValueError, match="'block 7: H\\(no FFN\\)'.*it lists: block 1: H\\(no attention\\)"):
        source_beside("S4.2", {"block 7: H(no FFN)": 0.1})
    rec = ClaimRecord("S4.2", 7, "s4-w384", "t[s4-w384]", {}, [], beside_source=beside)
    assert ClaimRecord.from_json(rec.to_json()).beside_source == beside
    header, rows = source_rows(catalogue_json()["S4.2"], [rec, ClaimRecord("S4.2", 7, "tiny-w96", "t[tiny-w96]")])
    assert header == ["quantity", "source", "where (the source's subject)", "s4-w384"]
    row = next(r for r in rows if r[0] == "block 1: H(no FFN)")
    assert row[1] == "0.7 Hellinger" and "Appendix IV" in row[2] and row[3] == "0.194"
    assert next(r for r in rows if r[0] == "block 1: H(no attention)")[3] == "—"
    assert source_rows(catalogue_json()["S1.1"], [rec]) is None  # S1 gives no number


def test_a_ledger_why_that_quotes_other_numbers_than_the_run_is_named_in_the_report(tmp_path):
    """A why copied from another model ('= 0.116 [-0.033, 0.198]', inconclusive where the run's check fails) must
    not stand beside this run's numbers; on the machine the why names, other numbers are named even where the
    decision is the same."""
    from reports.records import ledger_quotes_disagree
    intel = "Intel(R) Xeon(R) Processor (AVX512)"
    models = {"tiny-w128": {"weights_sha256": "abc", "build": {"cpu": intel}}}
    rec = record(-0.2, outcome="fails as expected")  # straightening = -0.2 [-0.21, -0.19]
    rec = replace(rec, expected="fails", ledger_weights_sha256="abc",
                  expected_reason=f"Measured on weights abc ({intel}, torch 2.13.0+cpu): "
                                  "straightening = -0.2 [-0.21, -0.19] decades (needs > 0)")
    assert ledger_quotes_disagree(rec, models) == []
    rec.expected_reason = rec.expected_reason.replace("-0.2 [-0.21, -0.19]", "0.116 [-0.033, 0.198]")
    assert ledger_quotes_disagree(rec, models) == [
        "straightening: the ledger quotes 0.116 [-0.033, 0.198] (inconclusive), this run measured -0.2 [-0.21, -0.19] "
        "(failed)"]
    assert ledger_quotes_disagree(rec, {"tiny-w128": {"weights_sha256": "other"}}) == []  # other weights
    rec.expected_reason = rec.expected_reason.replace("0.116 [-0.033, 0.198]", "-0.25 [-0.3, -0.2]")
    assert ledger_quotes_disagree(rec, models) == [
        "straightening: the ledger quotes -0.25 [-0.3, -0.2], this run measured -0.2 [-0.21, -0.19] on the machine "
        f"the ledger names ({intel})"]
    rec.model = "tiny-w96"
    doc = writer.results(settings_for(tmp_path), [rec], {"tiny-w96": {"weights_sha256": "abc", "build": {"cpu": intel}}},
                         0, 1.0, catalogue_json())
    assert doc.to_json()["records"][0]["ledger_quotes_disagree"]
    doc.run_id = "x"
    assert "LEDGER OUT OF DATE: the why of 1 ledger entries quotes a decision this run did not reach on the same " \
           "weights, or other numbers on the machine it names (S0.3 on tiny-w96)" in "\n".join(sections.header_lines(doc))
    note = tables.subject_rows(doc.records, doc.models)[1][0][-1]
    assert "the ledger's why does not match this run: straightening: the ledger quotes -0.25" in note


def test_a_ledger_why_from_another_machine_is_stale_only_where_the_decision_changed():
    """Issue 56, item 7: S3's descents end a little differently on an AVX2 CPU than on the AVX-512 one that wrote
    the ledger (S3.14 on tiny-w192: 0.867 against 1.0). Other numbers on another machine with the same decision are
    no warning; an interval that crosses the threshold is, on any machine."""
    from reports.records import ledger_quotes_disagree
    amd = {"tiny-w128": {"weights_sha256": "abc", "build": {"cpu": "AMD EPYC 7B13 (AVX2)"}}}
    rec = replace(record(-0.2, outcome="fails as expected"), expected="fails", ledger_weights_sha256="abc",
                  expected_reason="Measured on weights abc (Intel(R) Xeon(R) Processor (AVX512), torch 2.13.0+cpu): "
                                  "straightening = -0.25 [-0.3, -0.2] decades (needs > 0)")
    assert ledger_quotes_disagree(rec, amd) == []  # the same decision (failed) on another machine
    rec.expected_reason = rec.expected_reason.replace("-0.25 [-0.3, -0.2]", "-0.05 [-0.1, 0.02]")
    assert ledger_quotes_disagree(rec, amd) == [  # the quoted interval contains 0: the decision changed
        "straightening: the ledger quotes -0.05 [-0.1, 0.02] (inconclusive), this run measured -0.2 [-0.21, -0.19] "
        "(failed)"]
    rec.expected_reason = "straightening = -0.25 [-0.3, -0.2] decades"  # a hand-written why names no machine
    assert ledger_quotes_disagree(rec, amd) == []


def test_a_reading_decides_nothing_and_is_named_beside_the_verdict():
    """Issue 56: a stricter reading of the source (role "reading") is measured and shown, but a record whose claim
    checks pass holds whatever its readings say; a role outside claim, control and reading is refused."""
    claim_check = Check("cos", 0.09, 0.05, 0.12, "cosine", ">", 0.0, "S4's words")
    reading = Check("cos minus baseline", -0.002, -0.004, -0.0001, "cosine", ">", 0.0, "stricter", role="reading")
    rec = ClaimRecord("S4.3", 3, "m", "t[m]", {}, [claim_check, reading], outcome="holds")
    assert rec.failed("claim") == [] and rec.failed("control") == [] and rec.inconclusive("control") == []
    assert rec.readings("failed") == [reading] and rec.headline is claim_check
    assert tables.cell(rec).startswith("holds 0.09") and "(readings beside it: 1 failed)" in tables.cell(rec)
    note = tables.subject_rows([rec], {})[1][0][-1]
    assert note.startswith("(reading failed: cos minus baseline = -0.002 [-0.004, -0.0001], needs > 0)")
    assert ClaimRecord.from_json(rec.to_json()).readings() == [reading]
    with pytest.raises(ValueError, match="'claim', 'control' or 'reading'"):
        Check.of("x", Estimate(1.0, 0.9, 1.1, 0.95, 16), "u", ">", 0.0, "d", role="stricter")


def test_a_control_that_guards_a_pass_decides_only_where_the_claim_passed():
    """A claim statistic against a null fails whenever the claim does: it may turn a pass into 'control failed',
    never a fail."""
    def rec(claim_value: float) -> ClaimRecord:
        return ClaimRecord("S0.3", 1, "m", "t", {}, [
            Check("claim", claim_value, claim_value - 0.01, claim_value + 0.01, "x", ">", 0.0, "d"),
            Check("beyond null", -1.0, -1.01, -0.99, "x", ">", 0.0, "d", role="control", guards_pass=True),
            Check("independent", 1.0, 0.99, 1.01, "x", ">", 0.0, "d", role="control")])
    assert [c.name for c in rec(0.5).failed("control")] == ["beyond null"]  # a pass the null explains
    assert rec(-0.5).failed("control") == [] and [c.name for c in rec(-0.5).failed("claim")] == ["claim"]
    assert rec(0.005).failed("control") == []  # inconclusive: no pass to guard either
    with pytest.raises(ValueError, match="guards_pass"):
        Check.of("x", Estimate(0.0, 0.0, 0.0, 0.95, 8), "x", ">", 0.0, "d", guards_pass=True)


def test_a_convergence_control_turns_a_failure_a_longer_descent_removes_into_unconverged():
    """A convergence control (the claim statistic after a longer descent, compared so that it passes where the
    decision stays): one that does not pass makes the record inconclusive ("unconverged"), never red; one that passes
    leaves the failure, or (issue 64) the hold, standing; the headline is the longer descent's value."""
    def rec(claim_value: float, longer: float) -> ClaimRecord:
        return ClaimRecord("S3.7", 1, "m", "t", {}, [
            Check("claim", claim_value, claim_value - 0.01, claim_value + 0.01, "x", ">", 0.0, "d"),
            Check("claim, after 5N", longer, longer - 0.01, longer + 0.01, "x", "<", 0.0, "d", role="control",
                  convergence=True)], outcome="inconclusive")
    assert [c.name for c in rec(-0.5, 0.3).unconverged()] == ["claim, after 5N"]  # the longer descent passes the claim
    assert [c.name for c in rec(-0.5, 0.005).unconverged()] == ["claim, after 5N"]  # it blurs the failure
    assert rec(-0.5, -0.4).unconverged() == []  # the failure stays: it is the model's

    def held(longer: float) -> ClaimRecord:  # a hold and its control, compared as it holds
        return ClaimRecord("S3.3", 1, "m", "t", {}, [
            Check("claim", 0.5, 0.49, 0.51, "x", ">", 0.0, "d"),
            Check("claim, after 5N = 1000 steps", longer, longer - 0.01, longer + 0.01, "x", ">", 0.0, "d",
                  role="control", convergence=True)], outcome="inconclusive")
    assert held(0.3).unconverged() == [] and held(0.3).failed("control") == []  # the hold stays
    assert [c.name for c in held(0.005).unconverged()] == ["claim, after 5N = 1000 steps"]  # blurred: unconverged
    assert held(0.005).headline.name == "claim, after 5N = 1000 steps"

    def failed_beside_a_reversed_hold(stays: bool) -> ClaimRecord:  # a failure confirmed at 5N decides (review)
        longer = -0.4 if stays else 0.3
        return ClaimRecord("S3.11", 1, "m", "t", {}, [
            Check("kept", 0.5, 0.49, 0.51, "x", ">", 0.0, "d"),
            Check("kept, after 5N = 1000 steps", -0.5, -0.51, -0.49, "x", ">", 0.0, "d", role="control",
                  convergence=True),
            Check("twin", -0.5, -0.51, -0.49, "x", ">", 0.0, "d"),
            Check("twin, after 5N = 1000 steps", longer, longer - 0.01, longer + 0.01, "x", "<", 0.0, "d",
                  role="control", convergence=True)], outcome="inconclusive")
    assert failed_beside_a_reversed_hold(stays=True).unconverged() == []  # the confirmed failure stands
    assert len(failed_beside_a_reversed_hold(stays=False).unconverged()) == 2
    head = rec(-0.5, -0.4).longest(rec(-0.5, -0.4).checks[0])  # a failure at 5N, compared as the claim is
    assert head.value == -0.4 and head.comparison == ">" and head.status == "failed" and head.role == "claim"
    assert rec(-0.5, 0.3).failed("control") == [] and rec(-0.5, 0.3).inconclusive("control") == []
    assert tables.cell(rec(-0.5, 0.3)).startswith("inconclusive (unconverged: claim, after 5N)")
    raw = rec(-0.5, 0.3).to_json()["checks"][1]
    assert raw["convergence"] is True and Check.from_json(raw).convergence
    with pytest.raises(ValueError, match="convergence"):
        Check.of("x", Estimate(0.0, -0.1, 0.1, 0.95, 16), "x", ">", 0.0, "d", convergence=True)


def test_a_control_is_three_valued_and_only_a_decisive_failure_fails_it():
    """A control whose interval contains its threshold is undecided (the record inconclusive), not failed."""
    def control(value: float, guards_pass: bool = False) -> Check:
        return Check("control", value, value - 0.1, value + 0.1, "x", ">", 0.0, "d", role="control",
                     guards_pass=guards_pass)
    claim = Check("claim", 1.0, 0.9, 1.1, "x", ">", 0.0, "d")
    assert [control(v).status for v in (1.0, 0.05, -1.0)] == ["passed", "inconclusive", "failed"]
    straddling = ClaimRecord("S0.3", 1, "m", "t", {}, [claim, control(0.05)])
    assert straddling.failed("control") == [] and [c.name for c in straddling.inconclusive("control")] == ["control"]
    assert straddling.inconclusive() == []  # the claim check itself is decided
    failing_claim = Check("claim", -1.0, -1.1, -0.9, "x", ">", 0.0, "d")
    guarded = ClaimRecord("S0.3", 1, "m", "t", {}, [failing_claim, control(0.05, guards_pass=True)])
    assert guarded.inconclusive("control") == []  # it guards a pass, and there is none: the failure stands


def test_a_cell_names_an_undecided_control():
    rec = ClaimRecord("S0.3", 1, "m", "t", {}, [Check("claim", 1.0, 0.9, 1.1, "x", ">", 0.0, "d"),
                                                 Check("null", 0.05, -0.05, 0.15, "x", ">", 0.0, "d", role="control")],
                      outcome="inconclusive")
    assert tables.cell(rec).startswith("inconclusive (control undecided: null)")


def test_outcomes_are_counted_in_one_order_and_records_keyed_one_way():
    from reports.records import count_outcomes, record_key
    from reports.checks import OUTCOMES

    counts = count_outcomes(["error", "holds", "weird", "fails", "holds"])
    assert counts == {"holds": 2, "fails": 1, "error": 1, "weird": 1} and list(counts)[:3] == ["holds", "fails", "error"]
    assert list(count_outcomes(reversed(OUTCOMES))) == list(OUTCOMES)
    record = ClaimRecord("S4.2", 1, "m", "claims/a.py::test_x[m-restricted]", {"v": "restricted"}, function="test_x",
                         outcome="holds")
    assert record_key(record) == ("S4.2", "m", "test_x", "restricted")  # fields, not the node id
    assert record_key(record, "n") == ("S4.2", "n", "test_x", "restricted")  # a --baseline-map rename
    assert record_key(replace(record, function="")) == record_key(record)  # schema 6: from the node id


def test_prompt_windows_redrawn_as_not_text_are_named_in_the_header(tmp_path):
    """A model whose batches lost windows of whitespace or one repeated token says so, with each batch's count."""
    models = {"tiny-w96": {"weights_sha256": "abc", "prompt_windows_redrawn": {}},
              "llama": {"weights_sha256": "def", "prompt_windows_redrawn": {"32 × 21": 3, "64 × 5": 1}}}
    doc = writer.results(settings_for(tmp_path), [record(0.5)], models, 0, 1.0, catalogue_json())
    header = "\n".join(sections.header_lines(doc))
    assert "prompt windows redrawn as not text" in header and "llama 32 × 21: 3, 64 × 5: 1" in header
    assert "tiny-w96" not in header.split("redrawn")[1]
    models["llama"]["prompt_windows_redrawn"] = {}
    doc = writer.results(settings_for(tmp_path), [record(0.5)], models, 0, 1.0, catalogue_json())
    assert "redrawn" not in "\n".join(sections.header_lines(doc))


def test_the_measured_part_of_a_ledger_why_is_written_from_the_record(tmp_path):
    """`python -m reports ledger RUN --write` puts the run's numbers in the why; the maintainer's words stay."""
    from reports.__main__ import main
    sha, rec = run_failing_as_expected(tmp_path)  # straightening = -0.2 [-0.21, -0.19]
    ledger = tmp_path / "ledger.toml"
    entry = (f'[[expected]]\nclaim = "{rec.claim}"\nversion = 1\nmodel = "tiny-w96"\nfingerprint = "f"\n'
             f'weights_sha256 = "{sha}"\n'
             'why = "the extra layers help. Measured on weights 000000000000 (x, torch 1): straightening = 0.5 '
             '[0.4, 0.6] decades (needs > 0)."\nwould_change = "c"\n')
    ledger.write_text("# kept comment\n" + entry)
    assert main(["ledger", str(tmp_path), "--ledger", str(ledger)]) == 0
    assert "0.5 [0.4, 0.6]" in ledger.read_text()  # without --write nothing is touched
    assert main(["ledger", str(tmp_path), "--ledger", str(ledger), "--write"]) == 0
    text = ledger.read_text()
    assert text.startswith("# kept comment\n")
    assert ('why = "the extra layers help. Measured on weights abababababab (AMD EPYC (AVX2), torch 2.13.0+cpu): '
            'straightening = -0.2 [-0.21, -0.19] decades (needs > 0)."') in text
    from fixtures.ledger import load_ledger
    assert len(load_ledger(ledger)) == 1


def test_a_ledger_entry_the_run_does_not_fail_is_listed_not_rewritten(tmp_path, capsys):
    from reports.ledger_text import rewrite
    rec = replace(record(0.5, outcome="holds"), model="tiny-w96", version=1)
    doc = as_doc({"models": {"tiny-w96": {"weights_sha256": "ab" * 32, "build": {}}}})
    doc.records = [rec]
    text = (f'[[expected]]\nclaim = "{rec.claim}"\nversion = 1\nmodel = "tiny-w96"\nfingerprint = "f"\n'
            f'weights_sha256 = "{"ab" * 32}"\nwhy = "w. Measured on weights x"\nwould_change = "c"\n')
    new, [done] = rewrite(text, doc)
    assert new == text and not done.why and "'holds', not 'fails as expected'" in done.note
    rec.version = 2
    assert "measure it again" in rewrite(text, doc)[1][0].note


def test_a_why_that_says_how_a_recipes_builds_agree_is_not_rewritten_from_a_run_without_the_siblings(tmp_path):
    """Issue 59, item 3: a run without the seed siblings dropped "fails on 4 of 4 builds" from an entry's why."""
    from reports.ledger_text import rewrite
    sha, rec = run_failing_as_expected(tmp_path)
    doc = RunDocument.from_json(json.loads((tmp_path / "results.json").read_text()))
    assert doc.builds_agree == []
    text = (f'[[expected]]\nclaim = "{rec.claim}"\nversion = 1\nmodel = "tiny-w96"\nfingerprint = "f"\n'
            f'weights_sha256 = "{sha}"\nwhy = "old words. Measured on weights x: old. Builds of this recipe (the model '
            'and its seed siblings): fails on 4 of 4 builds."\nwould_change = "c"\n')
    new, [done] = rewrite(text, doc)
    assert new == text and not done.why and "did not measure the seed siblings" in done.note


def test_a_why_over_several_lines_is_refused_and_the_ledger_left_as_it_was(tmp_path, capsys):
    """Only a one-line why can be rewritten in place; a multi-line one would leave broken TOML, so nothing is written."""
    from reports.__main__ import main
    sha, rec = run_failing_as_expected(tmp_path)
    ledger = tmp_path / "ledger.toml"
    text = (f'[[expected]]\nclaim = "{rec.claim}"\nversion = 1\nmodel = "tiny-w96"\nfingerprint = "f"\n'
            f'weights_sha256 = "{sha}"\nwhy = """the extra layers help.\nMeasured on weights 000000000000: old."""\n'
            'would_change = "c"\n')
    ledger.write_text(text)
    assert main(["ledger", str(tmp_path), "--ledger", str(ledger), "--write"]) == 2
    assert "would change more than the whys" in capsys.readouterr().err
    assert ledger.read_text() == text


def test_a_check_the_subject_cannot_inform_is_shown_beside_the_verdict():
    """Issue 33: S4.4 on a model given no seed siblings says its floor check is not informative, in the matrix cell
    and first in the claim table's note, not as a silent absence."""
    from reports.checks import Check, ClaimRecord

    rec = ClaimRecord("S4.4", 4, "m", "t[m]", {}, [Check("ratio", 1.2, 1.1, 1.3, "ratio", "<", 1.0, "d")],
                      outcome="fails", message="S4.4 does not hold on m: " + "x" * 500,
                      not_informative_checks={"the seed-sibling floor check": "no seed siblings given"})
    assert "(not informative: the seed-sibling floor check)" in tables.cell(rec)
    note = tables.subject_rows([rec], {})[1][0][-1]
    assert note.startswith("(not informative here: the seed-sibling floor check: no seed siblings given)")


def test_a_run_records_a_commit_only_from_the_projects_own_checkout(tmp_path):
    """Issue 58, item 4: the H200 run of 2026-11-28 recorded `git` 4233a32, the HEAD of another repository into which
    the tree had been exported. An exported tree inside another git repository, and one outside any, record "not a
    checkout" and a digest of the project's files, which changes with them; this checkout records its commit."""
    import shutil

    from reports.run_facts import NOT_A_CHECKOUT, REPO, git_revision, tree_digest
    from tests.helpers import program

    outer = tmp_path / "outer"
    tree = outer / "latent-claims"
    (tree / "claims").mkdir(parents=True)
    shutil.copy(REPO / "claims" / "catalogue.toml", tree / "claims" / "catalogue.toml")
    (tree / "conftest.py").write_text("# the project's root conftest\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    program([*git, "init", "-q"], cwd=outer, check=True)
    program([*git, "add", "-A"], cwd=outer, check=True)
    program([*git, "commit", "-qm", "another project"], cwd=outer, check=True)
    outer_head = program(["git", "rev-parse", "HEAD"], cwd=outer).stdout.strip()
    recorded = git_revision(tree)
    assert recorded == NOT_A_CHECKOUT + tree_digest(tree) and outer_head not in recorded
    (tree / "conftest.py").write_text("# changed\n")
    assert git_revision(tree) != recorded  # the digest follows the files
    shutil.rmtree(outer / ".git")
    assert git_revision(tree).startswith(NOT_A_CHECKOUT)  # no git at all
    head = program(["git", "rev-parse", "HEAD"], cwd=REPO).stdout.strip()
    assert git_revision().removesuffix("+dirty") == head  # the project's own checkout


@pytest.mark.parametrize("damage", ["checks: null", "value: '0.62'", "outcome: banana", "role: judge"])
def test_a_baseline_with_values_of_the_wrong_type_is_refused_naming_them(tmp_path, damage):
    """Issue 59, item 7: `checks: null`, `value: "0.62"` and `outcome: "banana"` were read and gave false changes
    ("banana → holds"); the run document's own reader refuses them, and --baseline says what is wrong."""
    from reports.baseline import read_baseline

    path = write(settings_for(tmp_path), [record(0.2)]) / "results.json"
    doc = json.loads(path.read_text())
    rec = doc["records"][0]
    if damage == "checks: null":
        rec["checks"] = None
    elif damage == "value: '0.62'":
        rec["checks"][0]["value"] = "0.62"
    elif damage == "outcome: banana":
        rec["outcome"] = "banana"
    else:
        rec["checks"][1]["role"] = "judge"
    path.write_text(json.dumps(doc))
    expected = {"checks: null": "checks must be a list", "value: '0.62'": "value must be a number or null, got '0.62'",
                "outcome: banana": "outcome 'banana' is not one of", "role: judge": "role 'judge'"}[damage]
    with pytest.raises(ValueError, match=f"--baseline .* is not a latent-claims results.json .*record S0.3 on "
                                         f"tiny-w128: .*{re.escape(expected)}"):
        read_baseline(path)


def test_a_claim_stopped_by_an_interrupt_reads_interrupted_not_unselected(tmp_path):
    """Issue 59, item 6: a run stopped by SIGTERM during S4.2 listed S4.2 as "not run (not selected in this run)"."""
    doc = writer.results(settings_for(tmp_path), [record(0.2)], {}, 2, 1.0, catalogue_json(),
                         selected=["S0.3", "S4.2"])
    rows = {r[0]: r for r in tables.coverage(doc)[1]}
    assert doc.interrupted and doc.claims_selected == ["S0.3", "S4.2"]
    assert rows["S4.2"][2] == "INTERRUPTED: selected, stopped before it recorded"
    assert rows["S4.1"][2] == "not run (not selected in this run)" and rows["S0.3"][2] == "t"
    assert RunDocument.from_json(doc.to_json()).claims_selected == ["S0.3", "S4.2"]


def test_a_report_folder_replaced_by_a_file_during_the_run_sends_the_report_to_a_fallback(tmp_path, capsys):
    """Issue 59, item 1: the report folder removed and replaced by a file while the run went on raised
    NotADirectoryError (78 lines of traceback) and lost every record. The report goes to a new folder under the
    system's temporary directory, the terminal says where, and the run is not green."""
    s = settings_for(tmp_path)
    s.report_dir.parent.mkdir(parents=True, exist_ok=True)
    s.report_dir.write_text("a file where the folder was\n")
    with pytest.raises(writer.ReportIncomplete) as err:
        writer.write_run(s, [record(0.2)], {}, 0, 1.0, catalogue_json())
    folder = err.value.folder
    assert folder.parent != s.report_dir and json.loads((folder / "results.json").read_text())["records"]
    assert (folder / "report.md").exists() and f"the report is in {folder}" in err.value.failures[0]
    assert f"writing it to {folder.parent} instead" in capsys.readouterr().err
    shutil.rmtree(folder.parent)


def test_a_baseline_with_null_statistics_is_named_not_listed_as_a_measured_change(tmp_path):
    """Issue 59, item 13: a baseline whose numbers are null (NaN) beside an outcome was listed as a MEASURED change."""
    old = write(settings_for(tmp_path), [record(0.2)]) / "results.json"
    doc = json.loads(old.read_text())
    for check in doc["records"][0]["checks"]:
        check["value"] = check["ci_low"] = check["ci_high"] = None
    old.write_text(json.dumps(doc))
    changes = compare(old, [record(0.2)])
    assert changes["measured_changes"] == [] and changes["moved"] == []
    assert any("has statistics that are not numbers (null)" in d for d in changes["differences"])


def test_a_continued_decision_shows_its_value_at_each_budget_as_a_small_curve():
    """Issue 77, item 1: the record keeps the value at N and at 5N; the subject table gives both and report.html
    draws them (an inline SVG with the threshold dashed)."""
    from reports.checks import Check, ClaimRecord
    from reports.render import html_table

    rec = ClaimRecord("S3.4", 8, "tiny-w96", "t[tiny-w96]", checks=[
        Check("drop", 0.465, 0.4, 0.5, "x", ">", 0.0, "d"),
        Check("drop, after 5N = 1000 steps", 0.234, 0.2, 0.3, "x", ">", 0.0, "d", role="control", convergence=True),
        Check("drop, moved from N = 200 to 5N steps", 0.497, 0.497, 0.497, "x", "<", 0.25, "d", role="control",
              convergence=True, interval="deterministic")], outcome="inconclusive")
    header, [row] = tables.subject_rows([rec], {})
    cell = row[header.index("descent budgets")]
    assert cell == "0.465 at 200 → 0.234 at 1000 steps" and cell.points == [(200, 0.465), (1000, 0.234)]
    assert "<polyline" in html_table(header, [row]) and "stroke-dasharray" in html_table(header, [row])
    alone = ClaimRecord("S3.4", 8, "tiny-w96", "t", checks=[Check("drop", 0.4, 0.3, 0.5, "x", ">", 0.0, "d")],
                        outcome="holds")
    assert tables.subject_rows([alone], {})[1][0][header.index("descent budgets")] == ""
