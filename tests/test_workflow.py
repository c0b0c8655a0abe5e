"""The nightly workflow (.github/workflows/nightly.yml) runs only commands, targets, modules and options that exist."""

import functools
import glob
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from models.zoo import resolve

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "nightly.yml"
PYTHONS = {"python", "python3", ".venv/bin/python", "$(PY)", "$PY"}
LEADING = {"if", "!", "then", "do", "else", "time", "exec"}


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def run_scripts() -> list[str]:
    """The ``run:`` scripts of every step of every job."""
    return [step["run"] for job in workflow()["jobs"].values() for step in job.get("steps", []) if "run" in step]


def commands(script: str) -> list[list[str]]:
    """The simple commands of a shell script as words; ``${{ expr }}`` becomes the word EXPR:expr."""
    script = expressions(script)
    script = script.replace("\\\n", " ")
    lines = [re.sub(r"(^|\s)#.*$", "", line) for line in script.splitlines()]
    out = []
    for piece in re.split(r"\$\(|;|&&|\|\||\||\)|\n", "\n".join(lines)):
        try:
            words = shlex.split(piece)
        except ValueError:  # a quote split by the cut above: an echo's text, not a command of ours
            words = piece.split()
        while words and (words[0] in LEADING or re.fullmatch(r"\w+=", words[0])):
            words = words[1:]
        if words:
            out.append(words)
    return out


def expressions(text: str) -> str:
    """``${{ matrix.model }}`` as the single word ``EXPR:matrix.model``."""
    return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", lambda m: "EXPR:" + m.group(1).replace(" ", ""), text)


def all_commands() -> list[list[str]]:
    return [words for script in run_scripts() for words in commands(script)]


def python_modules() -> list[tuple[str, list[str]]]:
    """(module, arguments) of every ``python -m MODULE ...`` the workflow runs."""
    return [(words[2], words[3:]) for words in all_commands()
            if len(words) > 2 and words[0] in PYTHONS and words[1] == "-m"]


def options(args: list[str]) -> list[str]:
    return [a.split("=")[0] for a in args if a.startswith("-")]


@functools.cache
def help_text(*args: str) -> str:
    done = subprocess.run([sys.executable, *args, "--help"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (args, done.stderr[-2000:])
    return done.stdout


def offered(option: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def matrix_models() -> list[str]:
    return workflow()["jobs"]["claims"]["strategy"]["matrix"]["model"]


def step(job: str, words: str) -> dict:
    found = [s for s in workflow()["jobs"][job]["steps"] if words in s.get("run", "")]
    assert len(found) == 1, f"{job}: {len(found)} steps run {words!r}"
    return found[0]


def test_the_workflow_runs_nightly_and_on_demand():
    doc = workflow()
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads the key `on` as true
    assert triggers["schedule"][0]["cron"] and "workflow_dispatch" in triggers
    report = doc["jobs"]["report"]
    assert report["needs"] == "claims" and report["if"] == "always()"
    assert doc["jobs"]["claims"]["strategy"]["fail-fast"] is False


def test_every_make_target_is_in_the_makefile():
    targets = set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", (REPO / "Makefile").read_text(), re.M))
    used = [words[1] for words in all_commands() if words[0] == "make"]
    assert used and set(used) <= targets, (used, targets)


def test_every_python_module_exists():
    modules = python_modules()
    assert {m for m, _ in modules} == {"models", "pytest", "reports"}
    for module, _ in modules:
        assert (REPO / module / "__main__.py").is_file() or importlib.util.find_spec(module), module


@pytest.mark.parametrize("module", ["models", "reports"])
def test_every_subcommand_and_its_options_are_accepted(module):
    used = [args for m, args in python_modules() if m == module]
    assert used
    for args in used:
        sub = args[0]
        assert re.search(rf"\{{[\w,]*\b{sub}\b[\w,]*\}}", help_text("-m", module)), f"python -m {module} {sub}"
        text = help_text("-m", module, sub) if module == "reports" else help_text("-m", module)
        for option in options(args):
            assert offered(option, text), f"python -m {module} {sub} {option}"


def test_every_pytest_option_is_offered():
    used = [args for m, args in python_modules() if m == "pytest"]
    assert used
    text = help_text("-m", "pytest")
    for args in used:
        assert {"--zoo", "--model", "--report-dir", "--junit-xml", "-m"} <= set(options(args))
        for option in options(args):
            assert offered(option, text), f"pytest {option}"
        assert args[0] == "claims" and (REPO / "claims").is_dir()  # the claims, not the self-tests


def test_the_matrix_models_are_zoo_names_and_each_shard_runs_its_own():
    models = matrix_models()
    assert len(models) == len(set(models)) >= 2
    for name in models:
        resolve(name)  # raises UnknownModelError for a name the suite does not know
    words = shlex.split(expressions(step("claims", "-m pytest")["run"]).splitlines()[-1])
    assert words[words.index("--model") + 1] == "EXPR:matrix.model"
    assert words[words.index("--report-dir") + 1] == "shard"
    assert words[words.index("--junit-xml") + 1].startswith("shard/")


def test_the_claims_step_may_fail_without_stopping_the_merge_and_its_outcome_is_kept():
    claims = step("claims", "-m pytest")
    assert claims["continue-on-error"] is True and claims["id"] == "pytest"
    outcome = step("claims", "steps.pytest.outcome")
    assert outcome["if"] == "always()" and "shard/" in outcome["run"]
    last = workflow()["jobs"]["report"]["steps"][-1]
    assert last["if"] == "always()" and "needs.claims.result" in str(last.get("env")) and "exit $status" in last["run"]


def test_the_cache_key_hashes_files_that_exist():
    keys = re.findall(r"hashFiles\('([^']+)'\)", WORKFLOW.read_text())
    assert "models/recipes.py" in keys
    assert all((REPO / k).is_file() for k in keys), keys


def test_the_merge_glob_takes_each_shard_run_folder_once(tmp_path):
    """The shards as download-artifact lays them out: shards/<artifact>/<what shard/ held>."""
    merge_args = next(args for m, args in python_modules() if m == "reports")
    patterns = [a for a in merge_args[1:] if "*" in a]
    assert merge_args[0] == "merge" and len(patterns) == 1
    runs = []
    for model in matrix_models():
        shard = tmp_path / "shards" / f"shard-{model}"
        run = shard / "20261122T031500Z"
        run.mkdir(parents=True)
        (run / "results.json").write_text("{}")
        (shard / "latest").symlink_to(run.name)  # even if a shard's link came along, it is not taken
        for name in ("index.html", f"junit-{model}.xml", f"pytest-outcome-{model}.txt"):
            (shard / name).write_text("")
        runs.append(str(run.relative_to(tmp_path)))
    expanded = subprocess.run(["bash", "-c", f"printf '%s\\n' {patterns[0]}"], cwd=tmp_path, capture_output=True,
                              text=True, check=True).stdout.split()
    assert sorted(expanded) == sorted(runs) == sorted(glob.glob(patterns[0], root_dir=tmp_path))


def test_the_newest_dependencies_job_runs_the_self_tests_and_blocks_nothing():
    """Upstream breakage is reported by a job of its own: the claims and the report never wait for it."""
    jobs = workflow()["jobs"]
    run = step("newest-dependencies", "make test-deps")["run"]
    assert 'NOX_SESSIONS="deps(newest)"' in run
    assert all("newest-dependencies" not in str(job.get("needs", "")) for job in jobs.values())
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^NOX_SESSIONS \?=.*deps\(newest\)", makefile, re.M)
    assert 'def deps(' in (REPO / "noxfile.py").read_text() and '"newest"' in (REPO / "noxfile.py").read_text()
