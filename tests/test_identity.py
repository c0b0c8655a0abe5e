"""What was tested: the weights digest of a folder and of a seeded model, the build facts, the lock check."""

import hashlib
import json
from importlib.metadata import version

import pytest
import torch

from models.identity import SIDECAR, build_facts, folder_sha256, state_dict_sha256
from reports.run_facts import lock_differences
from tests.conftest import tiny_model


def test_a_folders_digest_is_the_sha256_of_its_weight_files_in_name_order(tmp_path):
    (tmp_path / "b.safetensors").write_bytes(b"second")
    (tmp_path / "a.bin").write_bytes(b"first")
    (tmp_path / "config.json").write_text("{}")  # not a weight file
    assert folder_sha256(tmp_path) == hashlib.sha256(b"firstsecond").hexdigest()


def test_the_digest_is_kept_beside_the_files_and_computed_again_when_one_changes(tmp_path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"one")
    first = folder_sha256(tmp_path)
    kept = json.loads((tmp_path / SIDECAR).read_text())
    assert kept["sha256"] == first and kept["files"]["model.safetensors"][0] == 3
    (tmp_path / SIDECAR).write_text(json.dumps({**kept, "sha256": "f" * 64}))  # a kept digest is read back ...
    assert folder_sha256(tmp_path) == "f" * 64
    weights.write_bytes(b"other weights")  # ... until the file changes (size and mtime)
    assert folder_sha256(tmp_path) == hashlib.sha256(b"other weights").hexdigest()


def test_a_same_size_replacement_with_the_old_mtime_is_hashed_again(tmp_path):
    """cp -a, rsync -a, tar and touch -r keep a file's mtime over other bytes: the kept digest must not be trusted."""
    import os
    import shutil
    import time

    folder, other = tmp_path / "model", tmp_path / "other"
    folder.mkdir(), other.mkdir()
    weights = folder / "model.safetensors"
    weights.write_bytes(b"weights A")
    (other / "model.safetensors").write_bytes(b"weights B")  # other weights of the same size
    first = folder_sha256(folder)
    before = weights.stat()
    time.sleep(0.05)  # past the kernel's coarse ctime tick (jiffies before Linux 6.13), as any real copy would be
    shutil.copyfile(other / "model.safetensors", weights)  # in place: same inode
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))  # touch -r: the old mtime back
    assert weights.stat().st_size == before.st_size and weights.stat().st_mtime_ns == before.st_mtime_ns
    assert folder_sha256(folder) == hashlib.sha256(b"weights B").hexdigest() != first
    replaced = tmp_path / "replacement"
    replaced.write_bytes(b"weights C")
    os.utime(replaced, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(replaced, weights)  # cp -a over it: a new inode with the old mtime
    assert folder_sha256(folder) == hashlib.sha256(b"weights C").hexdigest()


def test_a_folder_without_weights_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no \\*.safetensors or \\*.bin"):
        folder_sha256(tmp_path)


def test_a_seeded_models_digest_tells_seeds_apart_and_repeats_for_one_seed():
    one, again, other = tiny_model("gpt2", seed=0), tiny_model("gpt2", seed=0), tiny_model("gpt2", seed=1)
    assert state_dict_sha256(one) == state_dict_sha256(again) != state_dict_sha256(other)
    with torch.no_grad():
        next(again.parameters()).view(-1)[0] += 1e-6  # one weight, one ulp-scale change: another model
    assert state_dict_sha256(again) != state_dict_sha256(one)


def test_the_build_facts_name_the_cpu_and_its_vector_extension():
    facts = build_facts("cpu", torch.float32)
    assert facts["torch"] == torch.__version__ and facts["dtype"] == "float32" and facts["device"] == "cpu"
    assert facts["cpu"].endswith(f"({torch.backends.cpu.get_cpu_capability()})")


def test_versions_that_differ_from_the_lock_are_named(tmp_path):
    lock = tmp_path / "requirements.lock"
    installed = version("torch")  # the installed distribution's version (a CUDA wheel's torch.__version__ adds +cuNNN)
    lock.write_text(f"# header\ntorch=={installed} \\\n    --hash=sha256:00\n"
                    "pytest==0.0.1 \\\n    # via x\nnot-installed-anywhere==1.0\n")
    assert lock_differences(lock) == ["pytest " + __import__("pytest").__version__ + ", lock 0.0.1",
                                      "not-installed-anywhere absent, lock 1.0"]
    assert lock_differences(tmp_path / "missing.lock") == []
