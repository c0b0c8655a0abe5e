"""The trends page (issue 78): each record's deciding statistic run by run, the records drifting toward their
threshold named before their verdict flips, the flip after; written beside the index, linked from it and from each
report, never over a user's own page. The runs are built as documents (``tests.builders.nightly_history``): cheap."""

import json
import re

from fixtures.catalogue import catalogue_json
from reports import history, trend_page, writer
from reports.checks import Check
from reports.trends import Reading, Series, drift, margin, night_marks, read_nights, series_marks, series_of
from tests.builders import CLEAN, edit, load, nightly_history, record, settings_for
from tests.helpers import run_cli

FINE_TUNED = [0.30, 0.24, 0.18, 0.12, 0.06, -0.02]  # S0.3 on tiny-w96, night by night: holds five nights, then fails


def summary(page: str, heading: str) -> str:
    """The text of the list under a summary heading ("Drifting toward its threshold", "Flipped"), tags removed."""
    part = page.split(f">{heading}</h3>", 1)[1].split("<h3", 1)[0]
    return re.sub(r"<[^>]+>", "", part)


def test_the_drift_summary_names_the_drifting_record_before_it_flips_and_its_flip_after(tmp_path):
    """Issue 78, item 5: a zoo model fine-tuned a little more each night; after five nights the page names it as
    drifting toward its threshold (and the steady record not); after the sixth, which fails, it names the flip."""
    base = tmp_path / "runs"
    *before, last = nightly_history(base, FINE_TUNED)
    last.rename(tmp_path / last.name)  # the sixth night has not happened yet
    assert run_cli("reports", "trends", str(base)).returncode == 0
    page = (base / "trends.html").read_text()
    drifting = summary(page, "Drifting toward its threshold")
    assert "S0.3 on tiny-w96 (t): margin 0.29 → 0.05 decades over 5 runs" in drifting
    assert "tiny-w128" not in drifting and "no outcome changed" in summary(page, "Flipped")
    (tmp_path / last.name).rename(last)
    out = tmp_path / "elsewhere.html"
    done = run_cli("reports", "trends", str(base), "--out", str(out))
    assert done.returncode == 0 and done.stdout.strip() == str(out)
    page = out.read_text()
    assert "S0.3 on tiny-w96 (t): holds → fails in run 20261106T031500Z" in summary(page, "Flipped")
    assert "tiny-w96" not in summary(page, "Drifting toward its threshold")  # crossed: a flip, no longer a drift
    assert page.count("<img loading='lazy'") == 2 and "data-model='tiny-w128'" in page


def test_the_page_marks_new_weights_versions_packages_and_commits(tmp_path):
    commits = [CLEAN] * 3 + ["f" * 40] * 3
    folders = nightly_history(tmp_path, [0.5] * 6, weights=["aa" * 32] * 4 + ["bb" * 32] * 2, commits=commits)
    doc = load(folders[2])
    doc["records"][0]["version"] = 2  # the procedure of tiny-w96's test was bumped on night 3
    edit(folders[2], records=doc["records"], versions={**doc["versions"], "torch": "2.14.0"})
    nights = read_nights(tmp_path)
    every = series_of(nights)
    w96 = next(s for s in every if s.model == "tiny-w96")
    assert [(m.night, m.kind) for m in series_marks(w96)] == [(2, "version"), (3, "version"), (4, "weights")]
    assert [(m.night, m.kind, m.text) for m in night_marks(nights)] == [
        (2, "packages", "torch 2.13.0+cpu → 2.14.0"), (3, "packages", "torch 2.14.0 → 2.13.0+cpu"),
        (3, "commit", "commit 01234567 → ffffffff")]
    page = trend_page.write_trends(tmp_path).read_text()
    assert "20261105T031500Z: weights aaaaaaaa → bbbbbbbb" in page and "procedure version 1 → 2" in page
    assert "3 changes of weights or procedure" in page


def test_interrupted_and_damaged_runs_are_not_nights_and_a_link_is_not_read_twice(tmp_path):
    folders = nightly_history(tmp_path, [0.3, 0.2, 0.1, 0.05])
    edit(folders[1], interrupted=True)
    (folders[2] / "results.json").write_text("{not json")
    (tmp_path / "latest").symlink_to(folders[3].name)
    assert [n.run_id for n in read_nights(tmp_path)] == [folders[0].name, folders[3].name]


def check(value: float, half: float = 0.01, comparison: str = ">") -> Check:
    return Check("s", value, value - half, value + half, "u", comparison, 0.0, "d")


def test_the_margin_is_signed_by_the_side_of_the_threshold_the_interval_is_on():
    assert margin(check(0.3)) == 0.3 - 0.01
    assert margin(check(-0.3)) == -(0.3 - 0.01)  # short of passing by the nearer end
    assert margin(check(0.005)) == 0.0  # straddles
    assert margin(check(-0.3, comparison="<")) == 0.3 - 0.01 and margin(check(0.3, comparison="<")) == -(0.3 - 0.01)


def series(values: list[float], nights: list[int] | None = None) -> Series:
    readings = [Reading("holds" if v > 0.01 else "fails", 1, None, check(v)) for v in values]
    return Series(("S0.3", "m", "t", ""), list(zip(nights or range(len(values)), readings)))


def test_a_drift_shrinks_at_every_step_on_one_side_and_names_its_pace():
    found = drift(series([0.05, 0.51, 0.41, 0.31, 0.21, 0.11]))  # the first night is not among the last 5
    assert [round(m, 6) for m in found.margins] == [0.5, 0.4, 0.3, 0.2, 0.1]
    assert round(found.runs_left, 6) == 1.0  # 0.1 left at 0.1 a run
    assert drift(series([0.41, 0.31, 0.21, 0.11]), last=3).margins == drift(series([0.31, 0.21, 0.11])).margins
    assert drift(series([-0.41, -0.31, -0.21])) is not None  # a failing record nearing a pass drifts too
    assert drift(series([0.5, 0.5, 0.5, 0.5])) is None  # steady
    assert drift(series([0.31, 0.35, 0.21, 0.11])) is None  # not at every step
    assert drift(series([0.21, 0.11, -0.05])) is None  # crossed: a flip
    assert drift(series([0.21, 0.11])) is None  # two readings are a change, not a drift
    assert drift(series([0.41, 0.31, 0.21], nights=[0, 1, 9])) is None  # one reading in the last 5 nights


def test_the_writer_writes_trends_beside_the_index_and_links_them_from_it_and_the_report(tmp_path):
    s = settings_for(tmp_path)
    for value in (0.3, 0.2):
        folder = writer.write_run(s, [record(value)], {}, 0, 1.0, catalogue_json())
    page = (s.report_dir / "trends.html").read_text()
    assert history.GENERATOR in page and page.count("<img loading='lazy'") == 1 and "href='index.html'" in page
    assert "href='trends.html'" in (s.report_dir / "index.html").read_text()
    assert "href='../trends.html'" in (folder / "report.html").read_text()


def test_a_user_s_own_trends_html_is_never_replaced(tmp_path):
    nightly_history(tmp_path, [0.3, 0.2, 0.1])
    (tmp_path / "trends.html").write_text("mine")
    (tmp_path / "index.html").write_text("my index")
    written = trend_page.write_trends(tmp_path)
    assert (tmp_path / "trends.html").read_text() == "mine" and written == tmp_path / history.OWN_TRENDS
    assert f"href='{history.OWN_INDEX}'" in written.read_text()
    history.write_index(tmp_path)
    assert f"href='{history.OWN_TRENDS}'" in (tmp_path / history.OWN_INDEX).read_text()


def test_the_command_refuses_a_missing_folder_and_a_window_too_short_for_a_drift(tmp_path):
    assert run_cli("reports", "trends", str(tmp_path / "nowhere")).returncode == 2
    done = run_cli("reports", "trends", str(tmp_path), "--last", "2")
    assert done.returncode == 2 and "at least 3 runs" in done.stderr
    assert run_cli("reports", "trends", str(tmp_path)).returncode == 0
    assert "No complete run in this folder yet" in (tmp_path / "trends.html").read_text()


def test_records_without_a_finite_statistic_get_a_card_without_a_plot(tmp_path):
    folders = nightly_history(tmp_path, [0.3, 0.2])
    for folder in folders:
        doc = json.loads((folder / "results.json").read_text())
        doc["records"][0]["checks"] = []
        doc["records"][0]["outcome"] = "error"
        (folder / "results.json").write_text(json.dumps(doc))
    page = trend_page.write_trends(tmp_path).read_text()
    assert "no finite statistic" in page and page.count("<img loading='lazy'") == 1
