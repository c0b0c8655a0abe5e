"""The supported dependency range, tested: the self-tests (tests/) on the oldest and on the newest versions.

    nox -s "deps(oldest)"   # each direct dependency at its lower bound in pyproject.toml (`>=X` installed as `==X`)
    nox -s "deps(newest)"   # the newest version of each that the machine's package indexes serve
    make test-deps          # both

Each session builds its own virtual environment under .nox/ with pip, so the machine's pip configuration (its
indexes, find-links and constraints) applies as it does to `make setup`. The claims need the trained zoo and take
a quarter of an hour; these sessions test what breaks when a library moves: the adapters, hooks and instruments.
The nightly workflow runs "deps(newest)" as a job of its own that reports upstream breakage without blocking the
claims report. The versions each session installed are printed (`pip freeze`) at its end.
"""

import re
import tomllib
from pathlib import Path

import nox

nox.options.sessions = ["deps"]
nox.options.reuse_existing_virtualenvs = False

ROOT = Path(__file__).parent
TORCH_BUILD = {"oldest": "+cpu"}  # the CPU build of the lowest torch; the newest comes as the index serves it


def lower_bounds() -> list[str]:
    """pyproject.toml's dependencies with every `>=X` lower bound turned into `==X` (the oldest supported).

    Raises:
        ValueError: for a dependency without a lower bound (the oldest would be undefined).
    """
    pins = []
    for requirement in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        found = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([^,;\s]+).*", requirement)
        if not found:
            raise ValueError(f"pyproject.toml: {requirement!r} has no lower bound (>=): the oldest is undefined")
        name, version = found.groups()
        pins.append(f"{name}=={version}{TORCH_BUILD['oldest'] if name == 'torch' else ''}")
    return pins


@nox.session(python="3.11", venv_backend="venv")
@nox.parametrize("versions", ["oldest", "newest"], ids=["oldest", "newest"])
def deps(session: nox.Session, versions: str) -> None:
    """tests/ against one end of the supported range (the claims are not run: they need the trained zoo)."""
    if versions == "oldest":
        session.install(*lower_bounds())
        session.install("--no-deps", "-e", ".")
    else:
        session.install("--upgrade", "--upgrade-strategy", "eager", "-e", ".")
    session.run("python", "-m", "pip", "freeze", "--exclude-editable", silent=False)
    session.run("python", "-m", "pytest", "tests", "-p", "no:cacheprovider", "-q", *session.posargs)
