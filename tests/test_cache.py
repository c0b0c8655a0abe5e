"""The on-disk cache: atomic writes that others can read, as any file the user's umask allows."""

import os
import stat

from models.atomic_files import atomic_directory, atomic_write_text


def test_cache_files_and_checkpoint_folders_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "corpus" / "text.txt", "hello")
        with atomic_directory(tmp_path / "checkpoints" / "m-0") as scratch:
            (scratch / "config.json").write_text("{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "corpus" / "text.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "checkpoints" / "m-0").stat().st_mode) == 0o755


def test_a_stricter_umask_is_respected(tmp_path):
    old = os.umask(0o077)
    try:
        atomic_write_text(tmp_path / "private.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "private.txt").stat().st_mode) == 0o600
