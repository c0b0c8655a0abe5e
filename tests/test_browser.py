"""The pages a team opens, in a real browser (issue 78, item 4): index.html, trends.html and one report.html load in
headless Chromium with no console message (an uncaught error, a resource that failed to load) and hold what they
should once their script has run. ``make test-browser`` runs these, and ``make test-nightly`` (they are marked
nightly: a browser start costs seconds, and not every machine has one). Where Chromium is absent they skip and say
how to install it.

Chromium is a program of its own (``tests.helpers.program``): ``--dump-dom`` prints the document after its scripts
ran, and ``--enable-logging=stderr`` writes each console message to stderr as ``...:CONSOLE...] "message"``. Every
console message counts (the pages log none); a canary page with an uncaught error proves the messages are still
read, so that another Chromium's log format cannot turn these tests silently green.
"""

import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote

import pytest

from fixtures.catalogue import catalogue_json
from reports import writer
from tests.builders import SPECTRA, nightly_history, record, settings_for
from tests.helpers import program

pytestmark = [pytest.mark.nightly, pytest.mark.subprocess]

CHROMIUM_ENV = "LATENT_CLAIMS_CHROMIUM"  # the browser to use, where it is none of NAMES on PATH
NAMES = ("chromium", "google-chrome", "google-chrome-stable", "chromium-browser")
INSTALL = (f"headless Chromium not found (looked for {', '.join(NAMES)} on PATH and ${CHROMIUM_ENV}): install it "
           "(Debian/Ubuntu: `apt-get install chromium`; macOS: `brew install --cask chromium`) or set "
           f"{CHROMIUM_ENV}=/path/to/chrome, then `make test-browser`")


def chromium() -> str:
    """The Chromium (or Chrome) binary; skips the calling test, with how to install one, where there is none."""
    found = os.environ.get(CHROMIUM_ENV) or next(filter(None, map(shutil.which, NAMES)), None)
    if not found:
        pytest.skip(INSTALL)
    return found


def load(page: Path, tmp_path: Path, query: str = "") -> tuple[str, list[str]]:
    """``page`` as headless Chromium leaves it after its scripts ran: (the DOM, the console messages)."""
    done = program([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    f"--user-data-dir={tmp_path / 'chromium-profile'}", "--enable-logging=stderr", "--v=0",
                    "--dump-dom", page.resolve().as_uri() + query], timeout=120)
    assert done.returncode == 0 and "</html>" in done.stdout, done.stderr[-3000:]
    return done.stdout, re.findall(r":CONSOLE[^\]]*\] (.*)", done.stderr)


def test_the_console_messages_of_a_page_are_read(tmp_path):
    """The canary: an uncaught error is caught by :func:`load`."""
    canary = tmp_path / "canary.html"
    canary.write_text("<!doctype html><html><p id='x'>before</p><script>document.getElementById('x').textContent="
                      "'after';null.f()</script></html>")
    dom, console = load(canary, tmp_path)
    assert ">after<" in dom and any("Uncaught TypeError" in line for line in console), console


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, Path]:
    """A report folder with six nights of the fine-tuned model (built as documents) and a seventh written by the
    writer as a run writes it (report.html with a figure, the index, the trends page); (folder, the run folder)."""
    base = tmp_path_factory.mktemp("browser") / "reports"  # settings_for's report folder
    nightly_history(base, [0.30, 0.24, 0.18, 0.12, 0.06, 0.03])
    s = settings_for(base.parent)
    run = writer.write_run(s, [record(-0.02, "tiny-w96", plot=SPECTRA), record(0.5)], {}, 0, 1.0, catalogue_json())
    assert s.report_dir == base
    return base, run


def test_the_trends_page_loads_with_its_plots_summary_and_filters(history, tmp_path):
    base, run = history
    dom, console = load(base / "trends.html", tmp_path)
    assert console == []
    assert "2 records shown" in dom  # the filter script ran
    assert re.search(r"S0\.3 on tiny-w96 \(t\)</a>: holds → fails in run " + run.name, dom)
    assert dom.count("class=\"card item") == 2 and 'id="claim"' in dom and 'id="model"' in dom
    for url in re.findall(r'src="(data:image/svg\+xml,[^"]*)"', dom):  # each plot is an SVG document
        assert ET.fromstring(unquote(url.split(",", 1)[1].replace("&amp;", "&"))).tag.endswith("svg")
    filtered, console = load(base / "trends.html", tmp_path, "?model=tiny-w96")
    assert console == [] and "1 records shown" in filtered
    cards = re.findall(r'<div class="card item[^>]*>', filtered)
    assert [("hidden" in c, 'data-model="tiny-w128"' in c) for c in cards] == [(False, False), (True, True)]


def test_the_index_and_a_report_load_and_link_the_trends(history, tmp_path):
    base, run = history
    dom, console = load(base / "index.html", tmp_path)
    assert console == [] and 'href="trends.html"' in dom and f"{run.name}/report.html" in dom
    dom, console = load(run / "report.html", tmp_path)
    assert console == []
    assert "<h1>latent-claims report</h1>" in dom and 'href="../trends.html"' in dom
    assert 'src="figures/' in dom and (run / "figures").is_dir()
