"""A seeded sample of mutants of the measurements (issue 75): latent_instruments/*.py and claims/*/*_measures.py,
mutated by cosmic-ray (operator, comparison, sign and constant changes), each run against its runner, and the score
and the surviving mutants written to a file. ``make mutation`` runs it (the nightly workflow's ``mutation`` job).

Run with the tools' python, which has cosmic-ray (``.tools/bin/python -m benchmarks.mutation``); the runners use the
suite's (``--python``, default .venv/bin/python). It works on a clone of the committed HEAD under ``--out``, so an
interrupted run never leaves a mutant in the checkout (commit what is to be measured).

A mutant's runner: the fast self-tests that import its module (``pytest tests/... -m "not subprocess" -x``), and for
a measures module also the golden comparison of its claims (``fixtures.golden``) on one fast subject of the shipped
zoo (``pytest claims -m gpu --zoo tiny --shard SUBJECT --claim ID ...``). A mutant is killed where the runner fails
(or times out, or the module no longer imports: cosmic-ray's "incompetent"), survives where it passes. Known
equivalent mutants are listed once, with why, in benchmarks/mutation_equivalent.toml; the score leaves them out:
score = killed / (tried − equivalent), per package.
"""

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EQUIVALENT = Path(__file__).with_name("mutation_equivalent.toml")
# The kinds of change: arithmetic operators, comparisons, signs, constants, booleans. Shifts and xor as a
# replacement only raise TypeErrors on floats and arrays (killed, but a minute each for nothing).
OPERATORS = re.compile(r"core/(ReplaceBinaryOperator_\w+_(Add|Sub|Mul|Div|Pow|BitOr|BitAnd)|ReplaceComparisonOperator_\w+"
                       r"|ReplaceUnaryOperator_\w+_(USub|UAdd|Not)|NumberReplacer|ReplaceTrueWithFalse|ReplaceFalseWithTrue"
                       r"|ReplaceAndWithOr|ReplaceOrWithAnd)$")
SUBJECTS = ("tiny-w96", "tiny-w96:untrained", "tiny-w128", "tiny-siblings", "tiny-ladder", "tiny-mixer", "ref-gpt2-small")


def targets(root: Path = REPO) -> dict[str, list[str]]:
    """{package: [module paths relative to ``root``]}: "latent_instruments" and "measures"."""
    return {"latent_instruments": sorted(p.relative_to(root).as_posix() for p in (root / "latent_instruments").glob("*.py")
                                         if p.name not in ("__init__.py", "errors.py")),
            "measures": sorted(p.relative_to(root).as_posix() for p in (root / "claims").glob("*/*_measures.py"))}


def _imports(text: str, dotted: str) -> bool:
    """Whether source ``text`` imports the module ``dotted`` (``import a.b``, ``from a.b import``, ``from a import b``)."""
    package, _, name = dotted.rpartition(".")
    return bool(re.search(rf"\b{re.escape(dotted)}\b", text)
                or re.search(rf"from {re.escape(package)} import [^\n]*\b{name}\b", text))


def self_tests_of(module: str, root: Path = REPO) -> list[str]:
    """The self-test files (tests/test_*.py) that import ``module`` (a path such as "latent_instruments/spectra.py")."""
    dotted = module.removesuffix(".py").replace("/", ".")
    return sorted(p.relative_to(root).as_posix() for p in (root / "tests").glob("test_*.py")
                  if _imports(p.read_text(encoding="utf-8"), dotted))


def claims_of(module: str, root: Path = REPO) -> list[str]:
    """The claim ids of the claim test files of ``module``'s family that import it (a measures module)."""
    dotted = module.removesuffix(".py").replace("/", ".")
    ids = set()
    for path in (root / module).parent.glob("test_*.py"):
        text = path.read_text(encoding="utf-8")
        if _imports(text, dotted):
            ids.update(re.findall(r"pytest\.mark\.claim\(\"([^\"]+)\"", text))
    return sorted(ids)


def subject_of(claim: str, verdicts: dict) -> str | None:
    """The first of ``SUBJECTS`` that ``claim`` has a shipped record on ("CLAIM|test[SUBJECT(-variant)]"), or None."""
    on = [key.split("[", 1)[1].rstrip("]") for key in verdicts if key.startswith(f"{claim}|") and "[" in key]
    return next((s for s in SUBJECTS for o in on if o == s or (o.startswith(f"{s}-") and not o[len(s) + 1:].startswith("seed"))), None)


def runner(module: str, python: str, verdicts: dict, root: Path = REPO) -> str | None:
    """The shell command that decides a mutant of ``module``, or None where nothing tests it (no self-test imports
    it and it measures no claim with a fast subject)."""
    quiet = "-q -x -p no:cacheprovider"
    steps = []
    tests = self_tests_of(module, root)
    if tests:
        steps.append(f"{python} -m pytest {' '.join(tests)} -m 'not subprocess' {quiet}")
    by_subject: dict[str, list[str]] = {}
    for claim in claims_of(module, root) if module.startswith("claims/") else ():
        subject = subject_of(claim, verdicts)
        if subject:
            by_subject.setdefault(subject, []).append(claim)
    for subject, ids in sorted(by_subject.items()):
        chosen = " ".join(f"--claim {c}" for c in ids)
        steps.append(f"{python} -m pytest claims -m gpu --zoo tiny --shard {subject} {chosen} {quiet} "
                     f"--report-dir mutation-runs")
    return " && ".join(steps) or None


def copy_tree(out: Path) -> Path:
    """A clone of the checkout's committed HEAD at ``out``/tree (made anew): a git checkout of its own, as the
    self-tests expect, that no mutant can leave changed in the checkout."""
    tree = out / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()
    _sh("git", "clone", "-q", "--no-checkout", REPO, tree, cwd=REPO)
    _sh("git", "checkout", "-q", head, cwd=tree)
    return tree


def equivalents(path: Path = EQUIVALENT) -> dict[str, str]:
    """{"MODULE:LINE OPERATOR": why} of the known-equivalent mutants (benchmarks/mutation_equivalent.toml); OPERATOR
    "*" stands for every mutant of that line (a constant that only sizes batches)."""
    raw = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return {f"{e['module']}:{e['line']} {e['operator']}": e["why"] for e in raw.get("equivalent", [])}


def command_of(config: Path) -> str:
    """The runner's shell command a session's config holds (its ``test-command``)."""
    return tomllib.loads(config.read_text(encoding="utf-8"))["cosmic-ray"]["test-command"]


def _sh(*args, cwd: Path) -> None:
    done = subprocess.run(list(map(str, args)), cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(map(str, args))} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def run(sample: dict[str, int], seed: int, out: Path, python: str, timeout: float,
        only: set[tuple[str, str, int]] | None = None) -> dict:
    """Initialise a cosmic-ray session per module, keep a seeded sample of the chosen operators' mutants per package
    (the rest marked skipped), run it, and return the summary written to ``out``/mutation.json. ``only``: instead of
    the sample, exactly these mutants, (module, operator, occurrence) (``--retry``: a run's survivors again).

    A module whose runner fails on the unmutated code (its baseline) is left out of the score, its mutants untried,
    and named under ``baseline_failed`` with the runner's output: all its mutants would read as killed.

    Raises:
        SystemExit: where cosmic-ray fails.
    """
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    tree = copy_tree(out)
    shutil.rmtree(out / "sessions", ignore_errors=True)  # a session of an earlier run is not this run's
    python = str(Path(python).absolute()) if "/" in python else python  # not resolved: a venv python is a link
    verdicts = json.loads((tree / "models/shipped/verdicts.json").read_text())["records"]
    cosmic = Path(sys.executable).with_name("cosmic-ray")
    sessions, pool = {}, {package: [] for package in sample}
    for package, modules in targets(tree).items():
        for module in modules if package in sample else ():
            command = runner(module, python, verdicts, tree)
            if command is None:
                continue
            config = out / "sessions" / (module.replace("/", "-") + ".toml")
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(f'[cosmic-ray]\nmodule-path = "{module}"\ntimeout = {timeout}\nexcluded-modules = []\n'
                              f"test-command = {json.dumps('env PYTHONDONTWRITEBYTECODE=1 ' + command)}\n"
                              '[cosmic-ray.distributor]\nname = "local"\n')
            db = config.with_suffix(".sqlite")
            _sh(cosmic, "init", "--force", config, db, cwd=tree)
            sessions[module] = (config, db, package)
            with use_db(db, WorkDB.Mode.open) as work:
                pool[package] += [(module, m.operator_name, m.occurrence, item.job_id) for item in work.pending_work_items
                                  for m in item.mutations[:1] if OPERATORS.match(m.operator_name)]
    # a mutant is drawn by (module, operator, occurrence), which the same source gives again; cosmic-ray's job ids
    # are random, so a draw over them would be another sample each run
    failed_baselines: dict[str, str] = {}
    rng = random.Random(seed)
    chosen = {key[-1] for package, items in pool.items()
              for key in (rng.sample(sorted(items, key=lambda k: k[:3]), min(sample[package], len(items)))
                          if only is None else [k for k in items if k[:3] in only])}
    for module, (config, db, package) in sessions.items():
        with use_db(db, WorkDB.Mode.open) as work:
            skip = [item.job_id for item in work.pending_work_items if item.job_id not in chosen]
            work.set_multiple_results(skip, WorkResult(output="not sampled", worker_outcome=WorkerOutcome.SKIPPED))
            if len(skip) == work.num_work_items:
                continue
        try:
            baseline = subprocess.run(command_of(config), shell=True, cwd=tree, capture_output=True, text=True,
                                      timeout=timeout)
            failed = (baseline.stdout + baseline.stderr)[-3000:] if baseline.returncode else ""
        except subprocess.TimeoutExpired:
            failed = f"timed out after {timeout:g} s"
        if failed:  # the runner fails on the unmutated code: its mutants would all read as killed
            failed_baselines[module] = failed
            continue
        _sh(cosmic, "exec", config, db, cwd=tree)
    (out / "baseline_failed.json").write_text(json.dumps(failed_baselines, indent=1) + "\n")
    return summarise(out, seed, sample)


def summarise(out: Path, seed: int, sample: dict[str, int]) -> dict:
    """The score of the sessions under ``out``/sessions, read back from cosmic-ray's databases, with today's
    known-equivalent mutants (so ``--rescore`` counts an equivalent listed after the run); written to
    ``out``/mutation.json and returned."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    failed = out / "baseline_failed.json"
    failed_baselines = json.loads(failed.read_text()) if failed.exists() else {}
    sessions = {}
    for config in sorted((out / "sessions").glob("*.toml")):
        module = tomllib.loads(config.read_text(encoding="utf-8"))["cosmic-ray"]["module-path"]
        package = "latent_instruments" if module.startswith("latent_instruments/") else "measures"
        sessions[module] = (config, config.with_suffix(".sqlite"), package)
    known = equivalents()
    summary = {"seed": seed, "sample": sample, "packages": {}, "survivors": [], "equivalent": [],
               "baseline_failed": [{"module": m, "output": out} for m, out in failed_baselines.items()]}
    for module, (config, db, package) in sessions.items():
        if module in failed_baselines:
            continue
        counts = summary["packages"].setdefault(package, {"tried": 0, "killed": 0, "survived": 0, "equivalent": 0,
                                                          "incompetent": 0})
        with use_db(db, WorkDB.Mode.open) as work:
            for item, result in work.completed_work_items:
                if result.worker_outcome == WorkerOutcome.SKIPPED:
                    continue
                m = item.mutations[0]
                where = f"{module}:{m.start_pos[0]} {m.operator_name}"
                counts["tried"] += 1
                why = known.get(where) or known.get(f"{module}:{m.start_pos[0]} *")  # "*": every change of the line
                if result.test_outcome == TestOutcome.SURVIVED and why:
                    counts["equivalent"] += 1
                    summary["equivalent"].append({"mutant": where, "why": why})
                elif result.test_outcome == TestOutcome.SURVIVED:
                    counts["survived"] += 1
                    summary["survivors"].append({"mutant": where, "module": module, "operator": m.operator_name,
                                                 "occurrence": m.occurrence, "diff": result.diff})
                else:
                    counts["killed"] += 1
                    counts["incompetent"] += result.test_outcome == TestOutcome.INCOMPETENT
    for counts in summary["packages"].values():
        real = counts["tried"] - counts["equivalent"]
        counts["score"] = round(counts["killed"] / real, 3) if real else None
        counts["surviving_share"] = round(counts["survived"] / counts["tried"], 3) if counts["tried"] else None
    (out / "mutation.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.mutation``: exit 0 once the score is written (survivors are findings, not errors)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--instruments", type=int, default=40, help="mutants sampled in latent_instruments/ (40)")
    parser.add_argument("--measures", type=int, default=16, help="mutants sampled in claims/*/*_measures.py (16)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (0)")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "mutation", help="where mutation.json goes")
    parser.add_argument("--python", default=str(REPO / ".venv" / "bin" / "python"), help="the suite's python")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a runner may take (600)")
    parser.add_argument("--rescore", action="store_true",
                        help="score the run already under --out again (after listing an equivalent mutant)")
    parser.add_argument("--retry", type=Path, metavar="MUTATION_JSON",
                        help="try again exactly the survivors a run's mutation.json lists (after adding self-tests)")
    args = parser.parse_args(argv)
    only = None
    if args.retry:
        try:
            only = {(s["module"], s["operator"], int(s["occurrence"]))
                    for s in json.loads(args.retry.read_text())["survivors"]}
        except (OSError, ValueError, KeyError, TypeError) as err:
            parser.error(f"--retry {args.retry}: not a mutation.json with survivors' module, operator and occurrence "
                         f"({err!r})")
    sample = {k: n for k, n in (("latent_instruments", args.instruments), ("measures", args.measures)) if n > 0}
    args.out.mkdir(parents=True, exist_ok=True)
    summary = (summarise(args.out.resolve(), args.seed, sample) if args.rescore
               else run(sample, args.seed, args.out.resolve(), args.python, args.timeout, only))
    for package, c in summary["packages"].items():
        print(f"{package}: {c['tried']} tried, {c['killed']} killed ({c['incompetent']} incompetent), "
              f"{c['survived']} survived, {c['equivalent']} equivalent; score {c['score']}")
    for s in summary["survivors"]:
        print(f"SURVIVED {s['mutant']}")
    for b in summary["baseline_failed"]:
        print(f"BASELINE FAILED {b['module']} (its runner fails unmutated; its mutants untried):\n{b['output'][-800:]}")
    print(f"written: {args.out / 'mutation.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
