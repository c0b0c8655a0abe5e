"""No path outside the report folder (issue 74, case 10): a crafted claim id in a results.json given to `reports merge`
wrote /tmp/tmp/x/PWNED.png. Claim ids are checked against the catalogue, and every file the report writes is confined
to its run folder."""

import json
from pathlib import Path

import pytest

from reports.__main__ import main
from reports.confined import UnsafePath, confined
from reports.render import figure_name
from tests.builders import machine

CRAFTED = "S2.1/../../../../../../tmp/x/PWNED"


def test_merge_refuses_a_claim_id_that_is_not_in_the_catalogue(tmp_path, capsys):
    run = machine(tmp_path, "a", {"tiny-w96": 96})
    doc = json.loads((run / "results.json").read_text())
    doc["records"][0]["claim"] = CRAFTED
    doc["records"][0]["plot"] = {"kind": "lines", "x": [1, 2], "series": {"y": {"value": [1, 2]}}}
    (run / "results.json").write_text(json.dumps(doc))
    out = tmp_path / "out"
    assert main(["merge", str(run), "--report-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert repr(CRAFTED) in err and "not a claim of the catalogue" in err
    assert not out.exists() and not list(Path("/tmp/tmp/x").glob("PWNED*"))


@pytest.mark.parametrize("name", ["../x.png", "a/../../x.png", "/tmp/x.png", "x\0.png", "", ".", "..", "a/b.png"])
def test_a_name_that_would_leave_its_folder_is_refused(tmp_path, name):
    with pytest.raises(UnsafePath, match="not a plain file name"):
        confined(tmp_path, name)


def test_a_plain_name_stays_in_its_folder(tmp_path):
    assert confined(tmp_path, "012-S0.1.png") == tmp_path / "012-S0.1.png"


def test_a_figures_name_keeps_only_plain_characters_of_the_claim_id():
    class Record:
        claim = CRAFTED
    name = figure_name(3, Record())
    assert "/" not in name and "\0" not in name and name.startswith("003-S2.1") and name.endswith(".png")
    assert confined(Path("/r"), name).parent == Path("/r")
