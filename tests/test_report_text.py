"""report.md carries no raw HTML from the data it reports (issue 74, case 16): a model name such as
``<img src=x onerror=alert(1)>`` (a folder may be called anything) is shown as text, not as a tag."""

from dataclasses import replace

from fixtures.catalogue import catalogue_json
from reports import render, writer
from tests.builders import model_facts, record, settings_for

NAME = "/tmp/<img src=x onerror=alert(1)>/m"


def test_report_md_shows_a_model_named_like_a_tag_as_text(tmp_path):
    rec = replace(record(0.2), model=NAME, test=f"claims/s0_spectra/test_spectra.py::t[{NAME}]")
    doc = writer.results(settings_for(tmp_path), [rec], {NAME: model_facts(96)}, 0, 1.0, catalogue_json())
    md = render.markdown(doc)
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)>" in md


def test_only_what_would_open_a_tag_is_escaped():
    assert render.md_text("a < b, <br> kept, <script>x</script>") == "a < b, <br> kept, &lt;script>x&lt;/script>"
