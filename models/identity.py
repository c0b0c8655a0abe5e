"""What was tested: the sha256 of a model's weights, and the facts of the build that ran it.

A zoo name and its fingerprint (``models.zoo.fingerprint``) name a recipe; two trainings of one recipe on
different CPUs (AVX2 against AVX-512 kernels) give different weights under the same name. The weights digest
names the weights themselves: results.json records it for every model, baselines compare it, and caches
derived from weights (S4.6's string outputs) are keyed by it.

- A model loaded from a folder: sha256 over the weight files it was loaded from (:func:`weight_files`: the
  files ``from_pretrained`` reads, not a stray ``.bin`` beside them) in file-name order, the bytes of one file after the other. It is computed once and kept beside the files in
  ``.latent-claims-weights.json`` with each file's size, modification time, inode and status-change time, so
  later runs read it back; a file changed since is hashed again. The modification time alone can be forged by a
  copy (``cp -a``, ``rsync -a``, ``touch -r`` keep it over other bytes), the status-change time cannot: writing
  or replacing a file sets it to now.
- A model built from a seed (a random-init reference, an untrained twin): sha256 over its state dict, tensor by
  tensor in name order (name, dtype, shape, then the raw bytes), on the CPU.

The same weights under another ``config.json`` (another ``activation_function``, ``layer_norm_epsilon``) are another
model: :func:`config_sha256` names the config that built it, beside the weights digest (issue 74, case 2);
``--baseline`` compares both, and a folder's fingerprint (what ledger entries bind, ``models.zoo.fingerprint``) joins
the two (:func:`folder_config_sha256`). The weights digest stays what it was, so baselines that bind it still read.
"""

import hashlib
import json
import platform
from pathlib import Path

import torch
from torch import nn

from models.atomic_files import atomic_write_text

# beside the weight files: {"files": {name: [size, mtime_ns, inode, ctime_ns]}, "sha256": hex}
SIDECAR = ".latent-claims-weights.json"
WEIGHT_PATTERNS = ("*.safetensors", "*.bin")


# the files transformers' from_pretrained reads, in its order of preference: one file, else an index of shards
LOADED_FIRST = (("model.safetensors", "model.safetensors.index.json"), ("pytorch_model.bin", "pytorch_model.bin.index.json"))


def weight_files(folder: Path) -> list[Path]:
    """The weight files a model is loaded from, in file-name order (what :func:`folder_sha256` hashes).

    As ``from_pretrained`` chooses (issue 67, case 10): the file (or index) ``config.json``'s ``transformers_weights``
    names, else ``model.safetensors``, else the shards its index names, else ``pytorch_model.bin``, else the shards of
    that index; so a ``.bin`` lying beside a ``model.safetensors``
    is not part of what was tested. A folder with none of these names: every ``*.safetensors`` and ``*.bin``.

    Raises:
        ValueError: if an index file is not JSON with a ``weight_map``.
    """
    try:  # transformers reads the file config.json names first (its ``transformers_weights``)
        named = json.loads((folder / "config.json").read_text()).get("transformers_weights")
    except (OSError, ValueError, AttributeError):
        named = None
    preferred = ((named, named),) if isinstance(named, str) and named else ()
    for single, index in (*preferred, *LOADED_FIRST):
        if single.endswith(".json"):  # an index named by config.json
            single = ""
        if single and (folder / single).is_file():
            return [folder / single]
        if (folder / index).is_file():
            try:
                shards = set(json.loads((folder / index).read_text())["weight_map"].values())
            except (ValueError, KeyError, TypeError, AttributeError) as err:
                raise ValueError(f"{folder / index}: not a weight index (JSON with a 'weight_map'): {err}") from None
            return sorted((folder / name for name in shards), key=lambda p: p.name)
    return sorted({p for pattern in WEIGHT_PATTERNS for p in folder.glob(pattern)}, key=lambda p: p.name)


def ambiguous_weights(folder: Path) -> str:
    """Why a folder's weights are ambiguous (issue 74, case 11), or "": a single weights file (``model.safetensors``,
    ``pytorch_model.bin``) beside a shard index (``*.index.json``). ``from_pretrained`` loads the single file and
    never reads the shards, which may be other weights: measured without a word, the folder would be the wrong model.
    """
    singles = [name for name, _ in LOADED_FIRST if (folder / name).is_file()]
    indexes = [index for _, index in LOADED_FIRST if (folder / index).is_file()]
    if not (singles and indexes):
        return ""
    return (f"{folder}: holds both {singles[0]} and {indexes[0]} (a sharded checkpoint): transformers would load "
            f"{singles[0]} and never read the shards, which may be other weights; remove the one that is not this "
            "model (or move it to a folder of its own)")


def _stamp(files: list[Path]) -> dict[str, list[int]]:
    """What a file's kept digest is valid for: size, mtime, inode and ctime (a copy can forge the mtime, not the
    ctime: replacing or writing the file sets it)."""
    stats = {p.name: p.stat() for p in files}
    return {name: [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns] for name, st in stats.items()}


def _feed(digest, path: Path) -> None:
    """Add a file's bytes to a running sha256, read in 16 MiB pieces."""
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 24), b""):
            digest.update(chunk)


def file_sha256(path: Path) -> str:
    """sha256 (hex) of one file's bytes (the shipped zoo's manifest pins each file by it)."""
    digest = hashlib.sha256()
    _feed(digest, path)
    return digest.hexdigest()


def folder_sha256(folder: Path) -> str:
    """sha256 (hex, 64 characters) over a folder's weight files, read back from the sidecar where it is current.

    The sidecar is written atomically where the folder is writable; where it is not, the digest is computed
    and not kept (read-only folders cost the hashing on every run, about a second per GB).

    Raises:
        FileNotFoundError: if the folder holds no ``*.safetensors`` or ``*.bin`` file.
    """
    files = weight_files(folder)
    if not files:
        raise FileNotFoundError(f"{folder}: no *.safetensors or *.bin weight files to hash")
    stamp, sidecar = _stamp(files), folder / SIDECAR
    try:
        kept = json.loads(sidecar.read_text())
        if kept.get("files") == stamp and len(kept.get("sha256", "")) == 64:
            return kept["sha256"]
    except (OSError, ValueError, AttributeError):
        pass
    digest = hashlib.sha256()
    for path in files:
        _feed(digest, path)
    try:
        atomic_write_text(sidecar, json.dumps({"files": stamp, "sha256": digest.hexdigest()}, indent=1))
    except OSError:
        pass  # a read-only folder: the digest is still right, only not kept
    return digest.hexdigest()


# config keys that do not change what the model computes: where it was read from, which library wrote it, the dtype
# it runs in (a build fact), what a forward returns, and transformers' private settings (any key starting with "_")
CONFIG_KEYS_NOT_IDENTITY = frozenset({"_name_or_path", "transformers_version", "torch_dtype", "dtype", "architectures",
                                      "output_attentions", "output_hidden_states", "return_dict", "use_cache"})


def config_sha256(config) -> str:
    """sha256 (hex, 64 characters) of the config that builds a model: its ``to_dict()`` as JSON with sorted keys,
    less :data:`CONFIG_KEYS_NOT_IDENTITY` and private keys, so a config.json edited under the same weights
    (``activation_function`` → gelu_new) gets another digest and a copy of the folder elsewhere the same.

    Args:
        config: a transformers ``PretrainedConfig`` (the loaded model's ``model.config``).
    Raises:
        TypeError: if a config value is not JSON-serialisable (not from a transformers config).
    """
    facts = {k: v for k, v in config.to_dict().items() if k not in CONFIG_KEYS_NOT_IDENTITY and not k.startswith("_")}
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def folder_config_sha256(folder: Path) -> str:
    """:func:`config_sha256` of ``folder``'s config.json as transformers reads it (``AutoConfig``, remote code never
    trusted): the digest results.json records for the model once loaded. Where transformers cannot read the file (an
    unknown ``model_type``; loading then fails with its own message), the sha256 of its bytes; "no-config" where
    there is no config.json. Issue 74, case 2: ledger entries bind a folder's weights and its config together."""
    from transformers import AutoConfig

    path = folder / "config.json"
    if not path.is_file():
        return "no-config"
    try:
        return config_sha256(AutoConfig.from_pretrained(folder, trust_remote_code=False))
    except (OSError, ValueError, KeyError, TypeError):
        return file_sha256(path)


def folder_identity(folder: Path) -> str | None:
    """What a model folder holds, "WEIGHTS|CONFIG": its weights digest (:func:`folder_sha256`) and config.json's
    sha256, so that byte-identical copies in two folders are one model (issue 74, case 16) and a copy whose
    config.json differs is another; None where the folder has no weight files or no config.json."""
    try:
        return f"{folder_sha256(folder)}|{file_sha256(folder / 'config.json')}"
    except (OSError, ValueError):
        return None


def state_dict_sha256(model: nn.Module) -> str:
    """sha256 (hex) over a model's state dict: for each tensor in name order, its name, dtype and shape, then
    its bytes (on the CPU, contiguous). Meta tensors (weights offloaded by accelerate) hash as their shape only.
    """
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        if tensor.device.type != "meta":
            digest.update(tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def build_facts(device: torch.device | str, dtype: torch.dtype) -> dict[str, str]:
    """The facts that make two runs of the same weights give different numbers.

    Returns:
        {"torch": version, "device": e.g. "cpu" or "cuda:0", "dtype": e.g. "float32", and "cpu": the CPU model
        with the vector extension torch's kernels use (``torch.backends.cpu.get_cpu_capability()``: "AVX2",
        "AVX512", ...), or "gpu": the GPU's name on CUDA}.
    """
    device = torch.device(device)
    facts = {"torch": torch.__version__, "device": str(device), "dtype": str(dtype).removeprefix("torch.")}
    if device.type == "cuda":
        facts["gpu"] = torch.cuda.get_device_name(device)
    else:
        facts["cpu"] = f"{_cpu_model()} ({torch.backends.cpu.get_cpu_capability()})"
    return facts
