"""The rehearsal of ``make gpu-check`` (benchmarks/gpu_check.py): its steps at tiny size on the CPU, so that a
broken GPU script shows here and in CI, not in the 15 minutes of a lent GPU (issue 45)."""

import json
import re
import sys
import tarfile
from pathlib import Path

import pytest

from benchmarks import gpu_check
from tests.helpers import child, pytest_child

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.subprocess
def test_the_rehearsal_writes_one_run_with_s3_s4_and_the_timings(tmp_path):
    """``make gpu-check``'s steps at tiny size: a child process, since the check is an orchestrator of processes
    (its lanes, their SIGTERM at the budget, the merge) and the weights it brings back are tested by a run of their
    own."""
    base = tmp_path / "gpu-check"
    done, _ = child(["-m", "benchmarks.gpu_check", "--size", "tiny", "--out", base], cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = (base / "latest").resolve()  # the call's own folder
    assert out.parent == base.resolve() and f"this call's folder is {out}" in done.stdout

    timings = json.loads((out / "timings.json").read_text())
    assert timings["machine"]["device"] == "cpu" and timings["machine"]["torch"]
    steps = {s["name"]: s for s in timings["steps"]}
    assert {"train", "s4", "s3-ref-llama-small", "inversion-speed", "merge", "s0"} <= set(steps)
    assert all(s["returncode"] == 0 and not s["timed_out"] for s in steps.values()), steps
    assert timings["not_started"] == []
    training = (out / steps["train"]["log"]).read_text()  # the main model and its sibling as one batched job
    assert "--steps 3 tiny-w96 tiny-w96-seed1442" in training, training
    folders = dict(re.findall(r"^(tiny-w96(?:-seed1442)?): (/.+)$", training, re.M))  # prepare's "NAME: FOLDER"
    made_with = {name: json.loads((Path(folder) / "loss_curve.json").read_text()).get("trained_with")
                 for name, folder in folders.items()}  # trained now, or by an earlier rehearsal (then cached)
    assert made_with == {"tiny-w96": ["tiny-w96-seed1442"], "tiny-w96-seed1442": ["tiny-w96"]}, training

    results = json.loads((out / "run" / "latest" / "results.json").read_text())  # one run folder, merged
    assert results["device"]["device"] == "cpu"
    families = {r["claim"].split(".")[0] for r in results["records"]}
    assert families == {"S3", "S4"}
    assert all(r["outcome"] not in ("error", "control failed") for r in results["records"])
    assert set(timings["run"]["family_seconds"]) == {"S3", "S4"}
    assert timings["run"]["models"]["tiny-w96"]["weights_sha256"]
    s0 = timings["s0_run"]  # S0's scale: a run of its own prompt batch, not merged
    assert set(s0["family_seconds"]) == {"S0"} and "S0.6" in s0["outcomes"], s0
    assert all(o not in ("error", "control failed") for o in s0["outcomes"]["S0.6"].values())
    with tarfile.open(out / "gpu-check.tar.gz") as tar:
        assert "timings.json" in tar.getnames() and "logs/s4.log" in tar.getnames()
        assert not any(name.startswith("weights") for name in tar.getnames())  # the weights come back on their own

    # issue 58, item 3: the trained model comes back as a Hugging Face folder in shards of at most 15 MB, its sha256
    # in timings.json, and a CPU run on that folder reproduces the lane's S4 records
    assert set(timings["weights"]) == {"tiny-w96", "tiny-w96-seed1442"}  # every model of the one training step
    exported = timings["weights"]["tiny-w96"]
    folder = out / exported["folder"]
    assert exported["largest_file_bytes"] <= 15 * 10**6 and exported["files"]
    done = pytest_child("claims", "-m", "gpu", "--claim", "S4.1", "--claim", "S4.3", "--model", folder, "--device",
                        "cpu", "--report-dir", tmp_path / "again", "-q", "-p", "no:cacheprovider", cwd=ROOT, timeout=600)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    again = json.loads((tmp_path / "again" / "latest" / "results.json").read_text())
    assert again["models"][str(folder)]["weights_sha256"] == exported["sha256"]

    def headlines(records, model):
        return {r["claim"]: (r["outcome"].replace("fails as expected", "fails"), r["headline"]["value"])
                for r in records if r["model"] == model}
    lane = headlines(results["records"], "tiny-w96")
    assert headlines(again["records"], str(folder)) == {c: lane[c] for c in ("S4.1", "S4.3")}


def test_a_step_out_of_time_is_stopped_and_marked(tmp_path):
    """The budget: a step still running at its deadline gets SIGTERM (pytest then writes its report), and is
    marked out of time; a step that is not pytest and ends non-zero is not usable."""
    import time

    step = gpu_check.Step("sleeper", [sys.executable, "-c", "import time; time.sleep(30)"])
    assert not step.run(tmp_path, time.monotonic() + 1)
    assert step.timed_out and step.returncode != 0 and step.seconds < 20
    assert (tmp_path / step.log).read_text().startswith(sys.executable)


def test_a_part_with_no_lane_is_refused(monkeypatch, capsys, tmp_path):
    """source-main has no S3 or S0 lane: asking for one is an error, not an empty "done"."""
    monkeypatch.setattr(gpu_check.torch.cuda, "is_available", lambda: True)
    assert gpu_check.main(["--size", "source-main", "--part", "s3", "--out", str(tmp_path)]) == 2
    assert "has no lane of --part s3" in capsys.readouterr().err


def test_source_size_refuses_a_machine_without_cuda(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(gpu_check.torch.cuda, "is_available", lambda: False)
    assert gpu_check.main(["--size", "source", "--out", str(tmp_path)]) == 2
    assert "needs CUDA" in capsys.readouterr().err


def test_the_source_plan_is_s4s_recipe_and_s3s_scale():
    plan = gpu_check.PLANS["source"]
    assert plan.device == "cuda" and plan.zoo == "full"
    assert plan.train[0] == "s4-w384" and len(plan.train) == 4  # S4's recipe and its three seed siblings
    train = gpu_check.steps_of(plan, Path("out"))["s4"][0].argv  # one process: prepare trains them as one job
    assert train[-4:] == list(plan.train) and "prepare" in train
    assert all(("--source-scale", "on") == words[1:3] for words in plan.s3)
    assert {words[-1] for words in plan.s3} == set(gpu_check.REFERENCES)


def test_parts_are_kinds_of_lane_separated_by_commas():
    assert gpu_check._parts("s4,s0") == ("s4", "s0") and gpu_check._parts("all") == ("all",)
    for bad in ("s5", "", "all,s4"):
        with pytest.raises(Exception, match="give all, or some of s4, s3, s0"):
            gpu_check._parts(bad)


@pytest.mark.parametrize("budget", ["-5", "0", "19"])
def test_a_budget_below_what_the_plan_needs_is_a_usage_error_naming_the_minimum(tmp_path, capsys, budget):
    """Issue 59, item 11: --budget -5 and 0 started three lanes and killed them after 1 s."""
    assert gpu_check.main(["--size", "tiny", "--out", str(tmp_path), "--budget", budget]) == 2
    assert f"--budget {float(budget):g} is below what --size tiny needs: at least 20 seconds" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing was started


def test_each_call_has_its_own_folder_and_names_the_steps_it_never_started(tmp_path):
    """Issue 59, item 9: a rerun into a finished --out merged and summarised the earlier call's runs as its own and
    overwrote its timings.json and tarball. Each call now writes a folder of its own, and lists what it never began."""
    first = gpu_check.call_folder(tmp_path)
    (first / "timings.json").write_text("{}")
    second = gpu_check.call_folder(tmp_path)
    assert first != second and (first / "timings.json").exists() and list(second.iterdir()) == []
    assert (tmp_path / "latest").resolve() == second
    plan = gpu_check.PLANS["tiny"]
    lanes = gpu_check.steps_of(plan, second)
    done = [gpu_check.Step("train", []), gpu_check.Step("s4", [])]
    assert gpu_check.not_started(lanes, done) == ["s0", "s3-ref-llama-small", "inversion-speed"]
