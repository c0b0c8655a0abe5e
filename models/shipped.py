"""The shipped zoo: the tiny profile's trained checkpoints, committed in ``models/shipped/`` and pinned by content.

Reference weights are fixtures. A zoo retrained on every machine gives other weights on another CPU (other
floating-point kernels) and so other verdicts for the fragile claims; the suite instead runs the weights committed
here, the same bits on every machine, as Hugging Face's own tests run pinned tiny checkpoints.

``models/shipped/manifest.json`` lists, per model: the fingerprint (``NAME-KEY``, as ``models.zoo.fingerprint``
gives it for the recipe on the default corpus), ``weights_sha256`` (sha256 of ``model.safetensors``, as
results.json records it), the sha256 of every file of its folder, the recipe, the commit and the machine (CPU,
torch, threads) that trained it, its training time and its loss curve. Loading checks every file against it: a
changed or truncated file is a :class:`ModelLoadError` naming the file and both digests, never a silent retrain.

Training is how a recipe is reproduced, on request: ``python -m models prepare --retrain`` trains the shipped
recipes into the cache (this machine's builds), and ``pytest claims -m gpu --zoo-build local`` tests those builds,
with each verdict beside the shipped weights' (``verdicts.json``). ``python -m models ship`` copies cached builds
here and rewrites the manifest (a maintainer's step, after a recipe or trainer change).
"""

import json
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from models.atomic_files import atomic_write_text
from models.corpus import Corpus
from models.errors import ModelLoadError
from models.identity import file_sha256
from models.recipes import PREPARED, Recipe
from models.trainer import checkpoint_dir, train

SHIPPED = Path(__file__).resolve().parent / "shipped"
MANIFEST = SHIPPED / "manifest.json"
VERDICTS = SHIPPED / "verdicts.json"  # the records of `make claims` on the shipped weights (reports.shipped)
BUILDS = ("shipped", "local")  # --zoo-build: the committed weights, or this machine's trainings (the cache)
SHIPPED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "recipe.json",
                 "loss_curve.json")


@dataclass(frozen=True)
class ShippedModel:
    """One checkpoint of the shipped zoo, as the manifest pins it.

    Attributes:
        name: the zoo name, e.g. "tiny-w96".
        folder: its HF folder in ``models/shipped/``.
        fingerprint: ``NAME-KEY`` of the recipe on the default corpus (``models.zoo.fingerprint``).
        weights_sha256: sha256 (hex) of ``model.safetensors``.
        files: {file name: sha256 (hex)} of every file of the folder.
        corpus_sha256: the corpus it was trained on.
    """

    name: str
    folder: Path
    fingerprint: str
    weights_sha256: str
    files: dict
    corpus_sha256: str


@lru_cache(maxsize=1)
def manifest() -> dict[str, ShippedModel]:
    """The shipped models by zoo name ({} where the manifest is absent).

    Raises:
        ModelLoadError: if the manifest cannot be read or misses a field (restore it with git).
    """
    if not MANIFEST.is_file():
        return {}
    try:
        raw = json.loads(MANIFEST.read_text(encoding="utf-8"))
        return {name: ShippedModel(name, SHIPPED / name, m["fingerprint"], m["weights_sha256"], m["files"],
                                   raw["corpus_sha256"])
                for name, m in raw["models"].items()}
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ModelLoadError(f"{MANIFEST}: unreadable shipped-zoo manifest ({type(err).__name__}: {err}); restore it "
                             f"with `git checkout -- {MANIFEST.relative_to(SHIPPED.parent.parent)}`") from None


def shipped(recipe: Recipe, corpus: Corpus) -> ShippedModel | None:
    """The shipped checkpoint of ``recipe`` on ``corpus``, or None: a recipe not shipped (the full profile, depth
    variants), or another corpus (``--corpus``: trained on first use).

    Raises:
        ModelLoadError: if the recipe is one the tiny zoo ships but the manifest has no entry for it; or if the
            recipe is shipped for this corpus but this code's recipe key differs from the
            shipped one (a recipe, trainer or tokenizer change): the weights no longer match the code, and the
            suite does not retrain behind the user's back; the message says how to re-ship or test a local build.
    """
    pinned = manifest().get(recipe.name)
    shipped_corpus = {m.corpus_sha256 for m in manifest().values()}
    if pinned is None and corpus.sha256 in shipped_corpus and recipe.name in {r.name for r in PREPARED["tiny"]}:
        raise ModelLoadError(  # a damaged manifest must not turn into a silent retraining (about 25 minutes)
            f"{recipe.name}: the tiny zoo ships it, but {MANIFEST.name} has no entry for it: restore the manifest with "
            f"`git checkout -- models/shipped/{MANIFEST.name}`, or train this machine's build with `python -m models "
            f"prepare --retrain {recipe.name}` and test it with --zoo-build local")
    if pinned is None or pinned.corpus_sha256 != corpus.sha256:
        return None
    wanted = checkpoint_dir(recipe, corpus).name
    if wanted != pinned.fingerprint:
        raise ModelLoadError(
            f"{recipe.name}: the shipped weights were trained from recipe {pinned.fingerprint}, this code's recipe is "
            f"{wanted} (a recipe, trainer or tokenizer change). Train it with `python -m models prepare --retrain "
            f"{recipe.name}` and test it with --zoo-build local, or re-ship the zoo (`python -m models ship`)")
    return pinned


def plateau_of(name: str) -> dict | None:
    """The manifest's plateau measurement of a shipped model (``models.plateau.Plateau.to_json``), or None where the
    model is not shipped or its plateau was never measured (``python -m models plateau NAME --write``)."""
    if not MANIFEST.is_file():
        return None
    return json.loads(MANIFEST.read_text(encoding="utf-8")).get("models", {}).get(name, {}).get("plateau")


def keep_plateau(name: str, plateau: dict) -> None:
    """Write a shipped model's plateau measurement into the manifest (atomically), beside its own loss.

    Raises:
        ModelLoadError: for a model the manifest does not ship.
    """
    doc = json.loads(MANIFEST.read_text(encoding="utf-8"))
    if name not in doc.get("models", {}):
        raise ModelLoadError(f"{name}: not in {MANIFEST.name}; ship it first (`python -m models ship {name}`)")
    doc["models"][name]["plateau"] = plateau
    atomic_write_text(MANIFEST, json.dumps(doc, indent=1) + "\n")


def verify(pinned: ShippedModel) -> str:
    """Check every file of a shipped folder against the manifest; return its ``weights_sha256``.

    Hashes the files themselves (about 4 MB a model, milliseconds), never a sidecar that a copy could forge.

    Raises:
        ModelLoadError: naming the file, the digest the manifest pins and the digest found (a changed or truncated
            file), or the missing file; with the command that restores it.
    """
    restore = f"restore it with `git checkout -- models/shipped/{pinned.name}`"
    for name, expected in sorted(pinned.files.items()):
        path = pinned.folder / name
        if not path.is_file():
            raise ModelLoadError(f"{path}: missing from the shipped zoo (the manifest pins sha256 {expected}); "
                                 f"{restore}")
        found = file_sha256(path)
        if found != expected:
            raise ModelLoadError(f"{path}: sha256 {found}, but the manifest pins {expected}: the shipped weights were "
                                 f"changed or truncated; {restore}, or test this machine's own build with "
                                 "--zoo-build local")
    return pinned.files["model.safetensors"]


def checkpoint(recipe: Recipe, corpus: Corpus, build: str, device: str) -> tuple[Path, str | None]:
    """The folder a trained zoo model loads from, and its verified ``weights_sha256`` (None for a local build,
    whose digest the loader computes).

    Args:
        build: "shipped" (the committed weights where the recipe is shipped for this corpus, else trained on first
            use as before) or "local" (always this machine's training, in the cache).
    Raises:
        ModelLoadError: from :func:`shipped` and :func:`verify`, or a damaged cached checkpoint.
        ValueError: for a build not in ``BUILDS``.
    """
    if build not in BUILDS:
        raise ValueError(f"zoo build {build!r}: one of {', '.join(BUILDS)}")
    pinned = shipped(recipe, corpus) if build == "shipped" else None
    if pinned is not None:
        return pinned.folder, verify(pinned)
    return train(recipe, corpus, device=device), None


def is_shipped(recipe: Recipe, corpus: Corpus, build: str) -> bool:
    """Whether ``recipe`` loads from the shipped zoo in a run of ``build`` (nothing to train); False on a recipe
    mismatch, which :func:`checkpoint` reports."""
    try:
        return build == "shipped" and shipped(recipe, corpus) is not None
    except ModelLoadError:
        return False


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=SHIPPED.parent, capture_output=True, text=True,
                             check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def ship(recipes: list[Recipe], corpus: Corpus) -> Path:
    """Copy the cached trainings of ``recipes`` into ``models/shipped/`` and write the manifest (a maintainer's
    step: commit the result, then re-measure the ledger on it).

    The models not named keep their manifest entries (on the same corpus), so shipping one model re-pins that one
    only; the manifest's commit is this one's.

    Returns:
        the manifest's path.
    Raises:
        ModelLoadError: if a recipe has no complete cached training (train it first: ``python -m models prepare
            --retrain``); nothing is copied then.
    """
    sources = {recipe.name: checkpoint_dir(recipe, corpus) for recipe in recipes}
    missing = [f"{name} ({source})" for name, source in sources.items()
               if any(not (source / f).is_file() for f in SHIPPED_FILES)]
    if missing:  # checked before anything is copied: a ship is whole or not at all
        raise ModelLoadError(f"no complete cached training of {', '.join(missing)}; run `python -m models prepare "
                             "--retrain` first")
    doc = json.loads(MANIFEST.read_text()) if MANIFEST.is_file() else {}
    if doc and doc.get("corpus_sha256") != corpus.sha256:
        doc = {}  # another corpus: the models shipped for the old one no longer apply
    models = dict(doc.get("models", {}))  # the models not named keep their entries
    for recipe in recipes:
        source = sources[recipe.name]
        target = SHIPPED / recipe.name
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for name in SHIPPED_FILES:
            shutil.copyfile(source / name, target / name)
        meta = json.loads((source / "loss_curve.json").read_text())
        models[recipe.name] = {
            "fingerprint": source.name,
            "weights_sha256": file_sha256(target / "model.safetensors"),
            "files": {name: file_sha256(target / name) for name in SHIPPED_FILES},
            "recipe": json.loads((source / "recipe.json").read_text()),
            "trained_on": {**meta["trained_on"], "threads": meta.get("threads")},
            "train_seconds": round(meta["train_seconds"], 1),
            "final_val_loss": meta["curve"][-1]["val_loss"],
            "loss_curve": meta["curve"],
        }
    doc = {"schema": 1, "corpus": corpus.name, "corpus_sha256": corpus.sha256, "trained_at_commit": _git_commit(),
           "models": models}
    atomic_write_text(MANIFEST, json.dumps(doc, indent=1) + "\n")
    manifest.cache_clear()
    return MANIFEST
