"""The pytest plugin seen from the command line: options, collection errors, the ledger."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.ledger import load_ledger

REPO = Path(__file__).resolve().parent.parent


def pytest_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=REPO, capture_output=True, text=True, timeout=600)


def test_unknown_model_fails_at_collection_with_the_valid_names():
    done = pytest_run("claims", "--model", "gpt-9000", "--collect-only", "-q")
    assert done.returncode == 4
    assert "unknown model 'gpt-9000'" in done.stderr and "tiny-w128" in done.stderr


def test_header_makes_the_run_replayable():
    done = pytest_run("claims", "--collect-only", "--seed", "7", "--zoo", "tiny", "-p", "no:cacheprovider")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "seed=7" in done.stdout
    assert "replay: pytest claims -m gpu --zoo tiny --device cpu --dtype float32 --seed 7" in done.stdout


def test_default_tiny_zoo_collects_the_four_claims_over_their_models():
    done = pytest_run("claims", "-m", "gpu", "--collect-only", "-q", "--zoo", "tiny", "-p", "no:cacheprovider")
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert any("test_power_law_straightens_with_depth[tiny-w128]" in i for i in ids)
    assert any("test_ffn_output_dominates_each_block[tiny-w96]" in i for i in ids)
    assert any("test_wider_models_invert_better[tiny-ladder-restricted]" in i for i in ids)
    assert any("test_final_norm_removes_scale[ref-llama-small]" in i for i in ids)


def test_the_ledger_file_parses():
    assert all(e.why and e.would_change for e in load_ledger().values())


@pytest.mark.parametrize(
    "content, message",
    [("[[expected]]\nclaim = 'S0.3'\n", "malformed"),
     ("[[expected]]\nclaim='S0.3'\nmodel='m'\nwhy='w'\nwould_change='c'\n" * 2, "repeats")],
)
def test_a_broken_ledger_is_named(tmp_path, content, message):
    path = tmp_path / "ledger.toml"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_ledger(path)


def test_claims_run_on_a_local_hf_folder(tmp_path):
    """`pytest claims -m gpu --model FOLDER` runs the applicable claims on it and writes the report."""
    from tests.test_zoo import save_hf_folder

    folder = save_hf_folder(tmp_path / "my-gpt2", arch="gpt2")
    done = pytest_run("claims", "-m", "gpu", "--model", str(folder), "--report-dir", str(tmp_path / "reports"),
                      "--junitxml", str(tmp_path / "junit.xml"), "-p", "no:cacheprovider", "-q", "-rs")
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]  # a random model may fail claims
    results = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())
    assert {r["claim"] for r in results["records"]} == {"S0.3", "S4.2", "S4.5"}
    assert {r["model"] for r in results["records"]} == {str(folder)}
    assert results["models"][str(folder)]["role"] == "hf"
    assert '<property name="claim_record"' in (tmp_path / "junit.xml").read_text()


def test_an_interrupted_run_still_writes_what_it_measured(tmp_path):
    """Ctrl-C after the first claim test: the report exists, says so, and holds that test's record."""
    (tmp_path / "interrupt_after_first.py").write_text(
        "def pytest_runtest_teardown(item, nextitem):\n    raise KeyboardInterrupt\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "claims/test_feedforward.py", "-m", "gpu", "--model", "tiny-w96",
         "--report-dir", str(tmp_path / "reports"), "-p", "interrupt_after_first", "-p", "no:cacheprovider", "-q"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 2, done.stdout[-2000:]
    results = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())
    assert results["interrupted"] is True
    assert [r["claim"] for r in results["records"]] == ["S4.2"]
