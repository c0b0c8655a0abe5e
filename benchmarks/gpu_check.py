"""``make gpu-check``: the suite's GPU work in prepared calls, rehearsed on the CPU (issue 45).

A lent GPU comes by chance and for 15 minutes in all, the machine's start included, and one call runs at most
10 minutes. Lanes run side by side, each step a process of its own, until ``--budget``:

- lane ``s4``: train S4's recipe (``s4-w384``: 6 blocks, 384 wide, 4500 steps) and its three seed siblings
  (S4's seeds 1442, 88, 99999) as one batched job (``models.batched_training``); then the S4 family on them at S4's sizes
  (``--zoo full``: S4.6 at S4's 20,000 prompts, S4.4 and S4.6-S4.8, S4.10 with the siblings' floor);
- lanes ``s3-REFERENCE``, one per random-init reference: S3 at S3's scale (``--source-scale on``: 64
  prompts, N = 2000, S3's own setting as the headline; on ref-llama-small S3.9's 4096- and 8192-wide single
  layers); the last lane then times S3's batched inversion against the prompt-by-prompt loop
  (``benchmarks/test_inversion_speed.py`` on the device);
- lane ``s0``: S0.6 and S0.7 on S0's subject (ref-opt-125m) at S0's scale, 8 × 2048, with looks up to 64 × 2048
  (issue 43: the same outcome as at the CPU's 32 × 128; the corpus's validation split holds 85 windows of 2048 of
  the references' tokens, so 64 is the last look that fits). Its run has its own prompt batch, so it is not merged: ``timings.json`` summarises it as ``s0_run``.

Side by side, the lanes' processes fill the gaps each leaves on the GPU (small models: launch and host overhead);
the four trainings of S4's recipe side by side did not (315 s each against 83 s alone), hence one batched job.
``--part`` names the kinds of lane to run, comma-separated (``s4``, ``s3``, ``s0``; default ``all``). Measured on an H200 (``benchmarks/gpu/README.md``):
all lanes at once do not fit 10 minutes (the four trainings reached 92 % in 450 s beside the S3 lanes, and S3
on ref-opt-125m took 349 s of them), while ``s4-w384`` alone trains in 83 s. So a 15-minute lease runs the two
parts as two calls back to back on the warm machine (``--part s4,s0``: the S0 lane's spectra fill the CPU and
GPU time that training leaves; then ``--part s3``), each within ``--budget`` (default 360 s), and their run
folders are merged afterwards with ``python -m reports merge``. ``--size source-main`` is what a lease with
four minutes left fits: ``s4-w384`` alone and the S4 claims that need no siblings.

Each call makes a folder of its own under ``--out`` (its UTC start; ``OUT/latest`` points at the newest), merges
the runs it made there into one run folder (``python -m reports merge``) and writes ``timings.json``: each
step's command, seconds, exit status and whether it ran out of time, and the steps never started; the device
(GPU name, torch, CUDA); each
family's and each claim's seconds and S4.6's; every model's weights digest and training time; the inversion
speed-up. A step that runs out of its time gets SIGTERM, on which pytest still writes its report
(``fixtures/signals.py``), so what it measured is kept. ``gpu-check.tar.gz`` holds everything but the weights (the
device tool returns a few files): each trained model is saved under ``weights/NAME/`` in shards of at most 15 MB
with its sha256 in ``timings.json`` (``benchmarks.gpu_records.export_weights``), so that any machine can test it.

``--size tiny`` runs the same steps on the CPU at the tiny zoo's sizes with a few claims each (its training step
trains ``tiny-w96`` and a seed sibling as one batched job for 3 steps, ``models prepare --steps``; the claims run on
the shipped weights, which are what comes back), in under a minute: the rehearsal that
``tests/test_gpu_check.py`` runs, so that a broken GPU script shows in CI, not on the device.

Usage: ``python -m benchmarks.gpu_check --size source|source-main|tiny [--part all|s4,s3,s0] --out DIR
[--budget SECONDS]``; exit status 0 when every step ended with a usable status (pytest's 0 or 1: 1 is a claim
that fails), 1 otherwise, 2 for a size that needs CUDA on a machine without it.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from benchmarks.gpu_records import export_weights, inversion_speed, summarise

PYTEST_OK = (0, 1)  # pytest's "all passed" and "some tests failed" (a claim that fails is a finding)
MERGE_RESERVE = 45.0  # seconds kept back from the budget for the merge and the tarball
TERM_GRACE = 60.0  # seconds a step has to write its report after SIGTERM before it is killed


@dataclass(frozen=True)
class Plan:
    """What one size runs: the models trained, the two lanes' pytest selections, the pytest options."""

    device: str  # torch device of every step
    zoo: str  # --zoo of both runs (a merge needs one zoo)
    train: tuple[str, ...]  # trained models, one `python -m models prepare NAME...` (seed siblings: one batched job)
    s4: tuple[str, ...]  # pytest words of lane s4's run
    s3: tuple[tuple[str, ...], ...]  # pytest words of each S3 lane's run, one lane per reference
    bench: tuple[str, ...]  # pytest words of the inversion benchmark
    s0: tuple[str, ...] = ()  # pytest words of lane s0's run (its own prompts: not merged)
    train_options: tuple[str, ...] = ()  # more words of the training step (the rehearsal's --steps)
    min_budget: float = 120.0  # the least --budget the plan is worth starting with (a usage error below it)


SIBLINGS = ("s4-w384-seed1442", "s4-w384-seed88", "s4-w384-seed99999")
# S3 at source scale, one lane each. ref-opt-125m's was measured on 2026-11-26 (349 s on an H200) and it is lane
# s0's subject, so the S3 part is these three (issue 58, item 5): ref-llama-small holds S3.9's wide layers.
REFERENCES = ("ref-gpt2-small", "ref-pythia-160m", "ref-llama-small")
PLANS = {
    "source": Plan(
        device="cuda", zoo="full", train=("s4-w384", *SIBLINGS),
        s4=("claims/s4_ffn", "--model", "s4-w384", "--model", "full-siblings"),
        s3=tuple(("claims/s3_inversion", "--source-scale", "on", "--model", r) for r in REFERENCES),
        bench=("--benchmark-only",),
        s0=("claims/s0_spectra", "--claim", "S0.6", "--claim", "S0.7", "--model", "ref-opt-125m", "--prompts",
            "8x2048"),  # looks 8 → 16 → 32 → 64, the default cap (fixtures.option_checks.default_max_prompts)
        # S0's lane ends in 82 s and s4-w384 alone trained in 83 s on an H200 (2026-11-26/28); the batched job of
        # the four, with eager attention, is not yet timed on a GPU: the first lease measures it (timings.json)
        min_budget=120.0,
    ),
    # S4's recipe alone, for a call of about four minutes: no siblings, so no S4.4 and S4.6-S4.8, S4.10 (their
    # floor is the siblings'), and no S3 lanes.
    "source-main": Plan(
        device="cuda", zoo="full", train=("s4-w384",),
        s4=("claims/s4_ffn", *(w for c in ("S4.1", "S4.2", "S4.3", "S4.5", "S4.9") for w in ("--claim", c)),
            "--model", "s4-w384"),
        s3=(), bench=(), min_budget=120.0,  # s4-w384 trains in 83 s, its five claims take 36 s (2026-11-26)
    ),
    # The rehearsal: the same steps and files on the CPU, a cheap claim or two per family.
    "tiny": Plan(
        device="cpu", zoo="tiny", train=("tiny-w96", "tiny-w96-seed1442"),
        train_options=("--steps", "3"),  # the batched training of a recipe and its sibling, 3 steps (shipped: kept)
        s4=("claims/s4_ffn", "--claim", "S4.1", "--claim", "S4.3", "--model", "tiny-w96"),
        s3=(("claims/s3_inversion", "--source-scale", "off", "--claim", "S3.1", "--model", "ref-llama-small"),),
        bench=("--benchmark-disable",),
        s0=("claims/s0_spectra", "--claim", "S0.6", "--model", "tiny-w96:untrained", "--prompts", "8x64",
            "--max-prompts", "16"),
        min_budget=20.0,  # each lane's step ends in well under 20 s on 2 cores
    ),
}
PARTS = ("s4", "s3", "s0")  # the kinds of lane, by the first two letters of a lane's name


@dataclass
class Step:
    """One process of the check and what became of it."""

    name: str
    argv: list[str]
    seconds: float | None = None  # wall time; None if it never started
    returncode: int | None = None
    timed_out: bool = False
    log: str = ""  # its output file, relative to the output folder
    env: dict = field(default_factory=dict, repr=False)

    def run(self, out: Path, deadline: float) -> bool:
        """Run until it ends or ``deadline`` (time.monotonic()); SIGTERM, then SIGKILL after ``TERM_GRACE``.

        Returns whether it ended with a usable status (see ``PYTEST_OK``; 0 for other commands).
        """
        self.log = f"logs/{self.name}.log"
        (out / "logs").mkdir(exist_ok=True)
        started = time.monotonic()
        with open(out / self.log, "w") as log:
            log.write(" ".join(self.argv) + "\n")
            log.flush()
            process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **self.env})
            try:
                process.wait(timeout=max(1.0, deadline - started))
            except subprocess.TimeoutExpired:
                self.timed_out = True
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=TERM_GRACE)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.seconds, self.returncode = time.monotonic() - started, process.returncode
        print(f"gpu-check: {self.name} ended with {self.returncode} after {self.seconds:.0f} s"
              f"{' (out of time)' if self.timed_out else ''}", flush=True)
        return self.returncode in (PYTEST_OK if "pytest" in self.argv else (0,))


def _pytest(plan: Plan, words: tuple[str, ...], report_dir: Path) -> list[str]:
    return [sys.executable, "-m", "pytest", *words, "-m", "gpu", "--zoo", plan.zoo, "--device", plan.device,
            "--report-dir", str(report_dir), "-p", "no:cacheprovider", "-q", "-rN"]


def steps_of(plan: Plan, out: Path) -> dict[str, list[Step]]:
    """The lanes: {lane: its steps in order}."""
    python = sys.executable
    lanes = {"s4": [Step("train", [python, "-m", "models", "prepare", "--zoo", plan.zoo, "--device", plan.device,
                                   *plan.train_options, *plan.train]),
                    Step("s4", _pytest(plan, plan.s4, out / "runs-s4"))]}
    if plan.s0:
        lanes["s0"] = [Step("s0", _pytest(plan, plan.s0, out / "runs-s0"))]
    for words in plan.s3:
        name = f"s3-{words[-1]}"  # the lane's reference, its last word
        lanes[name] = [Step(name, _pytest(plan, words, out / f"runs-{name}"))]
    if not plan.bench:
        return lanes
    lanes[name].append(Step("inversion-speed", [python, "-m", "pytest", "benchmarks/test_inversion_speed.py", *plan.bench,
                                                f"--benchmark-json={out / 'inversion-speed.json'}", "-p",
                                                "no:cacheprovider", "-q"],
                            env={"LATENT_CLAIMS_BENCH_DEVICE": plan.device}))
    return lanes


def run_lane(lane: list[Step], out: Path, deadline: float, done: list[Step]) -> None:
    """Run a lane's steps in order, each until ``deadline``; a step after a failed one is not started."""
    for step in lane:
        ok = step.run(out, deadline)
        done.append(step)
        if not ok or time.monotonic() >= deadline:
            return


def machine_facts(device: str) -> dict:
    """The machine the check ran on: torch, CUDA, the GPU's name (``device`` cuda), python."""
    facts = {"device": device, "torch": torch.__version__, "python": sys.version.split()[0],
             "cuda": torch.version.cuda, "gpu": None}
    if device.startswith("cuda") and torch.cuda.is_available():
        facts["gpu"] = torch.cuda.get_device_name()
    return facts


def merge(out: Path, lanes: list[str]) -> tuple[Step, Path | None]:
    """Merge the runs of this call's ``lanes`` into ``out/run``, within ``MERGE_RESERVE`` seconds from now (a lane
    stopped at the deadline may have used its SIGTERM grace); (the step, the merged results.json or None). ``out``
    is this call's own folder (:func:`call_folder`), so no earlier call's run folders are there to merge."""
    runs = [out / f"runs-{lane}" / "latest" for lane in lanes
            if (out / f"runs-{lane}" / "latest" / "results.json").exists()]
    step = Step("merge", [sys.executable, "-m", "reports", "merge", *map(str, runs), "--report-dir", str(out / "run")])
    if not runs or not step.run(out, time.monotonic() + MERGE_RESERVE):
        return step, None
    return step, out / "run" / "latest" / "results.json"


def call_folder(out: Path) -> Path:
    """A new folder for one call under ``out``, named by its UTC start (``-N`` for a second call that second), with
    ``out/latest`` pointing at it: each call writes and merges only its own runs, and a rerun into the same ``--out``
    keeps the earlier call's timings.json and tarball (issue 59)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        folder = out / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            folder.mkdir()
            break
        except FileExistsError:
            continue
    link, tmp = out / "latest", out / f".latest.{os.getpid()}"
    if not link.exists() or link.is_symlink():  # a real folder of the user's named latest is left alone
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(folder.name)
        os.replace(tmp, link)
    return folder


def not_started(lanes: dict[str, list[Step]], done: list[Step]) -> list[str]:
    """The steps of ``lanes`` that never started (the budget ran out, or an earlier step of the lane failed), by
    name."""
    planned = [s.name for lane in lanes.values() for s in lane]
    ran = {s.name for s in done}
    return [name for name in planned if name not in ran]


def _parts(value: str) -> tuple[str, ...]:
    """``--part``'s value: "all", or kinds of lane from ``PARTS``, comma-separated."""
    parts = tuple(p.strip() for p in value.split(",") if p.strip())
    if parts != ("all",) and (not parts or set(parts) - set(PARTS)):
        raise argparse.ArgumentTypeError(f"{value!r}: give all, or some of {', '.join(PARTS)} separated by commas")
    return parts


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (0: every step ended with a usable status)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(PLANS), default="source",
                        help="source: on CUDA, S4's recipe and S3's scale; tiny: the same steps on the CPU, small")
    parser.add_argument("--part", default="all", type=_parts,
                        help="all lanes (default), or the kinds named, comma-separated: s4 (training and S4), s3 "
                             "(the S3 lanes), s0 (S0.6 and S0.7 at S0's scale)")
    parser.add_argument("--out", type=Path, required=True,
                        help="folder under which each call makes a folder of its own (UTC start; OUT/latest points "
                             "at the newest) for its run, timings.json, the logs and the tarball")
    parser.add_argument("--budget", type=float, default=360.0,
                        help="seconds for the lanes (default 360: two parts, each with the SIGTERM grace and the "
                             "merge, fit one 15-minute lease)")
    args = parser.parse_args(argv)
    plan = PLANS[args.size]
    if not args.budget >= plan.min_budget:
        print(f"gpu-check: --budget {args.budget:g} is below what --size {args.size} needs: at least "
              f"{plan.min_budget:g} seconds (the lanes' steps would be stopped before any of them ends); nothing was "
              "started", file=sys.stderr)
        return 2
    if plan.device == "cuda" and not torch.cuda.is_available():
        print(f"gpu-check: --size {args.size} needs CUDA, and torch sees no GPU here; --size tiny rehearses the same "
              "steps on the CPU", file=sys.stderr)
        return 2
    if not any("all" in args.part or name[:2] in args.part for name in steps_of(plan, args.out)):
        print(f"gpu-check: --size {args.size} has no lane of --part {','.join(args.part)}", file=sys.stderr)
        return 2
    out = call_folder(args.out.resolve())
    print(f"gpu-check: this call's folder is {out}", flush=True)
    lanes = {name: lane for name, lane in steps_of(plan, out).items() if "all" in args.part or name[:2] in args.part}
    started = time.monotonic()
    deadline = started + args.budget
    from models.corpus import load_corpus  # the corpus and its BPE once, before the lanes read them side by side
    from models.tokenization import train_bpe
    train_bpe(load_corpus())

    done: list[Step] = []
    s0_results = out / "runs-s0" / "latest" / "results.json"
    threads = [threading.Thread(target=run_lane, args=(lane, out, deadline, done)) for lane in lanes.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    merging = [lane for lane in lanes if lane != "s0"]  # S0's scale is its own prompt batch: not mergeable
    merged, results = merge(out, merging) if merging else (None, None)
    done += [merged] if merged else []
    s0_ran = "s0" in lanes and s0_results.exists()  # this call's folder: only this call's run can be there
    skipped = not_started(lanes, done)
    trained = list(plan.train) if any(s.name == "train" and s.returncode == 0 for s in done) else []
    weights = export_weights(trained, out)  # the trainings brought back, outside the tarball

    timings = {"size": args.size, "part": args.part, "budget_seconds": args.budget, "wall_seconds": time.monotonic() - started,
               "machine": machine_facts(plan.device),
               "steps": [{k: v for k, v in asdict(s).items() if k != "env"} for s in done],
               "not_started": skipped,
               "weights": weights,
               "inversion_speed": inversion_speed(out / "inversion-speed.json"),
               "run": summarise(results) if results else None,
               "s0_run": summarise(s0_results) if s0_ran else None}
    (out / "timings.json").write_text(json.dumps(timings, indent=1, default=str) + "\n")
    with tarfile.open(out / "gpu-check.tar.gz", "w:gz") as tar:
        for item in sorted(out.iterdir()):
            if item.name not in ("gpu-check.tar.gz", "weights"):
                tar.add(item, arcname=item.name)
    ok = (results is not None or not merging) and (s0_ran or "s0" not in lanes) and not skipped and all(
        s.returncode in (PYTEST_OK if "pytest" in s.argv else (0,)) for s in done)
    print(f"gpu-check: {'done' if ok else 'INCOMPLETE'} in {timings['wall_seconds']:.0f} s; {out / 'timings.json'}"
          + (f"; not started: {', '.join(skipped)}" if skipped else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
