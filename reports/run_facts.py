"""The facts of the machine and the code a run records in results.json: git revision, package versions and those
that differ from the lock, device, peak memory."""

import hashlib
import os
import platform
import resource
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


NOT_A_CHECKOUT = "not a checkout, tree sha256 "  # the git field of a tree that is not this project's own checkout
TREE_FOLDERS = ("benchmarks", "claims", "fixtures", "latent_instruments", "models", "reports")
TREE_SUFFIXES = (".py", ".toml", ".json", ".lock", ".in", ".txt", ".cfg")
SKIPPED = ("__pycache__", ".venv", ".tools", "runs", ".git")


def git_revision(root: Path = REPO) -> str:
    """What code ran: the checkout's commit hash, with "+dirty" when there are uncommitted changes, where ``root`` is
    the top of its own git repository; otherwise (an exported copy of the tree, also one inside another project's
    repository, whose HEAD is not ours) "not a checkout, tree sha256 <16 hex digits>" (:func:`tree_digest`)."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.strip()
        if Path(top).resolve() != root.resolve():
            return NOT_A_CHECKOUT + tree_digest(root)
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return NOT_A_CHECKOUT + tree_digest(root)


def tree_digest(root: Path = REPO) -> str:
    """16 hex digits of a sha256 over the project's code and data files (their paths and bytes, in path order): the
    root's Makefile, pyproject.toml, requirements and conftest.py, and the ``TREE_SUFFIXES`` files under
    ``TREE_FOLDERS`` (the shipped weights enter through models/shipped/manifest.json's digests)."""
    files = [root / name for name in ("Makefile", "pyproject.toml", "requirements.lock", "requirements.in",
                                      "constraints.txt", "conftest.py") if (root / name).is_file()]
    for folder in TREE_FOLDERS:
        files += [p for p in (root / folder).rglob("*") if p.is_file() and p.suffix in TREE_SUFFIXES
                  and not any(part in SKIPPED for part in p.relative_to(root).parts)]
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def peak_rss_mib() -> float:
    """Peak resident memory of this process, MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def versions() -> dict[str, str]:
    """The versions of python and of the packages whose numbers a run's verdicts depend on (``absent`` if missing)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in ("torch", "transformers", "tokenizers", "safetensors", "accelerate", "numpy", "scipy", "pytest",
                 "pytest-xdist", "hypothesis", "matplotlib", "scikit-learn"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


LOCK = REPO / "requirements.lock"


def lock_differences(lock: Path = LOCK) -> list[str]:
    """Installed versions that differ from the lock, e.g. ["transformers 5.25.0, lock 5.24.0"]: a changed number
    can then be traced to a changed library. Packages the lock pins but this environment lacks are named as
    "absent"; packages it does not pin are not compared. An empty list where the lock file is missing (the suite
    used outside its checkout) or everything matches.
    """
    from importlib.metadata import PackageNotFoundError, version

    if not lock.is_file():
        return []
    differ = []
    for line in lock.read_text().splitlines():
        name, sep, locked = line.split(" ")[0].partition("==")
        if not sep or line.startswith(("#", " ")):
            continue
        try:
            installed = version(name)
        except PackageNotFoundError:
            installed = "absent"
        if installed != locked:
            differ.append(f"{name} {installed}, lock {locked}")
    return differ


def gpu_peak_mib(settings) -> float:
    """Peak GPU memory allocated by this process on its device, MiB (0 without CUDA)."""
    import torch

    if not settings.device.startswith("cuda"):
        return 0.0
    return round(torch.cuda.max_memory_allocated(settings.device) / 2**20, 1)


def device_facts(settings, gpu_peak: float) -> dict:
    """The run's ``device`` entry: device, dtype, device map, CPU count, platform; with CUDA the GPU's name and peak."""
    import torch

    out = {"device": settings.device, "dtype": settings.dtype_name, "device_map": settings.device_map,
           "cpu_count": os.cpu_count(), "platform": platform.platform()}
    if settings.device.startswith("cuda"):
        out["gpu"] = torch.cuda.get_device_name(settings.device)
        out["gpu_peak_memory_mib"] = gpu_peak
    return out
