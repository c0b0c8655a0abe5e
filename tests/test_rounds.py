"""Sequential claim tests (fixtures/rounds.py): more prompts in rounds while undecided, 1 − 0.05/K at every look."""

import json
import textwrap
from pathlib import Path

import pytest

from fixtures.prompts import prompt_batch
from fixtures.rounds import Rounds
from tests.conftest import ByteTokenizer
from tests.helpers import pytest_inprocess as pytest_run

# Synthetic sequential claim tests: each look's interval is set by the look's scale (1, 2, 4), as a real
# statistic's narrows with more prompts; the level comes from the library's bootstrap, to show it is the split one.
CASES = textwrap.dedent('''
    import numpy as np
    import pytest
    from latent_instruments.stats import Estimate, bootstrap
    from reports.checks import Check

    HALF_WIDTH = {1: 0.2, 2: 0.1, 4: 0.05}  # shrinks with the sample
    CASES = {  # case -> (claim value, control value) at each scale
        "decided-at-second-look": ({1: 0.15, 2: 0.15, 4: 0.15}, {1: 1, 2: 1, 4: 1}),
        "never-decided": ({1: 0.01, 2: 0.01, 4: 0.01}, {1: 1, 2: 1, 4: 1}),
        "fails-at-first-look": ({1: -1, 2: -1, 4: -1}, {1: 1, 2: 1, 4: 1}),
        "control-straddles-then-clears": ({1: 1, 2: 1, 4: 1}, {1: 0.15, 2: 0.15, 4: 0.15}),
        "control-always-straddles": ({1: 1, 2: 1, 4: 1}, {1: 0.01, 2: 0.01, 4: 0.01}),
        "control-fails-decisively": ({1: 1, 2: 1, 4: 1}, {1: -1, 2: -1, 4: -1}),
        "forgets-sample-scale": ({1: 0.01, 2: 0.01, 4: 0.01}, {1: 1, 2: 1, 4: 1}),  # draws 32 prompts at every look
    }
    SEEN = []  # the scales each look's fixture was built at

    @pytest.fixture
    def per_look(sample_scale):
        SEEN.append(sample_scale)
        return sample_scale

    def check(value, scale, role="claim", n=None):
        level = bootstrap(np.arange(16.0), lambda u: float(u.mean()), seed=0).confidence
        half = HALF_WIDTH[scale]
        return Check.of("statistic", Estimate(value, value - half, value + half, level, n or 32 * scale), "unit", ">",
                        0.0, "derivation", role=role)

    @pytest.mark.claim("S4.1", version=1, sample="prompts")
    @pytest.mark.models("reference")
    @pytest.mark.parametrize("case", list(CASES))
    def test_sequential(model_name, case, per_look, claim):
        claim_value, control_value = CASES[case]
        n = 32 if case == "forgets-sample-scale" else None
        claim.record([check(claim_value[per_look], per_look, n=n), check(control_value[per_look], per_look, "control")],
                     details={"fixture built at": {"scales": {"so far": str(SEEN)}}})

    @pytest.mark.claim("S4.1", version=1)
    @pytest.mark.models("reference")
    def test_fixed(model_name, sample_scale, claim):
        claim.record([check(0.01, sample_scale)])
''')


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("rounds-cases")
    (folder / "test_cases.py").write_text(CASES)
    return folder


def run_cases(folder: Path, *extra: str) -> tuple[object, dict]:
    done = pytest_run("test_cases.py", "--model", "ref-gpt2-small", "--report-dir", "reports", "-p", "no:cacheprovider",
                      "-q", *extra, cwd=folder)
    results = json.loads((folder / "reports" / "latest" / "results.json").read_text())
    return done, {r["params"].get("case", "fixed"): r for r in results["records"]}


@pytest.fixture(scope="module")
def serial(cases) -> tuple[object, dict]:
    """The synthetic cases run once, serially (the outcomes' test and the xdist comparison read the same run)."""
    return run_cases(cases)


def test_the_default_cap_gives_three_looks_a_bootstrap_can_decide_from():
    """Below 16 prompts (``MIN_BOOTSTRAP_UNITS``) a bootstrap decides nothing, so the looks go on to the first size
    of at least 16 and twice more: S0's 8 × 2048 looks up to 64 × 2048, where S0.6 on ref-opt-125m is decided."""
    from fixtures.option_checks import check_max_prompts, default_max_prompts

    assert {n: default_max_prompts(n) for n in (2, 8, 12, 16, 32, 64)} == {2: 64, 8: 64, 12: 96, 16: 64, 32: 128,
                                                                          64: 256}
    assert Rounds(8, check_max_prompts(None, 8)).scales == (1, 2, 4, 8)
    assert check_max_prompts(None, 32) == 128 and check_max_prompts(32, 8) == 32  # the user's cap stays theirs


def test_rounds_double_the_prompts_up_to_the_cap_and_split_alpha_over_the_looks():
    assert Rounds(32, 128).scales == (1, 2, 4) and Rounds(32, 128).confidence == pytest.approx(1 - 0.05 / 3)
    assert Rounds(32, 100).scales == (1, 2)  # 128 would pass the cap
    assert Rounds(32, 32).scales == (1,) and Rounds(32, 32).confidence == pytest.approx(0.95)
    assert "32 → 64 → 128 prompts" in Rounds(32, 128).describe() and "Bonferroni" in Rounds(32, 128).describe()


def test_a_larger_prompt_batch_holds_the_smaller_ones_windows():
    """Later looks add prompts to the first look's, so the looks are one growing sample."""
    from models.corpus import load_corpus

    corpus = load_corpus(None)
    small, large = (prompt_batch(corpus, ByteTokenizer(), n, 16, seed=0).ids for n in (32, 64))
    rows = {tuple(r.tolist()) for r in large}
    assert all(tuple(r.tolist()) in rows for r in small) and len(rows) == 64


def test_sequential_claims_look_again_until_decided_and_record_every_look(serial):
    done, records = serial
    outcomes = {case: r["outcome"] for case, r in records.items()}
    assert outcomes == {
        "decided-at-second-look": "holds",  # 0.15 ± 0.2 straddles 0; ± 0.1 clears it
        "never-decided": "inconclusive",  # still straddling at the cap: inconclusive, not a failure
        "fails-at-first-look": "fails",  # decided at once: no further look
        "control-straddles-then-clears": "holds",  # a straddling control is measured again too
        "control-always-straddles": "inconclusive",  # still straddling at the cap: control undecided, not failed
        "control-fails-decisively": "control failed",  # its whole interval on the failing side: no further look
        "forgets-sample-scale": "error",  # its second look measured the first look's 32 prompts again
        "fixed": "inconclusive",  # not sequential: one look, 95 %
    }, done.stdout[-3000:]
    assert "look 2 measured 32 prompts in its claim checks, no more than the look before (32)" in (
        records["forgets-sample-scale"]["message"])
    looks = {case: [(look["scale"], look["prompts"], look["outcome"]) for look in r["looks"]]
             for case, r in records.items()}
    assert looks["decided-at-second-look"] == [(1, 32, "inconclusive"), (2, 64, "holds")]
    assert looks["never-decided"] == [(1, 32, "inconclusive"), (2, 64, "inconclusive"), (4, 128, "inconclusive")]
    assert looks["fails-at-first-look"] == [(1, 32, "fails")]
    assert looks["control-straddles-then-clears"] == [(1, 32, "inconclusive"), (2, 64, "holds")]
    assert len(looks["control-always-straddles"]) == 3 and looks["fixed"] == []
    assert looks["control-fails-decisively"] == [(1, 32, "control failed")]
    assert "control undecided" in records["control-always-straddles"]["message"]
    level = 1 - 0.05 / 3
    assert all(c["confidence"] == pytest.approx(level) for case, r in records.items() if case != "fixed"
               for c in r["checks"])
    assert records["fixed"]["checks"][0]["confidence"] == pytest.approx(0.95)
    assert records["decided-at-second-look"]["checks"][0]["n"] == 64  # the record's checks are the last look's
    # each look's function-scoped fixtures are built anew, at its own scale
    assert records["never-decided"]["details"]["fixture built at"]["scales"]["so far"].endswith("1, 2, 4]")
    assert ("look 3 of 3: 4× the first look's sample, 128 prompts in its claim checks, 98.3% intervals; "
            "--max-prompts 128 caps the looks at 4× --prompts' 32") in records["never-decided"]["message"]
    assert "3 failed, 2 passed, 3 skipped" in done.stdout  # one report per test, whatever its looks


def test_max_prompts_at_the_first_looks_size_gives_one_look_at_95_percent(cases, tmp_path):
    done = pytest_run("test_cases.py", "--model", "ref-gpt2-small", "-k", "never", "--max-prompts", "32",
                      "--report-dir", str(tmp_path), "-p", "no:cacheprovider", "-q", cwd=cases)
    record, = json.loads((tmp_path / "latest" / "results.json").read_text())["records"]
    assert [look["scale"] for look in record["looks"]] == [1], done.stdout[-2000:]
    assert record["checks"][0]["confidence"] == pytest.approx(0.95)
    assert "--max-prompts 32" in json.loads((tmp_path / "latest" / "results.json").read_text())["replay"]


@pytest.mark.subprocess
@pytest.mark.nightly  # a serial and an -n 2 run compared: an equality run, nightly (issue 57)
def test_xdist_gives_the_serial_looks(cases, serial):
    """Under ``-n 2`` the looks equal the serial run's (xdist's workers are processes)."""
    _, serial_records = serial
    done, parallel = run_cases(cases, "-n", "2")
    assert "bringing up nodes" in done.stdout, done.stdout[-2000:]
    # SEEN is per process, and wall times are the machine's
    strip = lambda records: {k: {**r, "details": {}, "wall_seconds": None} for k, r in records.items()}  # noqa: E731
    assert strip(parallel) == strip(serial_records)


INTERRUPTED = textwrap.dedent('''
    import pytest
    from latent_instruments.stats import Estimate
    from reports.checks import Check

    @pytest.mark.claim("S4.1", version=1, sample="prompts")
    @pytest.mark.models("reference")
    def test_interrupted(model_name, sample_scale, claim):
        if sample_scale == 2:  # Ctrl-C (or SIGTERM, which the plugin turns into it) during the second look
            raise KeyboardInterrupt
        claim.record([Check.of("statistic", Estimate(0.05, -0.05, 0.15, 0.983, 32), "unit", ">", 0.0, "d")])
''')


def test_an_interrupt_during_a_later_look_keeps_the_last_finished_looks_record(tmp_path):
    (tmp_path / "test_interrupted.py").write_text(INTERRUPTED)
    done = pytest_run("test_interrupted.py", "--model", "ref-gpt2-small", "--report-dir", "reports", "-p",
                      "no:cacheprovider", "-q", cwd=tmp_path)
    results = tmp_path / "reports" / "latest" / "results.json"
    assert results.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    doc = json.loads(results.read_text())
    assert doc["interrupted"] is True and done.returncode == 2
    [record] = doc["records"]
    assert record["outcome"] == "inconclusive" and record["interrupted"] is True
    assert [look["scale"] for look in record["looks"]] == [1] and record["checks"][0]["n"] == 32
    assert "interrupted during look 2: this is look 1's record" in record["message"]


SHORT_CORPUS = textwrap.dedent('''
    import pytest
    from fixtures.prompts import TooFewWindows
    from latent_instruments.stats import Estimate
    from reports.checks import Check

    MESSAGE = "validation split has 42 windows of 4096 tokens that are text, need 128; use a corpus with more prose"

    @pytest.fixture
    def batch(sample_scale, request):
        if request.node.callspec.params["where"] == "setup" and sample_scale == 4:
            raise TooFewWindows(MESSAGE)
        return 32 * sample_scale

    @pytest.mark.claim("S4.1", version=1, sample="prompts")
    @pytest.mark.models("reference")
    @pytest.mark.parametrize("where", ["setup", "call", "first look"])
    def test_short(model_name, where, batch, sample_scale, claim):
        if (where == "call" and sample_scale == 4) or where == "first look":
            raise TooFewWindows(MESSAGE)
        claim.record([Check.of("statistic", Estimate(0.05, -0.05, 0.15, 0.99, batch), "unit", ">", 0.0, "d")])
''')


def test_a_look_the_corpus_cannot_give_ends_the_looks_at_the_look_before(tmp_path):
    """S0 at 8 × 2048 may look up to 64 × 2048 (``default_max_prompts``), which a model's tokens may not fill: the
    looks end at the last batch the corpus gives, inconclusive and saying why, not in an error; a first look
    the corpus cannot give is an error."""
    (tmp_path / "test_short.py").write_text(SHORT_CORPUS)
    done = pytest_run("test_short.py", "--model", "ref-gpt2-small", "--report-dir", "reports", "-p",
                      "no:cacheprovider", "-q", "-rA", cwd=tmp_path)
    results = tmp_path / "reports" / "latest" / "results.json"
    assert results.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    records = {r["params"]["where"]: r for r in json.loads(results.read_text())["records"]}
    for where in ("setup", "call"):
        record = records[where]
        assert record["outcome"] == "inconclusive", (where, record["message"])
        assert [(look["scale"], look["prompts"]) for look in record["looks"]] == [(1, 32), (2, 64)]
        assert record["checks"][0]["n"] == 64 and not record.get("interrupted")
        assert ("the looks ended at look 2: look 3's batch could not be drawn, validation split has 42 windows of "
                "4096 tokens") in record["message"], record["message"]
    assert records["first look"]["outcome"] == "error" and "42 windows" in records["first look"]["message"]
    assert "1 error" in done.stdout or "1 failed" in done.stdout, done.stdout[-2000:]


def test_an_unknown_sample_is_a_usage_error_naming_the_test(tmp_path):
    (tmp_path / "test_bad.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.mark.claim("S4.1", version=1, sample="seeds")
        @pytest.mark.models("reference")
        def test_bad(model_name, claim):
            pass
    '''))
    done = pytest_run("test_bad.py", "--model", "ref-gpt2-small", "-p", "no:cacheprovider", cwd=tmp_path)
    said = done.stderr + done.stdout
    assert done.returncode == 4 and "sample='seeds'" in said and "test_bad" in said


def test_an_unconverged_record_takes_no_further_look_and_an_undecided_one_does():
    """More prompts cannot settle a failure that more descent steps removed (``ClaimRecord.unconverged``): the
    sequential test stops there; an interval that contains its threshold looks again."""
    from fixtures.rounds import _another_look
    from fixtures.stash import RECORD_KEY
    from reports.checks import Check, ClaimRecord

    class Item:
        def __init__(self, record):
            self.stash = {RECORD_KEY: record}

    failing = Check("claim", -0.5, -0.6, -0.4, "x", ">", 0.0, "d")
    removed = Check("claim, after 5N", 0.3, 0.2, 0.4, "x", "<", 0.0, "d", role="control", convergence=True)
    straddling = Check("claim", 0.05, -0.05, 0.15, "x", ">", 0.0, "d")
    assert not _another_look(Item(ClaimRecord("S3.11", 8, "m", "t", {}, [failing, removed], outcome="inconclusive")),
                             last=False)
    assert _another_look(Item(ClaimRecord("S3.11", 8, "m", "t", {}, [straddling], outcome="inconclusive")), last=False)
