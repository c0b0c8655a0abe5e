"""FFN outputs of a text's unique strings, computed once per model and text and cached like checkpoints (S4.6).

S4's similar-strings approximation compares a prompt's FFN output in each block
with that of every unique 10-character substring of the training text, at the
string's last position. Those outputs depend only on the model and the text,
so they are computed once and kept in the cache as a safetensors file of unit
vectors (the comparison is a cosine), float16: 863,952 strings × 4 blocks × 96
dimensions is 660 MB for tiny-w96.
"""

import hashlib
import os
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from latent_instruments.errors import require_finite
from latent_instruments.strings import StringTable
from models.cache import cache_root
from models.atomic_files import publish_mode
from models.capture import run_with_cache
from models.identity import config_sha256

FORMAT_VERSION = 2  # part of the cache key: bump when what is stored changes (2: the key holds the config digest)
STRINGS_PER_PASS = 2048  # strings per forward pass (10 tokens each: ~20k tokens)
STORED_DTYPE = torch.float16


def cache_path(weights_sha256: str, config: str, table: StringTable) -> Path:
    """Where the directions of ``table``'s strings under a model are kept.

    The key hashes the format version, the model's weights (``models.identity``: two builds of one recipe are
    two entries), the config that builds it (``config``, ``models.identity.config_sha256``: the same weights under
    an edited config.json compute other outputs; issue 74, case 2) and the strings themselves.
    """
    digest = hashlib.sha256(f"{FORMAT_VERSION}|{weights_sha256}|{config}|".encode())
    digest.update(table.strings.numpy().tobytes())
    return cache_root() / "string-ffn-outputs" / f"weights-{weights_sha256[:16]}-{digest.hexdigest()[:16]}.safetensors"


def compute_directions(subject, table: StringTable, progress=lambda it: it) -> torch.Tensor:
    """S4.6's table forward: every string of ``table`` through the model, ``STRINGS_PER_PASS`` at a time, its FFN
    outputs at the last position kept as unit rows; uncached (:func:`string_directions` caches it). Its bound is a
    bare forward pass of the same tokens (``benchmarks/test_similar_strings_speed.py``).

    Returns:
        (n_blocks, n_strings, d_model) float16 on the CPU.
    """
    n_blocks = len(subject.adapter.block_list(subject.model))
    out = torch.empty(n_blocks, len(table), subject.d_model, dtype=STORED_DTYPE)  # filled in place: one copy of the table
    for start in progress(range(0, len(table), STRINGS_PER_PASS)):
        ids = table.strings[start : start + STRINGS_PER_PASS].to(subject.input_device)
        cache = run_with_cache(subject.model, subject.adapter, ids, names=["blocks.*.hook_mlp_out"])
        last = torch.stack([cache[f"blocks.{b}.hook_mlp_out"][:, -1].float() for b in range(n_blocks)])
        out[:, start : start + ids.shape[0]] = (last / last.norm(dim=-1, keepdim=True).clamp_min(1e-12)).to("cpu", STORED_DTYPE)
    return out


def string_directions(subject, weights_sha256: str, table: StringTable, progress=lambda it: it) -> torch.Tensor:
    """Unit FFN-output directions of every string of ``table`` at its last position, per block; cached.

    Args:
        subject: the loaded model (``models.loading.LoadedModel``).
        weights_sha256: the model's weights digest (``LoadedModel.weights_sha256``); part of the cache key, with the
            digest of the config that builds it (``subject.model.config``).
        table: the unique strings (``latent_instruments.strings.StringTable``).
        progress: wraps the pass loop (e.g. ``tqdm``) when the outputs are computed.
    Returns:
        (n_blocks, n_strings, d_model) float16 on the CPU, unit rows (a zero output stays zero).
    Raises:
        NonFiniteError: if an FFN output is NaN or inf (nothing is cached then).
    """
    path = cache_path(weights_sha256, config_sha256(subject.model.config), table)
    if path.exists():
        return load_file(path)["directions"]
    directions = compute_directions(subject, table, progress)
    require_finite(directions, "FFN-output directions of the corpus strings")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        save_file({"directions": directions.contiguous()}, tmp)
        publish_mode(Path(tmp))
        os.replace(tmp, path)  # readers see no file or the whole file; a concurrent writer wrote the same bits
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return directions
