"""Startup validation seen from the command line, and SIGTERM handled like Ctrl-C.

Every bad option value is a usage error (exit status 4) within seconds, before
any model is touched: the message names the option, what is wrong and what to
do, and the failed start leaves nothing behind (no report folder, not even the
--report-dir it would have created).
"""

import json
import os
import signal
import textwrap
from pathlib import Path

import pytest

from fixtures.option_checks import PROMPTS, check_corpus
from models.corpus import min_corpus_characters
from models.corpus import Corpus
from tests.helpers import child, claims_run, pytest_child, startup_error

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "models" / "shipped"
ROOT = os.geteuid() == 0  # root writes into read-only folders, so os.access(W_OK) is True there


def tree(folder: Path) -> set[str]:
    """Every path under ``folder``, relative to it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def results_json(**changes) -> str:
    record = {"claim": "S4.2", "model": "tiny-w96", "test": "claims/s4_ffn/test_feedforward.py::t[tiny-w96]",
              "version": 1, "outcome": "holds", "checks": [{"name": "x", "value": 1.0, "ci_low": 0.5, "ci_high": 1.5}]}
    return json.dumps({"schema": "latent-claims/results/6", "run_id": "20250101T000000Z", "records": [record],
                       **changes})


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def no_such_file(tmp: Path) -> str:
    return str(tmp / "nowhere" / "corpus.txt")


def not_json(tmp: Path) -> str:
    return str(write(tmp / "results.json", "schema: latent-claims/results/4\n"))


def json_list(tmp: Path) -> str:
    return str(write(tmp / "results.json", "[1, 2, 3]"))


def old_schema(tmp: Path) -> str:
    old = json.loads(results_json(schema="latent-claims/results/1"))
    del old["records"][0]["outcome"]  # schema 1 had verdicts, not outcomes
    return str(write(tmp / "results.json", json.dumps(old)))


def other_tool(tmp: Path) -> str:
    return str(write(tmp / "results.json", json.dumps({"tests": [{"nodeid": "t", "outcome": "passed"}]})))


def damaged_record(tmp: Path) -> str:
    doc = json.loads(results_json())
    del doc["records"][0]["checks"][0]["ci_low"]
    return str(write(tmp / "results.json", json.dumps(doc)))


def binary_corpus(tmp: Path) -> str:
    return str(write(tmp / "corpus.bin", b"text at first\n" * 10 + bytes(range(256)) * 200))


def latin1_corpus(tmp: Path) -> str:
    return str(write(tmp / "corpus.txt", b"To be, or not to be\n" * 60 + "café".encode("latin-1") + b" au lait\n" * 3000))


def short_corpus(tmp: Path) -> str:
    return str(write(tmp / "corpus.txt", "Now is the winter of our discontent\n" * 100))


def folder_corpus(tmp: Path) -> str:
    (tmp / "texts").mkdir()
    return str(tmp / "texts")


def report_dir_under_a_file(tmp: Path) -> str:
    return str(write(tmp / "a-file", "not a folder") / "reports")


def report_dir_is_a_file(tmp: Path) -> str:
    return str(write(tmp / "reports", "not a folder"))


def report_dir_under_read_only(tmp: Path) -> str:
    if ROOT:  # root may write anywhere: the folder that cannot be created is one whose parent is a file
        return report_dir_under_a_file(tmp)
    (tmp / "locked").mkdir()
    (tmp / "locked").chmod(0o500)
    return str(tmp / "locked" / "reports")


BAD = {  # id: (option, value or a function of the test's tmp folder making it, words the message must hold)
    "device-tpu": ("--device", "tpu", ["--device tpu: not a device", "auto, cpu, cuda, cuda:N"]),
    "device-typo": ("--device", "cuda0", ["--device cuda0: not a device", "cuda:N"]),
    "seed-negative": ("--seed", "-1", ["--seed -1:", "from 0 to 4294967295", "e.g. --seed 0"]),
    "seed-too-big": ("--seed", str(2**32), [f"--seed {2**32}:", "numpy"]),
    "seed-not-int": ("--seed", "one", ["--seed", "invalid int value: 'one'"]),
    "report-dir-unwritable": ("--report-dir", report_dir_under_read_only,
                              ["--report-dir", "cannot be created", "pass a folder you can write to"]),
    "report-dir-under-file": ("--report-dir", report_dir_under_a_file,
                              ["--report-dir", "a-file is a file, not a folder", "pass a folder you can write to"]),
    "report-dir-is-file": ("--report-dir", report_dir_is_a_file,
                           ["--report-dir", "exists and is not a folder", "pass a folder you can write to"]),
    "baseline-missing": ("--baseline", no_such_file, ["--baseline", "no such file", "earlier run's results.json"]),
    "baseline-not-json": ("--baseline", not_json, ["--baseline", "is not JSON", "line 1 column 1",
                                                   "earlier run's results.json"]),
    "baseline-json-list": ("--baseline", json_list, ["--baseline", "holds a JSON list",
                                                     "'latent-claims/results/9'", "earlier run's results.json"]),
    "baseline-old-schema": ("--baseline", old_schema, ["--baseline", "schema 'latent-claims/results/1'",
                                                       "expected 'latent-claims/results/9'", "run the baseline's commit"]),
    "baseline-other-tool": ("--baseline", other_tool, ["--baseline", "no 'schema' key",
                                                       "expected 'latent-claims/results/9'", "results.json"]),
    "baseline-damaged": ("--baseline", damaged_record, ["--baseline", "record 0", "checks[0].ci_low", "damaged"]),
    "corpus-missing": ("--corpus", no_such_file, ["--corpus", "no such file", "pass a UTF-8 text file"]),
    "corpus-folder": ("--corpus", folder_corpus, ["--corpus", "is a folder, not a file", "pass a UTF-8 text file"]),
    "corpus-binary": ("--corpus", binary_corpus, ["--corpus", "is not a text file", "byte offset 140",
                                                  "pass a UTF-8 text file"]),
    "corpus-not-utf8": ("--corpus", latin1_corpus, ["--corpus", "is not UTF-8", "byte 0xe9 at byte offset 1203",
                                                    "iconv -f LATIN1 -t UTF-8"]),
    "corpus-too-short": ("--corpus", short_corpus, ["--corpus", "has 3,600 characters", "32 windows of",
                                                    "needs at least", "pass a longer text"]),
    "model-missing-folder": ("--model", "./no-such-checkpoint", ["--model ./no-such-checkpoint: no such folder",
                                                                 "save_pretrained"]),
    "model-unknown": ("--model", "tiny-w97", ["--model tiny-w97:", "unknown model", "valid names"]),
    "max-prompts-not-a-doubling": ("--max-prompts", "100", ["--max-prompts 100: is not a look's size",
                                                           "32, 64, 128", "pass 64 (the last look it would reach) or 128"]),
    "list-shards-folder": ("--list-shards", folder_corpus, ["--list-shards", "is a folder, not a file",
                                                            "or - to print the list"]),
    "list-shards-no-folder": ("--list-shards", lambda tmp: str(tmp / "missing" / "shards.json"),
                              ["--list-shards", "does not exist", "a folder you can write to"]),
    "group-malformed": ("--group", "ladder=mine:a,b", ["--group ladder=mine:a,b", "expected KIND:NAME=A,B,C"]),
    "group-breaks-a-rule": ("--group", f"siblings:s={SHIPPED / 'tiny-w96'},{SHIPPED / 'tiny-w128'}",
                            ["siblings s:", "tiny-w128 breaks the rule 'siblings share architecture, tokenizer and "
                             "width'", "its width is 128"]),
    "group-member-missing": ("--group", "ladder:l=./no-such-rung,tiny-w96", ["no-such-rung"]),
    "groups-file-missing": ("--groups", no_such_file, ["--groups", "No such file"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_option_is_a_usage_error_that_leaves_nothing_behind(tmp_path, case):
    """Each bad option's message names the option, what is wrong and what to do, and the checks create nothing (the
    startup checks in this process: ``tests.helpers.startup_error``; a real start below)."""
    option, value, words = BAD[case]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    value = value(scratch) if callable(value) else value
    before = tree(tmp_path)
    reports = ["--report-dir", str(tmp_path / "reports")] if option != "--report-dir" else []
    try:
        said = startup_error("--model", "tiny-w96", option, value, *reports)
    finally:
        for path in [tmp_path, *tmp_path.rglob("*")]:  # let pytest's tmp_path cleanup remove a locked folder
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o700)
    assert said is not None, f"{option} {value} passed the startup checks"
    for word in words:
        assert word in said, f"{word!r} not in:\n{said[-3000:]}"
    assert tree(tmp_path) == before  # no report folder, no --report-dir, nothing else
    assert not (tmp_path / "reports").exists()


@pytest.mark.subprocess
def test_a_real_start_with_bad_options_exits_4_before_any_model_one_line_each_and_leaves_nothing_behind(tmp_path):
    """What only a real process shows: pytest's exit status 4, no traceback, before any model or corpus is touched
    (the cache it would fill stays empty; how long that takes is measured, not asserted: a timing is no test), every
    bad option on a line of its own in the order checked, and no report folder."""
    cache = tmp_path / "cache"
    cache.mkdir()
    done, _ = claims_run("--device", "tpu", "--seed", "-1", "--corpus", str(tmp_path / "none.txt"),
                         "--report-dir", str(tmp_path / "reports"), env={"LATENT_CLAIMS_CACHE": str(cache)})
    assert done.returncode == 4, done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    assert tree(cache) == set(), "a usage error came after the cache was touched"
    cache.rmdir()
    lines = [line for line in done.stderr.splitlines() if line.startswith(("ERROR: --", "--"))]
    assert [line.removeprefix("ERROR: ").split()[0] for line in lines] == ["--device", "--seed", "--corpus"]
    assert tree(tmp_path) == set()


def test_every_bad_option_is_reported_at_once(tmp_path):
    """One failed start lists every option to fix, one line each, in the order checked."""
    said = startup_error("--model", "tiny-w96", "--device", "tpu", "--seed", "-1", "--corpus",
                         str(tmp_path / "none.txt"), "--report-dir", str(tmp_path / "reports"))
    assert [line.split()[0] for line in said.splitlines()] == ["--device", "--seed", "--corpus"]
    assert not (tmp_path / "reports").exists()


def test_good_options_pass_and_a_writable_report_dir_that_does_not_exist_yet_is_not_created(tmp_path):
    """A good --report-dir two levels deep is accepted, and left to the report writer to create."""
    assert startup_error("--model", "tiny-w96", "--report-dir", str(tmp_path / "new" / "reports"),
                         "--seed", "4294967295") is None
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("zoo", sorted(PROMPTS))
def test_the_shortest_corpus_accepted_fills_the_prompt_batch(tmp_path, zoo):
    """The length check matches the split: the shortest text accepted has exactly room for the batch."""
    n_prompts, length = PROMPTS[zoo]
    need = min_corpus_characters(n_prompts, length)
    assert len(Corpus("c", "x" * need, "").validation) >= n_prompts * length
    assert len(Corpus("c", "x" * (need - 1), "").validation) < n_prompts * length
    text = ("Now is the winter of our discontent\n" * (need // 36 + 1))[:need]
    assert check_corpus(str(write(tmp_path / "ok.txt", text)), PROMPTS[zoo]) == tmp_path / "ok.txt"
    with pytest.raises(pytest.UsageError, match=f"has {need - 1:,} characters.*at least {need:,}"):
        check_corpus(str(write(tmp_path / "short.txt", text[:-1])), PROMPTS[zoo])


def test_the_tiny_profile_needs_40951_characters():
    """32 windows of 128 characters in the last 10 %: 4,096 of 40,951 (the split truncates the train part, 36,855.9)."""
    assert min_corpus_characters(*PROMPTS["tiny"]) == 40_951


SIGNALS_SCRIPT = textwrap.dedent('''
    import os, signal, sys, time
    from fixtures import signals
    assert signals.install_sigterm_handler()
    assert not signals.install_sigterm_handler()  # once
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        print("not interrupted")
    except KeyboardInterrupt:
        print("interrupted", signals.sigterm_received(), flush=True)
    signals.uninstall_sigterm_handler()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    sys.exit(2)  # as pytest after Ctrl-C; the process still ends by SIGTERM
''')


@pytest.mark.subprocess
def test_sigterm_interrupts_like_ctrl_c_and_the_process_still_ends_by_the_signal():
    """A child process: the signal and the status the process ends with are the process's."""
    done, _ = child(["-c", SIGNALS_SCRIPT], timeout=60)
    assert done.stdout.strip() == "interrupted True", done.stderr[-3000:]
    assert done.returncode == -signal.SIGTERM, done.stderr[-3000:]


@pytest.mark.subprocess
def test_the_sigterm_handler_installs_only_in_the_main_thread():
    """A fresh child process: this session has installed its own handler already."""
    script = ("import threading, signal\nfrom fixtures import signals\nout = []\n"
              "t = threading.Thread(target=lambda: out.append(signals.install_sigterm_handler()))\n"
              "t.start(); t.join()\nassert out == [False] and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL\n"
              "assert signals.exit_status_for_signal() == 143\n")
    done, _ = child(["-c", script], timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.subprocess
def test_a_terminated_run_still_writes_what_it_measured(tmp_path):
    """SIGTERM after the first claim test: the report exists, says interrupted, holds that test's record, and the
    process ends as one terminated by SIGTERM (143 in a shell)."""
    (tmp_path / "sigterm_after_first.py").write_text(
        "import os, signal\n\n\ndef pytest_runtest_teardown(item, nextitem):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
    )
    done = pytest_child("claims/s4_ffn/test_feedforward.py", "-m", "gpu", "--model", "tiny-w96", "--report-dir",
                        tmp_path / "reports", "-p", "no:cacheprovider", "-p", "sigterm_after_first", "-q",
                        env={"PYTHONPATH": f"{REPO}:{tmp_path}"})
    said = (done.stdout + done.stderr)[-3000:]
    assert (tmp_path / "reports" / "latest" / "results.json").exists(), f"no report (exit {done.returncode}):\n{said}"
    results = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())
    assert results["interrupted"] is True and results["exit_status"] == 2
    assert [r["claim"] for r in results["records"]] == ["S4.2"]
    assert "KeyboardInterrupt" in done.stdout, said
    assert done.returncode == -signal.SIGTERM, said


def test_the_untrained_twin_of_an_existing_folder_is_a_valid_model(tmp_path):
    from fixtures.option_checks import check_model
    from tests.builders import save_hf_folder

    folder = save_hf_folder(tmp_path / "mine", arch="gpt2")
    assert check_model(f"{folder}:untrained") == f"{folder}:untrained"
