"""Atomic writes: a reader sees the old file or the whole new one, never half of it (reports, caches, checkpoints).

Files and folders get the usual mode under the user's umask, so that others can read them (a CI's web server
serving report.html), as with any file ``open()`` makes.
"""

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def publish_mode(path: Path, directory: bool = False) -> None:
    """Give a file made by ``mkstemp``/``mkdtemp`` (0600/0700) the usual mode under the user's umask.

    Reports, corpus, tokenizers and checkpoints are meant to be read by others
    (a CI's web server serving report.html), like any file ``open()`` makes.
    """
    os.chmod(path, (0o777 if directory else 0o666) & ~_umask())


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one (mode as umask allows)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        publish_mode(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """UTF-8 text version of :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def replace_text_in_place(path: Path, text: str) -> Path:
    """Rewrite a user's existing file atomically as they made it: a symlink stays a link and its target is
    rewritten, and the file keeps its mode (a 0600 file stays 0600), unlike :func:`atomic_write_text`, which makes
    a new file under the umask.

    Returns:
        the file written (the link's target where ``path`` is a symlink).
    Raises:
        FileNotFoundError: if ``path`` (or its link's target) does not exist.
        OSError: if the file's folder cannot take the new file (read-only, full).
    """
    target = Path(path).resolve(strict=True)
    mode = target.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


@contextmanager
def atomic_directory(final: Path) -> Iterator[Path]:
    """Yield a scratch directory that becomes ``final`` only if the block succeeds.

    Raises:
        FileExistsError: if ``final`` already exists (nothing is overwritten).
    """
    if final.exists():
        raise FileExistsError(f"{final} already exists; remove it yourself if it should be rebuilt")
    final.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp"))
    try:
        yield scratch
        publish_mode(scratch, directory=True)
        os.replace(scratch, final)
    except BaseException:
        for child in sorted(scratch.rglob("*"), reverse=True):
            child.rmdir() if child.is_dir() else child.unlink()
        scratch.rmdir()
        raise
