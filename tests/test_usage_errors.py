"""Bad input gets a message naming what was wrong and what to do, never a traceback or a silent fallback
(issue 44's sweep: each test here failed before its fix)."""

import json
from pathlib import Path

import pytest

import models.shipped
from models import __main__ as models_cli
from models.user_groups import GroupError, read_groups_file
from reports import __main__ as reports_cli
from tests.helpers import claims_run, pytest_inprocess, spawn, startup_error


@pytest.mark.parametrize(("text", "words"), [
    ("[[groups]]\nkind = 'ladder'\nname = 'l'\nmembers = ['tiny-w96', 'tiny-w128']\n", ["unknown key 'groups'"]),
    ("", ["no [[group]] table"]),
    ("[[group]]\nkind = 'ladder'\nname = 'l'\nmembers = ['tiny-w96', 'tiny-w128']\nrungs = 2\n",
     ["group 1", "unknown key 'rungs'"]),
    ("[[group]]\nkind = 'ladder'\nname = 'l'\nmembers = 'tiny-w96,tiny-w128'\n", ["members must be a list"]),
])
def test_a_groups_file_that_is_not_what_it_should_be_is_refused(tmp_path, text, words):
    path = tmp_path / "groups.toml"
    path.write_text(text)
    with pytest.raises(GroupError) as err:
        read_groups_file(path)
    assert all(w in str(err.value) for w in words), str(err.value)


@pytest.mark.parametrize("argv", [["prepare", "--device", "nonsense"], ["fingerprint", "bogus"]]
                         + [pytest.param(["prepare", "--retrain", "--device", "cuda", "tiny-w96"],
                                         id="cuda-without-a-gpu")])
def test_the_models_cli_says_what_is_wrong_without_a_traceback(monkeypatch, capsys, argv):
    monkeypatch.setattr(models_cli.torch.cuda, "is_available", lambda: False)
    assert models_cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


def test_a_partial_run_does_not_replace_the_shipped_verdicts(tmp_path, monkeypatch, capsys):
    """A one-claim run's --write is refused; --merge replaces its records only."""
    verdicts = tmp_path / "verdicts.json"
    old = {"run_id": "old", "git": "a", "machines": [], "torch": "2", "records": {
        "S4.1|t[tiny-w96]": {"version": 1, "outcome": "holds", "value": 0.6, "ci_low": 0.6, "ci_high": 0.6},
        "S4.2|t[tiny-w96]": {"version": 6, "outcome": "holds", "value": 0.1, "ci_low": 0.05, "ci_high": 0.2}}}
    verdicts.write_text(json.dumps(old))
    monkeypatch.setattr(models.shipped, "VERDICTS", verdicts)
    run = tmp_path / "results.json"
    record = {"claim": "S4.1", "model": "tiny-w96", "test": "t[tiny-w96]", "outcome": "holds", "version": 1,
              "checks": [{"name": "x", "value": 0.7, "ci_low": 0.7, "ci_high": 0.7, "threshold": 0.5}]}
    run.write_text(json.dumps({"schema": "latent-claims/results/7", "run_id": "new", "git": "b", "zoo_build": "shipped",
                               "interrupted": False, "models": {}, "versions": {"torch": "2"}, "records": [record],
                               "seed": 0, "prompts": [32, 128], "max_prompts": 128, "zoo": "tiny",
                               "device": {"dtype": "float32"}, "source_scale": False}))  # the shipped settings
    assert reports_cli.main(["shipped", str(run), "--write"]) == 2
    assert "lacks 1 of the 2 records" in capsys.readouterr().err
    assert json.loads(verdicts.read_text()) == old
    assert reports_cli.main(["shipped", str(run), "--write", "--merge"]) == 0
    merged = json.loads(verdicts.read_text())
    kept = merged["records"]
    assert kept["S4.1|t[tiny-w96]"]["value"] == 0.7 and kept["S4.2|t[tiny-w96]"] == old["records"]["S4.2|t[tiny-w96]"]
    assert merged["run_id"] == "old" and merged["updated_by"] == [{"run_id": "new", "git": "b", "machines": [],
                                                                   "records": ["S4.1|t[tiny-w96]"]}]


def test_a_model_named_twice_is_a_usage_error():
    said = startup_error("--model", "tiny-w96", "--model", "tiny-w96", "--claim", "S4.1")
    assert said and "--model tiny-w96: given 2 times" in said


def test_a_report_dir_that_cannot_be_made_stops_the_run_before_the_first_test(tmp_path):
    """/proc/x passes the access check as root, but cannot be made: the run stops at once, not at its end."""
    done = pytest_inprocess("claims", "-m", "gpu", "--model", "tiny-w96", "--claim", "S4.1", "--report-dir",
                            "/proc/latent-claims-no-such-folder", "-p", "no:cacheprovider", "-q")
    assert done.returncode == 4, (done.stdout + done.stderr)[-2000:]
    assert "--report-dir /proc/latent-claims-no-such-folder: cannot be created" in done.stdout + done.stderr


def test_claims_without_a_subject_in_the_run_are_a_usage_error():
    """--claim S4.7 runs on seed siblings; a run of tiny-w96 alone used to end green with no report."""
    done = pytest_inprocess("claims", "-m", "gpu", "--model", "tiny-w96", "--claim", "S4.7", "-p", "no:cacheprovider",
                            "-q")
    assert done.returncode == 4, (done.stdout + done.stderr)[-2000:]
    assert "S4.7 runs on siblings" in done.stdout + done.stderr


@pytest.mark.subprocess
def test_an_interrupt_before_the_first_record_still_writes_the_report(tmp_path):
    """Ctrl-C (or SIGTERM) during the first claim test's setup: the report folder says interrupted. A child process:
    the interrupt and the exit status 2 are the process's."""
    (tmp_path / "interrupt_early.py").write_text(
        "import pytest\n\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_runtest_setup(item):\n    raise KeyboardInterrupt\n")
    done, _ = claims_run("--claim", "S4.1", "--report-dir", str(tmp_path / "runs"), "-p", "interrupt_early",
                         env={"PYTHONPATH": f"{tmp_path}:{Path(__file__).resolve().parent.parent}"})
    assert done.returncode == 2, (done.stdout + done.stderr)[-2000:]
    doc = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert doc["interrupted"] is True and doc["records"] == []


def test_a_tensor_of_the_wrong_shape_is_named_with_both_shapes(tmp_path):
    """The record said only transformers' "...look at the above report!" (a report on the terminal)."""
    import safetensors.torch
    import torch

    from models.errors import ModelLoadError
    from models.loading import _hf_model
    from tests.conftest import tiny_model

    tiny_model("gpt2").save_pretrained(tmp_path)
    weights = safetensors.torch.load_file(tmp_path / "model.safetensors")
    weights["transformer.h.0.attn.c_attn.weight"] = torch.zeros(32, 10)
    safetensors.torch.save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelLoadError) as err:
        _hf_model(str(tmp_path))
    assert "transformer.h.0.attn.c_attn.weight: file (32, 10), config (32, 96)" in str(err.value)


def test_a_manifest_without_a_shipped_models_entry_refuses_instead_of_retraining(monkeypatch):
    """A damaged manifest used to make the suite retrain tiny-w96 silently (about 25 minutes)."""
    from models.corpus import load_corpus
    from models.errors import ModelLoadError
    from models.recipes import PROFILES

    pinned = dict(models.shipped.manifest())
    del pinned["tiny-w96"]
    monkeypatch.setattr(models.shipped, "manifest", lambda: pinned)
    with pytest.raises(ModelLoadError, match="manifest.json has no entry for it"):
        models.shipped.shipped(PROFILES["tiny"][0], load_corpus())


def test_a_local_build_that_is_not_trained_is_refused_with_its_plan(tmp_path, monkeypatch):
    """--zoo-build local with nothing built used to train for about 20 minutes inside pytest with no plan line."""
    from dataclasses import replace

    import models.__main__ as prepare
    from fixtures.collector import local_builds_missing
    from tests.builders import settings_for

    monkeypatch.setattr(prepare, "checkpoint_dir", lambda recipe, corpus: tmp_path / "never-trained" / recipe.name)
    settings = replace(settings_for(tmp_path), models=("tiny-w96", "tiny-w96:untrained"), zoo_build="local")
    used = {"tiny-w96", "tiny-w96:untrained"}  # the pool names of the selected tests
    said = local_builds_missing(settings, used)
    assert said.startswith("--zoo-build local: this machine has no build of tiny-w96 (1 of the run's 1 trained")
    assert "about about" not in said  # issue 67, case 12
    assert "`python -m models prepare --retrain tiny-w96`" in said
    assert local_builds_missing(replace(settings, zoo_build="shipped"), used) is None
    assert local_builds_missing(settings, {"ref-gpt2-small"}) is None  # the selected tests use no trained model


@pytest.mark.parametrize(("value", "words"), [("8x0", "T must be at least 3 tokens"),
                                              ("2x1", "T must be at least 3 tokens"),  # issue 74, case 16
                                              ("2x2", "the first token is dropped"),
                                              ("1x128", "N must be at least 2"), ("eightx128", "is not N sequences")])
def test_a_prompt_shape_names_which_of_its_numbers_is_wrong(value, words):
    """Issue 59, item 13: `--prompts 8x0` said "N >= 2" where T was the problem."""
    from fixtures.option_checks import check_prompts

    with pytest.raises(pytest.UsageError, match=words):
        check_prompts(value, "tiny")
    assert check_prompts("8x2048", "tiny") == (8, 2048) and check_prompts("2x3", "tiny") == (2, 3)


def test_a_baseline_of_a_newer_schema_is_told_it_is_newer(tmp_path):
    """Issue 59, item 13: a schema-99 baseline was told to rerun "the baseline's commit with this version"."""
    from fixtures.path_checks import check_baseline

    newer, older = tmp_path / "newer.json", tmp_path / "older.json"
    newer.write_text(json.dumps({"schema": "latent-claims/results/99", "records": []}))
    older.write_text(json.dumps({"schema": "latent-claims/results/2", "records": []}))
    with pytest.raises(pytest.UsageError, match="written by a newer latent-claims than this one"):
        check_baseline(str(newer))
    with pytest.raises(pytest.UsageError, match="run the baseline's commit again with this version"):
        check_baseline(str(older))


def test_a_config_json_that_is_not_json_is_named_as_such(tmp_path):
    """Issue 59, item 13: a config.json that is not JSON was reported as "could not load the tokenizer", with advice
    about hub ids."""
    from models.loading import ModelLoadError, _check_hf_folder

    (tmp_path / "config.json").write_text("{not json")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelLoadError, match="config.json is not JSON .*save the model again"):
        _check_hf_folder(tmp_path, weights=False)


def test_an_interrupt_while_the_plugin_loads_says_nothing_was_measured_in_one_line():
    """Issue 59, item 12: a Ctrl-C in the first seconds, while the conftest imports torch and transformers, printed
    130-190 lines of traceback. The guard prints one line and exits with 130."""
    from fixtures.loading_guard import INTERRUPTED_EXIT, MESSAGE, nothing_measured_on_interrupt

    exits = []
    with nothing_measured_on_interrupt(exit=exits.append):
        raise KeyboardInterrupt
    assert exits == [INTERRUPTED_EXIT] and "nothing was measured" in MESSAGE
    with pytest.raises(ValueError):  # anything else passes through untouched
        with nothing_measured_on_interrupt(exit=exits.append):
            raise ValueError("not an interrupt")


@pytest.mark.subprocess
def test_a_ctrl_c_during_the_plugins_imports_prints_one_line():
    """The process boundary is what is tested: SIGINT while the conftest imports torch (the child has mapped
    libtorch: it is inside the guarded imports, which take seconds more), and the terminal shows one line, exit
    status 130."""
    import signal
    import time

    root = Path(__file__).resolve().parent.parent
    child = spawn(["-m", "pytest", "claims", "--collect-only", "-q", "-p", "no:cacheprovider"], cwd=root)
    maps, deadline = Path(f"/proc/{child.pid}/maps"), time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None and "libtorch" not in maps.read_text(errors="replace"):
        time.sleep(0.02)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 130, out[-2000:] + err[-2000:]
    assert (out + err).strip().splitlines() == [
        "latent-claims: interrupted while loading its libraries, before any test ran: nothing was measured"]
