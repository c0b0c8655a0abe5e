"""The pytest plugin seen from the command line: options, markers, outcomes, the ledger, xdist, the report.

Whole pytest runs (the synthetic cases, the claims tree) run in this process (``tests.helpers.pytest_inprocess``):
each its own config, session and exit status, the plugin loaded as a user's pytest loads it (``-p conftest``). The
tests marked ``subprocess`` start another process, each saying why: the xdist runs (workers are processes), the
interrupted run's exit status, the peak-memory sum over processes and the allocator test in a fresh heap.
"""

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from fixtures.ledger import load_ledger
from tests.builders import CASES
from tests.helpers import child, collected, node_ids, pytest_child, pytest_inprocess, spawn

REPO = Path(__file__).resolve().parent.parent


def pytest_run(*args: str, cwd: Path = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    """pytest in this process (``tests.helpers.pytest_inprocess``)."""
    return pytest_inprocess(*args, cwd=cwd, env=env)




def ledger_for(fingerprint: str, variants: list[str], version: int = 1, extra: str = "") -> str:
    return "".join(f'[[expected]]\nclaim = "S4.1"\nversion = {version}\nmodel = "ref-gpt2-small"\nfingerprint = "{fingerprint}"\n'
                   f'variant = "{v}"\nwhy = "synthetic"\nwould_change = "nothing"\n{extra}\n' for v in variants)


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    """A folder with the synthetic claim tests and a ledger listing the 'listed-*' cases (the plugin comes by -p)."""
    from models.corpus import load_corpus
    from models.zoo import fingerprint, resolve

    folder = tmp_path_factory.mktemp("plugin-cases")
    (folder / "test_cases.py").write_text(CASES)
    mark = fingerprint(resolve("ref-gpt2-small"), load_corpus(None), 0)
    (folder / "ledger.toml").write_text(ledger_for(mark, ["listed-fails", "listed-holds", "listed-crash", "listed-control",
                                                          "listed-straddles", "listed-unconverged"]))
    return folder


def run_cases(folder: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    done = pytest_run("test_cases.py", "--model", "ref-gpt2-small", "--ledger", "ledger.toml", "--report-dir", "reports",
                      "-p", "no:cacheprovider", "-q", *extra, cwd=folder)
    results = json.loads((folder / "reports" / "latest" / "results.json").read_text())
    return done, {r["params"]["case"]: r for r in results["records"]}


@pytest.fixture(scope="module")
def serial(cases) -> tuple[object, dict]:
    """The synthetic cases run once, serially (the outcomes' test and the xdist comparison read the same run)."""
    return run_cases(cases)


def test_every_outcome_and_only_the_claims_own_failure_is_absorbed_by_the_ledger(serial):
    done, records = serial
    outcomes = {case: r["outcome"] for case, r in records.items()}
    assert outcomes == {
        "holds": "holds",
        "fails": "fails",
        "listed-fails": "fails as expected",
        "listed-holds": "holds unexpectedly",  # a ledger entry that starts holding is red
        "listed-crash": "error",  # a crash on a ledger-listed instance is an error, not "fails as expected"
        "listed-control": "control failed",  # a failed control is red, ledger or not
        "not-informative": "not informative",
        "nan": "error",
        "straddles": "inconclusive",  # 0.05 [-0.05, 0.15] against > 0: undecided, not a failure
        "listed-straddles": "inconclusive",  # the ledger's xfail does not absorb it, and it is not red
        "straddling-control": "inconclusive",  # a control whose interval contains its threshold decides nothing
        "straddling-control-claim-fails": "inconclusive",  # nor does the claim check it was to make trustworthy
        "listed-unconverged": "inconclusive",  # a failure a longer descent removes: not absorbed, not red
    }, done.stdout[-3000:]
    assert done.returncode == 1
    assert "5 failed, 1 passed, 6 skipped, 1 xfailed" in done.stdout
    assert "unconverged" in records["listed-unconverged"]["message"]
    for case in ("straddling-control", "straddling-control-claim-fails"):
        assert "control undecided" in records[case]["message"]
        assert [c["status"] for c in records[case]["checks"] if c["role"] == "control"] == ["inconclusive"]
    assert [c["status"] for c in records["listed-control"]["checks"] if c["role"] == "control"] == ["failed"]
    check = records["straddles"]["checks"][0]
    assert check["status"] == "inconclusive" and check["sample_factor"] == pytest.approx(4.0)  # (0.1 / 0.05)²
    assert "about 4× the sample would decide it" in records["straddles"]["message"]
    assert records["fails"]["checks"][0]["status"] == "failed" and records["fails"]["checks"][0]["sample_factor"] is None
    assert "same device" in records["listed-crash"]["message"]
    assert "latent-claims outcomes" in done.stdout and "holds unexpectedly" in done.stdout


def test_inconclusive_fail_makes_an_inconclusive_claim_red(cases, tmp_path):
    done = pytest_run("test_cases.py", "--model", "ref-gpt2-small", "-k", "straddles and not listed", "--inconclusive",
                      "fail", "--report-dir", str(tmp_path), "-p", "no:cacheprovider", "-q", cwd=cases)
    records = json.loads((tmp_path / "latest" / "results.json").read_text())["records"]
    assert [r["outcome"] for r in records] == ["inconclusive"] and done.returncode == 1, done.stdout[-2000:]
    assert "1 failed" in done.stdout and "--inconclusive fail" in json.loads(
        (tmp_path / "latest" / "results.json").read_text())["replay"]


@pytest.mark.subprocess
@pytest.mark.nightly  # a serial and an -n 2 run compared: an equality run, nightly (issue 57)
def test_xdist_gives_the_serial_records(cases, serial):
    """Under ``-n 2`` the records equal the serial run's (xdist's workers are processes)."""
    _, serial_records = serial
    done, parallel = run_cases(cases, "-n", "2")
    assert "bringing up nodes" in done.stdout, done.stdout[-2000:]
    timed = [r["wall_seconds"] for r in [*serial_records.values(), *parallel.values()]]
    assert all(isinstance(t, float) and t >= 0 for t in timed)  # every record says how long its test took
    untimed = lambda records: {k: {**r, "wall_seconds": None} for k, r in records.items()}  # noqa: E731
    assert untimed(parallel) == untimed(serial_records)


def test_a_ledger_entry_with_the_retired_unstable_key_is_a_usage_error_saying_what_to_do(cases, tmp_path):
    """The ledger lists findings only: an entry that allowed either verdict is refused at startup."""
    from models.corpus import load_corpus
    from models.zoo import fingerprint, resolve

    mark = fingerprint(resolve("ref-gpt2-small"), load_corpus(None), 0)
    (cases / "unstable-ledger.toml").write_text(ledger_for(mark, ["listed-fails"], extra="unstable = true\n"))
    done = pytest_run("test_cases.py", "--model", "ref-gpt2-small", "--ledger", "unstable-ledger.toml",
                      "--report-dir", str(tmp_path), "-p", "no:cacheprovider", "-q", cwd=cases)
    assert done.returncode == 4 and "unstable" in done.stderr and "decisively" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "latest").exists()


LOADED = textwrap.dedent('''
    import pytest
    from latent_instruments.stats import Estimate
    from reports.checks import Check

    @pytest.mark.claim("S4.1", version=1)
    @pytest.mark.models("reference")
    @pytest.mark.parametrize("case", ["listed-fails"])
    def test_loaded(model_name, case, subject, claim):
        claim.record([Check.of("statistic", Estimate(-1.0, -1.1, -0.9, 0.95, 8), "unit", ">", 0.0, "derivation")])
''')


def test_a_ledger_entry_measured_on_other_weights_still_applies_and_says_so(tmp_path):
    from models.corpus import load_corpus
    from models.zoo import fingerprint, resolve

    mark = fingerprint(resolve("ref-gpt2-small"), load_corpus(None), 0)
    (tmp_path / "test_loaded.py").write_text(LOADED)
    (tmp_path / "ledger.toml").write_text(ledger_for(mark, ["listed-fails"], extra=f'weights_sha256 = "{"0" * 64}"\n'))
    done = pytest_run("test_loaded.py", "--model", "ref-gpt2-small", "--ledger", "ledger.toml", "--report-dir",
                      "reports", "-p", "no:cacheprovider", "-q", cwd=tmp_path)
    results = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())
    [record] = results["records"]
    assert record["outcome"] == "fails as expected" and record["ledger_weights_sha256"] == "0" * 64, done.stdout[-2000:]
    assert record["ledger_build"] == "another build" and len(results["models"]["ref-gpt2-small"]["weights_sha256"]) == 64
    assert "ledger measured on another build" in (tmp_path / "reports" / "latest" / "report.md").read_text()


def test_a_ledger_entry_of_another_build_of_the_model_does_not_apply(cases, tmp_path):
    (cases / "other-ledger.toml").write_text(ledger_for("gpt2-small-0000000000000000:seed0", ["listed-fails"]))
    done = pytest_run("test_cases.py", "--model", "ref-gpt2-small", "--ledger", "other-ledger.toml", "-k", "listed-fails",
                      "--report-dir", str(tmp_path), "-p", "no:cacheprovider", "-q", cwd=cases)
    assert "does not apply" in done.stdout and "1 failed" in done.stdout


def test_a_ledger_entry_of_another_procedure_version_does_not_apply(cases, tmp_path):
    """A finding measured with version 2 of a procedure says nothing about version 1's: measure again."""
    from models.corpus import load_corpus
    from models.zoo import fingerprint, resolve

    print_ = fingerprint(resolve("ref-gpt2-small"), load_corpus(), 0)
    (cases / "version-ledger.toml").write_text(ledger_for(print_, ["listed-fails"], version=2))
    done = pytest_run("test_cases.py", "--model", "ref-gpt2-small", "--ledger", "version-ledger.toml", "-k",
                      "listed-fails", "--report-dir", str(tmp_path), "-p", "no:cacheprovider", "-q", cwd=cases)
    assert "procedure version 2" in done.stdout and "1 failed" in done.stdout


@pytest.mark.parametrize("marker, message", [
    ('@pytest.mark.claim("S9.9", version=1)', "not in claims/catalogue.toml"),
    ('@pytest.mark.claim("S4.1")', "version=N"),
    ('@pytest.mark.models("trianed")', "unknown roles ['trianed']"),
])
def test_a_bad_marker_is_a_collection_error_naming_it(cases, tmp_path, marker, message):
    claim = "" if "claim" in marker else '@pytest.mark.claim("S4.1", version=1)\n'
    models = "" if "models" in marker else '@pytest.mark.models("reference")\n'
    (cases / "test_bad.py").write_text(f"import pytest\n\n{claim}{models}{marker}\ndef test_x(model_name, claim):\n    pass\n")
    try:
        done = pytest_run("test_bad.py", "--collect-only", "-p", "no:cacheprovider", cwd=cases)
    finally:
        (cases / "test_bad.py").unlink()
    assert done.returncode != 0 and message in done.stdout + done.stderr


def test_unknown_model_fails_at_collection_with_the_valid_names():
    done = pytest_run("claims", "--model", "gpt-9000", "--collect-only", "-q")
    assert done.returncode == 4
    assert "unknown model 'gpt-9000'" in done.stderr and "tiny-w128" in done.stderr


def test_header_makes_the_run_replayable():
    done = pytest_run("claims", "-m", "gpu", "--collect-only", "--seed", "7", "--zoo", "tiny", "-p", "no:cacheprovider")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "seed=7" in done.stdout and "source-scale=off" in done.stdout
    assert ("replay: pytest claims -m gpu --zoo tiny --device cpu --prompts 32x128 --max-prompts 128 --source-scale off "
            "--dtype float32 --seed 7") in done.stdout
    assert "sequential claims (sample='prompts'): looks at 32 → 64 → 128 prompts" in done.stdout


def test_the_replay_keeps_the_selection():
    done = pytest_run("claims/s4_ffn", "-m", "gpu and not slow", "-k", "ffn", "--claim", "S4.2", "--shard", "tiny-w96",
                      "--collect-only", "--zoo", "tiny", "-p", "no:cacheprovider")
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("replay: pytest claims/s4_ffn -m 'gpu and not slow' -k ffn --claim S4.2 --zoo tiny --device cpu "
            "--prompts 32x128 --max-prompts 128 --source-scale off --dtype float32 --seed 0 --shard tiny-w96") in done.stdout


def test_a_shard_must_be_a_subject_of_the_zoo_and_is_not_a_model():
    done = pytest_run("claims", "--shard", "tiny-w97", "--collect-only", "--zoo", "tiny")
    assert done.returncode == 4 and "--shard tiny-w97: not a subject of the tiny zoo" in done.stderr
    assert "tiny-bpe-w96:untrained" in done.stderr and "--list-shards" in done.stderr
    done = pytest_run("claims", "--shard", "tiny-w96", "--model", "tiny-w96", "--collect-only", "--zoo", "tiny")
    assert done.returncode == 4 and "leave out one of them" in done.stderr


def test_source_scale_variants_are_skipped_on_a_cpu_unless_asked_for(tmp_path):
    (tmp_path / "test_scale.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.mark.source_scale
        def test_wide(settings):
            assert settings.source_scale
    '''))
    args = ("test_scale.py", "--device", "cpu", "--report-dir", "reports", "-p", "no:cacheprovider", "-rs")
    off, on = pytest_run(*args, cwd=tmp_path), pytest_run(*args, "--source-scale", "on", cwd=tmp_path)
    assert "1 skipped" in off.stdout and "runs with --source-scale on" in off.stdout, off.stdout + off.stderr
    assert "1 passed" in on.stdout and "source-scale=on" in on.stdout, on.stdout + on.stderr


def test_default_tiny_zoo_collects_the_four_claims_over_their_models():
    """Reads the session's one whole collection (``tests.helpers.collected``), made once for every module."""
    ids = node_ids(collected())  # the session's one whole collection (tests.helpers)
    assert any("test_power_law_straightens_with_depth[tiny-w128]" in i for i in ids)
    assert any("test_ffn_output_dominates_each_block[tiny-w96]" in i for i in ids)
    assert any("test_wider_models_invert_better[tiny-ladder-restricted]" in i for i in ids)
    assert any("test_final_norm_removes_scale[ref-llama-small]" in i for i in ids)


def test_the_ledger_file_parses_and_every_entry_names_the_weights_it_was_measured_on():
    ledger = load_ledger().values()
    assert all(e.why and e.would_change and e.fingerprint for e in ledger)
    # without a digest: a group subject only (its members' digests are in results.json); the seed-0 reference of
    # S3.9's source-widths entry, measured on a GPU, is the CPU-drawn init every machine builds
    assert {(e.claim, e.model, e.variant) for e in ledger if not e.weights_sha256} == {("S4.10", "tiny-siblings", "")}


@pytest.mark.parametrize(
    "content, message",
    [("[[expected]]\nclaim = 'S0.3'\n", "malformed"),
     ("[[expected]]\nclaim='S0.3'\nversion=1\nmodel='m'\nfingerprint='f'\nwhy='w'\nwould_change='c'\n" * 2, "repeats"),
     ("[[expected]]\nclaim='S0.3'\nmodel='m'\nfingerprint='f'\nwhy='w'\nwould_change='c'\n", "needs version"),
     ("[[expected]]\nclaim='S0.3'\nversion=1\nmodel='m'\nfingerprint='f'\nwhy='w'\nwould_change='c'\nunstable='yes'\n",
      "no longer takes"),
     ("[[expected]]\nclaim='S0.3'\nversion=1\nmodel='m'\nfingerprint='f'\nwhy='w'\nwould_change='c'\n"
      "weights_sha256='abc'\n", "64 hex digits"),
     ("[[expected]\nclaim = 'S0.3'\n", "ledger.toml: not valid TOML")],
)
def test_a_broken_ledger_is_named(tmp_path, content, message):
    path = tmp_path / "ledger.toml"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_ledger(path)


def test_a_ledger_entry_that_can_match_nothing_is_named():
    from fixtures.ledger import Expectation, unknown_entries

    def entry(claim: str, model: str, test: str = "") -> tuple:
        return (claim, model, "", test), Expectation(claim, model, "f", "w", "c", test=test, version=1)

    ledger = dict([entry("S9.9", "tiny-w96"), entry("S4.1", "tiny-w97"), entry("S4.1", "tiny-w96", "test_nope"),
                   entry("S4.1", "tiny-w96:untrained", "test_ffn"), entry("S4.2", "tiny-w96", "test_elsewhere"),
                   entry("S4.1", "/no/such/folder")])
    problems = unknown_entries(ledger, {"S4.1", "S4.2"}, {"test_ffn", "test_elsewhere"})
    assert problems == ["ledger entry S9.9 on tiny-w96: no claim 'S9.9' in claims/catalogue.toml",
                        "ledger entry S4.1 on tiny-w97: no model 'tiny-w97' (a zoo name, NAME:untrained, a group, "
                        "hf:ID or a folder)",
                        "ledger entry S4.1 on tiny-w96 (test_nope): no test function 'test_nope' in claims/"]
    from fixtures.ledger import claim_test_functions

    defined = claim_test_functions()  # the suite's own: every test the default ledger names is one of them
    assert {"test_ffn_holds_most_parameters", "test_wide_untrained_layers_identify_a_masked_token"} <= defined
    assert unknown_entries(load_ledger(), {e.claim for e in load_ledger().values()}, defined) == []


def test_a_ledger_that_names_an_unknown_claim_is_a_usage_error(cases, tmp_path):
    ledger = tmp_path / "ledger.toml"
    ledger.write_text(ledger_for("f", ["x"]).replace('claim = "S4.1"', 'claim = "S4.11"'))
    done = pytest_run("test_cases.py", "--model", "ref-gpt2-small", "--ledger", str(ledger), "--report-dir",
                      str(tmp_path / "reports"), "-p", "no:cacheprovider", "-q", cwd=cases)
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"--ledger {ledger}: 1 entries match nothing" in done.stderr and "no claim 'S4.11'" in done.stderr


def test_claims_run_on_a_local_hf_folder(tmp_path):
    """`pytest claims -m gpu --model FOLDER` runs the applicable claims on it and writes the report: one claim of
    each family (the fewest that show every family's fixtures handling a folder; the whole suite took 437 s)."""
    from tests.builders import save_hf_folder

    folder = save_hf_folder(tmp_path / "my-gpt2", arch="gpt2")
    one_per_family = [f"--claim={c}" for c in ("S0.3", "S1.1", "S2.1", "S3.6", "S4.2", "S4.5")]
    done = pytest_run("claims", "-m", "gpu", *one_per_family, "--model", str(folder),
                      "--report-dir", str(tmp_path / "reports"),
                      "--junitxml", str(tmp_path / "junit.xml"), "-p", "no:cacheprovider", "-q", "-rs")
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]  # a random model may fail claims
    results = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())
    assert {r["claim"] for r in results["records"]} == {"S0.3", "S1.1", "S2.1", "S3.6", "S4.2", "S4.5"}  # every family
    assert {r["model"] for r in results["records"]} == {str(folder)}
    assert not [r["test"] for r in results["records"] if r["outcome"] == "error"]  # each family handles a folder
    assert results["models"][str(folder)]["role"] == "hf"
    assert results["models"][str(folder)]["residual_identity"]["passed"] is True
    assert '<property name="claim_record"' in (tmp_path / "junit.xml").read_text()


@pytest.mark.subprocess
def test_an_interrupted_run_still_writes_what_it_measured(tmp_path):
    """Ctrl-C after the first claim test: the report exists, says so, and holds that test's record. A child process:
    the interrupt and the exit status 2 are the process's."""
    (tmp_path / "interrupt_after_first.py").write_text(
        "def pytest_runtest_teardown(item, nextitem):\n    raise KeyboardInterrupt\n"
    )
    done = pytest_child("claims/s4_ffn/test_feedforward.py", "-m", "gpu", "--model", "tiny-w96",
                        "--report-dir", str(tmp_path / "reports"), "-p", "interrupt_after_first", "-p", "no:cacheprovider",
                      "-q", env={"PYTHONPATH": f"{REPO}:{tmp_path}"})
    assert done.returncode == 2, done.stdout[-2000:]
    results = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())
    assert results["interrupted"] is True
    assert [r["claim"] for r in results["records"]] == ["S4.2"]


def test_only_the_instruments_are_installed_into_site_packages():
    """`pip install -e .` must not put generic top-level names (models, fixtures, reports) into site-packages."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert config["tool"]["setuptools"]["packages"] == ["latent_instruments"]
    assert config["tool"]["pytest"]["ini_options"]["pythonpath"] == ["."]  # tests find the rest from the root


@pytest.mark.parametrize("selection", [("-k", "S4.2"), ("--claim", "S4.2")])
def test_a_claim_is_selected_by_its_id(selection):
    done = pytest_run("claims", "-m", "gpu", "--collect-only", "-q", "--zoo", "tiny", "-p", "no:cacheprovider", *selection)
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert ids and all("test_ffn_output_dominates_each_block" in i for i in ids), done.stdout[-2000:]


def test_claim_selection_is_exact_where_k_matches_substrings():
    done = pytest_run("--collect-only", "-q", "-p", "no:cacheprovider", "--claim", "S4.5", "--claim", "S3.5")
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert {i.split("::")[1].split("[")[0] for i in ids} == {
        "test_final_norm_removes_scale", "test_wider_models_invert_better"}
    assert "not in claims/catalogue.toml" in pytest_run("--collect-only", "--claim", "S4.99").stderr


CRASH = textwrap.dedent('''
    import os
    import signal

    import pytest
    from latent_instruments.stats import Estimate
    from reports.checks import Check

    @pytest.mark.claim("S4.1", version=3)
    @pytest.mark.models("reference")
    @pytest.mark.parametrize("case", ["dies", "holds"])
    def test_worker(model_name, case, claim):
        if case == "dies" and os.environ.get("PYTEST_XDIST_WORKER"):
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer would
        claim.record([Check.of("statistic", Estimate(1.0, 0.9, 1.1, 0.95, 8), "unit", ">", 0.0, "derivation")])
''')


@pytest.mark.subprocess
def test_a_killed_xdist_worker_leaves_an_error_record_naming_the_worker_and_the_signal(tmp_path):
    """A worker process killed by SIGKILL, as the out-of-memory killer would: only a process can die so."""
    (tmp_path / "test_crash.py").write_text(CRASH)
    done = pytest_run("test_crash.py", "--model", "ref-gpt2-small", "-n", "2", "--report-dir", "reports",
                      "-p", "no:cacheprovider", "-q", cwd=tmp_path)
    records = {r["params"]["case"]: r  # the crash record names the test's parameters as the test does
               for r in json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())["records"]}
    assert set(records) == {"dies", "holds"}, done.stdout[-3000:]
    dead = records["dies"]
    assert dead["outcome"] == "error" and (dead["claim"], dead["version"], dead["model"]) == ("S4.1", 3, "ref-gpt2-small")
    assert "worker gw" in dead["message"] and "SIGKILL" in dead["message"], dead["message"]
    assert records["holds"]["outcome"] == "holds" and done.returncode == 1
    facts = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())["models"]["ref-gpt2-small"]
    assert facts["role"] == "reference" and "died (killed by SIGKILL)" in facts["error"]  # the model stays


def test_a_crashed_workers_model_keeps_its_weights_digest_from_the_controller():
    from fixtures.crashes import crashed_model_facts
    from models.corpus import load_corpus
    from models.shipped import manifest

    facts = crashed_model_facts("tiny-w96", "gw1", -9, load_corpus(None), "shipped")
    assert facts["weights_sha256"] == manifest()["tiny-w96"].weights_sha256 and facts["role"] == "trained"
    assert "gw1 died (killed by SIGKILL)" in facts["error"]


def test_a_dist_mode_other_than_the_suites_scheduler_is_a_usage_error(cases):
    done = pytest_run("test_cases.py", "--model", "ref-gpt2-small", "-n", "2", "--dist", "worksteal",
                      "-p", "no:cacheprovider", "-q", cwd=cases)
    assert done.returncode == 4 and "--dist worksteal" in done.stderr and "schedules by model" in done.stderr, done.stderr


@pytest.mark.subprocess
def test_the_peak_memory_is_the_sum_over_processes_alive_at_once():
    """A child holding 200 MiB while this process runs: the sampled peak counts both."""
    from fixtures.memory import PeakMemory

    memory = PeakMemory(interval=0.05)
    alone = memory.sample()
    child = spawn(["-c", "import time; b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
                   "print('ready', flush=True); time.sleep(30)"])
    try:
        assert child.stdout.readline().strip() == "ready"
        both = memory.sample()
    finally:
        child.kill()
        child.wait()
    assert both - alone > 200 * 2**20
    assert memory.peak_mib() >= both / 2**20 - 0.1 and memory.peak_mib(10**6) == 10**6


def test_two_checkpoint_folders_of_one_architecture_are_compared_through_the_baseline_map(tmp_path, monkeypatch):
    """An upgrade as users make one: the old and the new checkpoint in two folders (here two seeds of one recipe,
    saved by the trainer), run one after the other and compared through --baseline-map."""
    from dataclasses import replace

    from models.corpus import load_text_file
    from models.recipes import TINY
    from models.trainer import train

    monkeypatch.setenv("LATENT_CLAIMS_CACHE", str(tmp_path / "cache"))
    text = tmp_path / "corpus.txt"
    text.write_text("Now is the winter of our discontent\nMade glorious summer by this sun of York;\n" * 400)
    micro = replace(TINY[0], name="micro", n_layer=2, n_embd=16, n_head=2, context=32, steps=6, batch=4,
                    eval_every=3, lr_drop_step=4)
    old, new = (str(train(replace(micro, seed=seed), load_text_file(text))) for seed in (1337, 1442))
    common = ("claims", "-m", "gpu", "--claim", "S0.1", "--corpus", str(text), "--prompts", "4x32",
              "-p", "no:cacheprovider", "-q")
    env = {"LATENT_CLAIMS_CACHE": str(tmp_path / "cache")}
    first = pytest_run(*common, "--model", old, "--report-dir", str(tmp_path / "old"), env=env)
    baseline = tmp_path / "old" / "latest" / "results.json"
    assert baseline.is_file(), first.stdout[-3000:] + first.stderr[-2000:]
    pytest_run(*common, "--model", new, "--report-dir", str(tmp_path / "new"), "--baseline", str(baseline),
               "--baseline-map", f"{old}={new}", env=env)
    doc = json.loads((tmp_path / "new" / "latest" / "results.json").read_text())
    was = json.loads(baseline.read_text())["models"][old]["weights_sha256"]
    assert {r["outcome"] for r in doc["records"]} - {"error"}, [r["message"] for r in doc["records"]]
    [pair] = doc["baseline"]["models"]
    config = doc["models"][new]["config_sha256"]  # one recipe: the same config under other weights (issue 74)
    assert pair == {"old": old, "new": new, "old_weights_sha256": was,
                    "new_weights_sha256": doc["models"][new]["weights_sha256"], "same_weights": False,
                    "old_config_sha256": config, "new_config_sha256": config, "same_config": True}
    assert doc["baseline"]["new"] == [] and doc["baseline"]["missing"] == []  # every record found its pair
    assert doc["models"][new]["build"]["torch"] and doc["baseline"]["retrained_in_place"] == []


def test_a_baseline_map_naming_a_model_the_baseline_lacks_is_a_usage_error(cases, serial):
    baseline = cases / "reports" / "latest" / "results.json"
    done = pytest_run("test_cases.py", "--model", "ref-gpt2-small", "--baseline", str(baseline), "--baseline-map",
                      "ref-opt-125m=ref-gpt2-small", "-p", "no:cacheprovider", "-q", cwd=cases)
    assert done.returncode == 4 and "has no model 'ref-opt-125m'" in done.stderr and "ref-gpt2-small" in done.stderr


@pytest.mark.parametrize("pairs, run, problem", [
    (["a=c"], ("c",), ""),
    (["a=b"], ("b",), "the baseline has a model 'b' too"),  # b's own records would pair with the same ones
    (["a=c", "b=c"], ("c",), "two baseline models map to 'c'"),
    (["a=z"], ("c",), "this run has no model 'z'"),
    (["a"], ("c",), "write OLD_NAME=NEW_NAME"),
])
def test_a_baseline_map_that_would_pair_records_twice_or_with_nothing_is_refused(tmp_path, pairs, run, problem):
    from fixtures.path_checks import check_baseline_map

    baseline = tmp_path / "results.json"
    baseline.write_text(json.dumps({"records": [{"claim": "S0.1", "model": m, "test": f"t[{m}]", "outcome": "holds",
                                                 "checks": []} for m in ("a", "b")]}))
    if not problem:
        assert check_baseline_map(pairs, baseline, run) == {"a": "c"}
        return
    with pytest.raises(pytest.UsageError, match=problem):
        check_baseline_map(pairs, baseline, run)


def test_a_baseline_map_takes_the_names_the_report_shows_where_they_are_unambiguous(tmp_path):
    """Issue 65, item 7: the report and the summary name a folder by its base name; --baseline-map takes that name
    too, and refuses one that two models share."""
    from fixtures.path_checks import check_baseline_map

    baseline = tmp_path / "results.json"
    old = ["/ckpt/run1/step-1000", "/ckpt/run2/step-1000", "/ckpt/run1/step-500"]
    baseline.write_text(json.dumps({"records": [{"claim": "S0.1", "model": m, "test": f"t[{m}]", "outcome": "holds",
                                                 "checks": []} for m in old]}))
    run = ("/ckpt/run3/step-2000",)
    assert check_baseline_map(["step-500=step-2000"], baseline, run) == {"/ckpt/run1/step-500": "/ckpt/run3/step-2000"}
    with pytest.raises(pytest.UsageError, match="2 models shown as 'step-1000'.*full path"):
        check_baseline_map(["step-1000=step-2000"], baseline, run)


def test_s3_8_on_a_llama_folder_whose_word_boundary_token_fills_runs_of_spaces(tmp_path):
    """Issue 20's case: a sub-word tokenizer whose "▁" stands for a space, on a corpus with long runs of spaces,
    made prompts of one repeated token, and S3.8 ended in error. Now those windows are redrawn and counted, and
    S3.8 reaches a verdict."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from tests.conftest import tiny_model

    line = " " * 48 + "Now is the winter of our discontent made glorious summer by this sun of York\n"
    text = tmp_path / "spaced.txt"
    text.write_text(line * 900)
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="never")
    tokenizer.train_from_iterator([line] * 10, trainers.BpeTrainer(vocab_size=50, special_tokens=["[UNK]"],
                                                                    show_progress=False))
    assert len(set(tokenizer.encode(" " * 21).ids)) == 1  # a run of spaces is one repeated token
    folder = tmp_path / "my-llama"
    PreTrainedTokenizerFast(tokenizer_object=tokenizer).save_pretrained(folder)
    tiny_model("llama").save_pretrained(folder, safe_serialization=True)
    done = pytest_run("claims", "-m", "gpu", "--claim", "S3.8", "--model", str(folder), "--corpus", str(text),
                      "--prompts", "4x32", "--report-dir", str(tmp_path / "reports"), "-p", "no:cacheprovider", "-q",
                      env={"LATENT_CLAIMS_CACHE": str(tmp_path / "cache")})
    results = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())
    [record] = [r for r in results["records"] if r["claim"] == "S3.8"]
    assert record["outcome"] != "error", record.get("message", "") + done.stdout[-2000:]
    assert results["models"][str(folder)]["prompt_windows_redrawn"], results["models"][str(folder)]


CONTROL_ONLY = textwrap.dedent('''
    import pytest
    from latent_instruments.stats import Estimate
    from reports.checks import Check

    @pytest.mark.claim("S4.1", version=1)
    @pytest.mark.models("reference")
    @pytest.mark.parametrize("case", ["control-fails", "control-passes"])
    def test_control_only(model_name, case, claim):
        value = -1.0 if case == "control-fails" else 1.0
        claim.record([Check.of("descent works", Estimate(value, value - 0.1, value + 0.1, 1.0, 16, "exact binomial"),
                               "fraction", ">", 0.0, "derivation", role="control")])

    @pytest.mark.claim("S4.1", version=1, sample="prompts")
    @pytest.mark.models("reference")
    @pytest.mark.parametrize("case", ["second-look"])
    def test_control_only_at_a_later_look(model_name, case, claim, sample_scale):
        n = 16 * sample_scale  # look 1 straddles its threshold; look 2's descent fails on twice the prompts
        if sample_scale == 1:
            claim.record([Check.of("effect", Estimate(0.0, -0.1, 0.1, 0.95, n, "exact binomial"), "fraction", ">",
                                   0.0, "derivation")])
        else:
            claim.record([Check.of("descent works", Estimate(-1.0, -1.1, -0.9, 0.95, n, "exact binomial"),
                                   "fraction", ">", 0.0, "derivation", role="control")])
''')


def test_a_record_of_a_control_alone_is_red_where_it_failed_and_an_error_where_it_passed(tmp_path):
    """S3's gates (issue 43, item 4): a descent that fails where S3 says it works ends the test before the claim is
    measured, so its record holds the control alone: "control failed", never "not informative", also at a later
    look (whose sample is then the control's). A record of a passing control alone is a bug in the test (an error
    naming it)."""
    (tmp_path / "test_control_only.py").write_text(CONTROL_ONLY)
    done = pytest_run("test_control_only.py", "--model", "ref-gpt2-small", "--report-dir", "reports",
                      "-p", "no:cacheprovider", "-q", cwd=tmp_path)
    records = {r["params"]["case"]: r
               for r in json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())["records"]}
    assert records["control-fails"]["outcome"] == "control failed", done.stdout[-3000:]
    assert records["control-fails"]["headline"] is None
    assert records["control-passes"]["outcome"] == "error"
    assert "only a record whose control did not pass" in records["control-passes"]["message"]
    later = records["second-look"]  # a control alone at a later look: its prompts are the controls'
    assert later["outcome"] == "control failed", later.get("message")
    assert [look["prompts"] for look in later["looks"]] == [16, 32]
    assert "control failed" in (tmp_path / "reports" / "latest" / "report.md").read_text()


def test_the_objects_alive_before_the_first_test_are_frozen_out_of_the_garbage_collectors_scans():
    """This session went through the plugin's ``pytest_runtestloop``: the imported libraries are frozen (``gc.freeze``),
    so a full collection no longer walks them (without the freeze the count is 0)."""
    import gc

    assert gc.get_freeze_count() > 100_000, "the session's long-lived objects were not frozen before the first test"


@pytest.mark.subprocess
def test_large_blocks_freed_and_allocated_again_reuse_their_pages_inside_large_blocks_reused():
    """A 52 MB tensor (S4.9's logits on a 4,096-token vocabulary) made and freed 20 times, after 10 such: with glibc's
    defaults each one maps and faults in fresh pages (over 200,000 page faults); inside ``large_blocks_reused`` the
    heap's block is reused, with a tenth of the faults at most; after it, the defaults' faults again, for a block
    larger than the one the heap may keep (a freed 52 MB heap block can stay free in the middle of the heap and be
    reused after the setting is gone; 61 MB is above it and below the setting's 64 MB, so only the setting would
    serve it from the heap)."""
    script = textwrap.dedent('''
        import resource, sys, torch
        from fixtures.memory import large_blocks_reused

        def faults(rows=3200):
            for _ in range(10):  # glibc settles within a few
                x = torch.ones(rows, 4096)
                del x
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for _ in range(20):
                x = torch.ones(rows, 4096)
                del x
            return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

        default = faults()
        with large_blocks_reused() as took:
            reused = faults()
        print(took, default, reused, faults(rows=3900))
    ''')
    done, _ = child(["-c", script], timeout=120)
    assert done.returncode == 0, done.stderr
    took, default, reused, after = done.stdout.split()
    assert took == "True" and int(default) > 200_000 and int(reused) < int(default) / 10 < int(after), done.stdout


def test_a_run_in_this_process_leaves_this_process_as_it_found_it(cases):
    """``tests.helpers.pytest_inprocess``: the working folder, the variables it set, ``sys.path``, the torch
    generator (the plugin seeds it) and the root conftest module (pytest imports it again) are restored after the run."""
    import os
    import sys

    import torch

    def state():
        return (os.getcwd(), (os.environ.get("PYTHONPATH"), os.environ.get("LATENT_CLAIMS_PROBE")), list(sys.path),
                torch.random.get_rng_state(), sys.modules["conftest"])

    torch.manual_seed(123)
    before = state()
    pytest_run("test_cases.py", "--model", "ref-gpt2-small", "--seed", "7", "-k", "holds and not listed",
               "-p", "no:cacheprovider", "-q", cwd=cases, env={"LATENT_CLAIMS_PROBE": "1"})
    pytest_run("claims", "--collect-only", "-q", "--claim", "S4.1", "--model", "tiny-w96", "-p", "no:cacheprovider")
    after = state()
    assert after[:3] == before[:3] and torch.equal(after[3], before[3]) and after[4] is before[4]
    assert not any(name == "test_cases" for name in sys.modules)  # the folder's test module is forgotten
