"""What `reports merge` takes and replays (issue 74, cases 6 and 7): an OOM-killed shard's journal is an input like a
run folder, and the merged replay selects every input's claims."""

import json
import shlex
from pathlib import Path

from reports.journal import Journal
from reports.merge import merge
from tests.builders import edit, load, machine

NIGHTLY = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "nightly.yml"


def _journal_of(folder: Path, shard: str) -> Path:
    """A killed shard's journal: the run's facts, then its records, no report (the process ended without one)."""
    doc = load(folder)
    header = {k: v for k, v in doc.items() if k != "records"} | {"shard": shard}
    journal = Journal.start(folder.parent / "killed", header)
    for r in doc["records"]:
        journal.record(r)
    journal.append("models", "models", doc["models"])
    return journal.path


def test_a_killed_shards_journal_is_merged_and_its_shard_reported(tmp_path):
    """Case 6: the shard uploads shard/journal-*.jsonl; the merge read only run folders, so it was "MISSING", and
    given the journal it said "is not JSON (Extra data...)"."""
    a = machine(tmp_path, "a", {"tiny-w96": 96})
    edit(a, shard="tiny-w96", replay="pytest claims -m gpu --zoo tiny --seed 0 --shard tiny-w96")
    killed = machine(tmp_path, "b", {"tiny-w128": 128})
    journal = _journal_of(killed, "tiny-w128")
    shards = tmp_path / "shards.json"
    shards.write_text(json.dumps(["tiny-w96", "tiny-w128"]))
    from reports.__main__ import expected_shards

    folder, warnings = merge([str(a), str(journal)], tmp_path / "merged", expected_shards(str(shards)))
    doc = load(folder)
    assert doc["shards_missing"] == [] and {r["model"] for r in doc["records"]} == {"tiny-w96", "tiny-w128"}
    assert doc["interrupted"] is True  # the killed shard's part is marked


def test_the_nightly_merge_passes_the_shards_journals():
    run = next(s["run"] for s in _steps() if "reports merge" in s.get("run", ""))
    assert "shards/*/journal-*.jsonl" in run and "nullglob" in run


def _steps():
    import yaml

    return yaml.safe_load(NIGHTLY.read_text())["jobs"]["report"]["steps"]


def test_a_merged_replay_selects_every_inputs_claims(tmp_path):
    """Case 7: claims_selected was S2.1, S4.3, S4.5 and S4.9, and the replay read `--claim S4.9 --claim S4.3`."""
    a = machine(tmp_path, "a", {"tiny-w96": 96})
    b = machine(tmp_path, "b", {"tiny-w128": 128})
    edit(a, claims_selected=["S4.3", "S4.9"],
         replay="pytest claims -m gpu --zoo tiny --seed 0 --claim S4.9 --claim S4.3 --model tiny-w96")
    edit(b, claims_selected=["S2.1", "S4.5"],
         replay="pytest claims -m gpu --zoo tiny --seed 0 --claim S2.1 --claim S4.5 --model tiny-w128")
    folder, _ = merge([str(a), str(b)], tmp_path / "merged")
    words = shlex.split(load(folder)["replay"])
    claims = [words[i + 1] for i, w in enumerate(words) if w == "--claim"]
    assert sorted(claims) == ["S2.1", "S4.3", "S4.5", "S4.9"] == load(folder)["claims_selected"]
    assert words.count("--model") == 2
    edit(b, claims_selected=None, replay="pytest claims -m gpu --zoo tiny --seed 0 --model tiny-w128")
    folder, _ = merge([str(a), str(b)], tmp_path / "merged")
    assert "--claim" not in load(folder)["replay"]  # one input ran every claim: so does the merge


def test_a_refusal_names_an_option_once(tmp_path):
    """Case 16: a merge refusal printed "--inconclusive (--inconclusive (...))"."""
    import pytest

    from reports.merge import MergeError

    a = machine(tmp_path, "a", {"tiny-w96": 96})
    b = machine(tmp_path, "b", {"tiny-w128": 128})
    edit(a, replay="pytest claims -m gpu --zoo tiny --seed 0 --inconclusive fail --model tiny-w96")
    edit(b, replay="pytest claims -m gpu --zoo tiny --seed 0 --model tiny-w128")
    with pytest.raises(MergeError) as refused:
        merge([str(a), str(b)], tmp_path / "merged")
    said = str(refused.value)
    assert "cannot merge: --inconclusive (an inconclusive record red or green) differs: 'fail'" in said
    assert "--inconclusive (--inconclusive" not in said
