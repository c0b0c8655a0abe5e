"""``python -m models prepare --zoo tiny``: fetch the corpus, train the BPE, check the shipped zoo, train what is not shipped.

The tiny zoo's trained models (the models, their seed siblings, the ladder's other seeds, the masked mixer) are
shipped in ``models/shipped/`` and pinned by sha256 (``models.shipped``): prepare checks every file against the
manifest and trains none of them. What is not shipped (the full profile, ``--corpus``) is trained and cached.

``python -m models prepare --retrain`` also trains the shipped recipes, into the cache: this machine's builds,
which ``pytest claims -m gpu --zoo-build local`` tests beside the shipped weights' verdicts.

``python -m models prepare --steps N NAME...`` is a rehearsal: each recipe trained for N steps only, into a checkpoint of
its own (the step count is part of the cache key), shipped or not: ``make gpu-check``'s CPU rehearsal trains the tiny
main model and a seed sibling so, as one batched job.

``python -m models prepare NAME...`` works only on the named trained models (or a group's members,
e.g. tiny-siblings), also those outside the profiles, as a damaged cache entry's rebuild command does.

``python -m models ship [NAME...]`` copies the cached trainings of the tiny zoo (or the named models) into
``models/shipped/`` and rewrites the manifest: a maintainer's step after a recipe or trainer change, followed by
re-measuring the ledger on the shipped weights.

``python -m models plateau [NAME...] [--write]`` trains each shipped recipe's doubled run (its schedule stretched)
into the cache and prints whether the recipe is at a plateau (``models.plateau``: the doubled run lowers the held-out
loss by less than 1 %); ``--write`` keeps the measurement in the manifest, where the report's models table reads it.

``python -m models fingerprint NAME...`` prints what each model is, for a ledger entry
(``claims/expected_verdicts.toml``).

A recipe and its seed siblings among the models to train are one batched job (``models.batched_training``).

The suite would do all of this lazily on first use; running it up front shows
training progress and loss in the terminal, which a captured pytest run hides.
Before the first model trains, prepare states how long training should take here.
"""

import argparse
import sys
import time
from dataclasses import replace

import torch
from tqdm.auto import tqdm

from models.corpus import CorpusError, load_corpus
from models.batched_training import sibling_batches, train_batched
from models.errors import ModelLoadError
from models.recipes import PREPARED, PROFILES, Recipe
from models.plateau import measure, stretched
from models.shipped import checkpoint, keep_plateau, ship, shipped, verify
from models.tokenization import train_bpe
from models.progress import TrainingProgress
from models.trainer import check_checkpoint, checkpoint_dir, format_duration, measure_matmul_flops, work_to_train
from models.zoo import UnknownModelError, fingerprint, resolve


def named_recipes(names: list[str]) -> list[Recipe]:
    """The recipes of trained zoo models and of groups' members, in order, each once.

    Raises:
        UnknownModelError: for a name that is not a trained zoo model or a group of them.
    """
    recipes: list[Recipe] = []
    for name in names:
        entry = resolve(name)
        for member in [resolve(m) for m in entry.members] if entry.is_group else [entry]:
            if member.role != "trained":
                raise UnknownModelError(f"{name!r}: prepare trains zoo models and groups of them; "
                                        f"{member.name} is a {member.role} model, which needs no training")
            if member.recipe not in recipes:
                recipes.append(member.recipe)
    return recipes


def training_plan(work: dict[str, float], n_recipes: int, device: str, label: str) -> str | None:
    """One line with the first guess of the training time of ``work`` (:func:`work_to_train`); None if it is empty."""
    if not work:
        return None
    flops = measure_matmul_flops(device)
    total = sum(work.values()) / flops
    hint = "" if total <= 600 or set(work) <= {r.name for r in PREPARED["tiny"]} else ", or use --zoo tiny"
    return (f"{label} on {device}: {len(work)} of {n_recipes} models to train ({', '.join(work)}), "
            f"{format_duration(total)} in all as a first guess (6 × parameters × steps × batch × context FLOPs at "
            f"~{flops / 1e9:.0f} GFLOP/s of matmul measured here; the estimate measured on the first training steps "
            f"follows, and the bar's ETA covers every model); Ctrl-C to stop{hint}")


def chosen_device(value: str) -> str:
    """``--device``: auto (CUDA where there is one), cpu, cuda or cuda:N.

    Raises:
        ValueError: for a name torch does not know, or CUDA where this machine has none (naming what it has).
    """
    if value == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(value)
    except RuntimeError:
        raise ValueError(f"--device {value}: not a device; use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {value}: this machine has no CUDA GPU that torch can use; use --device cpu "
                         "(or auto)")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"--device {value}: only cpu and cuda are supported")
    return value


def plateaus(recipes: list[Recipe], corpus, device: str, write: bool) -> int:
    """``plateau``: each recipe's held-out loss beside its doubled run's (``models.plateau``); the doubled runs are
    trained into the cache first (on a GPU a recipe's seed siblings as one batched job; on a CPU one by one, since
    four tiny siblings batched took 0.8 s a step on 2 cores against 0.09 s each alone). With ``write``, each shipped model's
    measurement goes into the manifest.

    Raises:
        ModelLoadError: as ``models.shipped.checkpoint`` (a shipped file not the manifest's).
    """
    doubled = [stretched(r) for r in recipes]  # seed siblings batch on a GPU; on 2 CPU cores a batch of four
    for group in sibling_batches(doubled) if device.startswith("cuda") else [[r] for r in doubled]:  # is 2x slower
        train_batched(group, corpus, device=device)
    for recipe in recipes:
        own, pinned = checkpoint(recipe, corpus, "shipped", device)
        result = measure(recipe, own, checkpoint_dir(stretched(recipe), corpus), corpus)
        print(f"{recipe.name}: {result.describe()}", flush=True)
        if write and pinned:
            keep_plateau(recipe.name, result.to_json())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 when the corpus cannot be had or a name is unknown, 1 when a
    cached checkpoint is damaged, a shipped file is not the manifest's, or ship finds no cached training)."""
    parser = argparse.ArgumentParser(prog="python -m models", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["prepare", "fingerprint", "ship", "plateau"])
    parser.add_argument("names", nargs="*", help="model names (zoo names, groups; fingerprint: also HF folders)")
    parser.add_argument("--zoo", choices=["auto", *PROFILES], default="auto")
    parser.add_argument("--corpus", help="a UTF-8 text file instead of the Shakespeare corpus")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0, help="fingerprint: the run's --seed (random-init models)")
    parser.add_argument("--retrain", action="store_true",
                        help="prepare: train the shipped recipes too, into the cache (this machine's builds, for "
                             "pytest's --zoo-build local); the shipped weights are not touched")
    parser.add_argument("--write", action="store_true",
                        help="plateau: keep each measurement in models/shipped/manifest.json")
    parser.add_argument("--steps", type=int, default=None,
                        help="prepare: a rehearsal, each recipe trained for this many steps only (a checkpoint of its "
                             "own; implies --retrain)")
    args = parser.parse_intermixed_args(argv)  # names may follow options: prepare --retrain tiny-w96
    if args.steps is not None and (args.steps < 1 or args.command != "prepare"):
        why = "give a number of training steps, at least 1" if args.steps < 1 else f"prepare's, not {args.command}'s"
        print(f"error: --steps {args.steps}: {why}", file=sys.stderr)
        return 2
    try:
        device = chosen_device(args.device)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    zoo = ("full" if device.startswith("cuda") else "tiny") if args.zoo == "auto" else args.zoo
    try:
        corpus = load_corpus(args.corpus)
    except CorpusError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.command == "fingerprint":
        try:
            for name in args.names:
                print(f"{name}\t{fingerprint(resolve(name), corpus, args.seed)}")
        except (UnknownModelError, ModelLoadError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        return 0
    try:
        recipes = named_recipes(args.names) if args.names else list(PREPARED["tiny" if args.command in ("ship", "plateau")
                                                                             else zoo])
    except UnknownModelError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"corpus {corpus.name}: {len(corpus.text):,} characters, sha256 {corpus.sha256[:16]}")
    train_bpe(corpus)
    try:
        if args.command == "ship":
            print(f"shipped {len(recipes)} models: {ship(recipes, corpus)}")
            return 0
        if args.command == "plateau":
            return plateaus(recipes, corpus, device, args.write)
        if args.steps:  # the rehearsal's short trainings: other recipes, so other checkpoints
            recipes = [replace(r, steps=args.steps, eval_every=min(r.eval_every, args.steps),
                               lr_drop_step=min(r.lr_drop_step, args.steps)) for r in recipes]
        pinned = {} if args.retrain or args.steps else {r.name: p for r in recipes
                                                        if (p := shipped(r, corpus)) is not None}
        for name, model in pinned.items():
            print(f"{name}: shipped weights {verify(model)[:12]}, every file as the manifest pins it")
    except ModelLoadError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    recipes = [r for r in recipes if r.name not in pinned]
    if not recipes:
        print("nothing to train: every model is shipped (python -m models prepare --retrain trains this machine's "
              "builds, for --zoo-build local)")
        return 0
    damaged = []
    for recipe in recipes:  # before any training: a damaged entry is named now, not after hours of training others
        folder = checkpoint_dir(recipe, corpus)
        try:
            if folder.exists() or folder.is_symlink():
                check_checkpoint(recipe, corpus, folder)
        except ModelLoadError as err:
            damaged.append(str(err))
    if damaged:
        print("\n".join(f"error: {message}" for message in damaged), file=sys.stderr)
        return 1
    what = " ".join(args.names) if args.names else f"zoo {zoo}"
    work = work_to_train(recipes, corpus)
    plan = training_plan(work, len(recipes), device, what)
    if plan:
        print(plan, flush=True)
    started = time.perf_counter()
    progress = TrainingProgress(work, what) if work else None  # one bar whose ETA covers every model to train
    try:
        for group in sibling_batches(recipes):  # a recipe's seed siblings train as one batched job
            for recipe, folder in zip(group, train_batched(group, corpus, device=device, progress=progress)):
                tqdm.write(f"{recipe.name}: {folder}")
    finally:
        if progress is not None:
            progress.close()
    print(f"{what} ready in {time.perf_counter() - started:.0f} s (cached models are not retrained)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
