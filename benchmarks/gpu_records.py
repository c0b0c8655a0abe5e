"""What a ``make gpu-check`` call keeps of its work (``benchmarks.gpu_check``): the merged run's summary, the
inversion benchmark's speed-up, and the trained models' weights as Hugging Face folders small enough to fetch.

A lent GPU's trainings used to stay on the machine: no CPU-only machine can test S4's recipe, whose training takes
hours on 2 cores. So each trained model is saved under ``weights/NAME/`` of the call's folder in shards of at most
``SHARD`` (``save_pretrained(max_shard_size=...)``), with its tokenizer, and its sha256 (``models.identity
.folder_sha256``, what a run records for a model loaded from that folder) goes into ``timings.json``; the folders
stay outside the tarball. ``pytest claims -m gpu --model <call folder>/weights/NAME`` then tests the same weights on
any machine.
"""

import json
import shutil
from pathlib import Path

SHARD = "15MB"  # the largest weight file of an exported folder: a few files per model to fetch


def summarise(results: Path) -> dict:
    """From a merged results.json: seconds per family and per claim, S4.6's, the models' digests, the outcomes."""
    doc = json.loads(results.read_text())
    families: dict[str, float] = {}
    claims: dict[str, float] = {}
    outcomes: dict[str, dict[str, str]] = {}
    for r in doc["records"]:
        seconds = r.get("wall_seconds") or 0.0
        families[r["claim"].split(".")[0]] = families.get(r["claim"].split(".")[0], 0.0) + seconds
        claims[r["claim"]] = claims.get(r["claim"], 0.0) + seconds
        key = r["function"] + "".join(f"[{v}]" for v in r.get("params", {}).values())
        outcomes.setdefault(r["claim"], {})[f"{r['model']} {key}"] = r["outcome"]
    models = {name: {k: m.get(k) for k in ("role", "weights_sha256", "train_seconds", "final_val_loss", "build",
                                           "trained_on", "error")}
              for name, m in doc.get("models", {}).items()}
    return {"run_id": doc["run_id"], "device": doc.get("device"), "versions": doc.get("versions"),
            "family_seconds": families, "claim_seconds": claims, "s4_6_seconds": claims.get("S4.6"),
            "outcomes": outcomes, "models": models}


def inversion_speed(path: Path) -> dict:
    """{shape: speedup, steps per second batched and looped} from the benchmark's JSON; {} without it."""
    if not path.exists():
        return {}
    speed: dict[str, dict] = {}
    for b in json.loads(path.read_text()).get("benchmarks", []):
        info = b.get("extra_info", {})
        entry = speed.setdefault(info.get("shape", b["name"]), {})
        for key in ("speedup", "ceiling", "overhead", "prompt_steps_per_second"):
            if key in info:
                entry[f"{info.get('kind')} {key}" if key == "prompt_steps_per_second" else key] = info[key]
    return speed


def export_weights(names: list[str], out: Path) -> dict[str, dict]:
    """Save each trained zoo model of ``names`` as a Hugging Face folder under ``out/weights/`` (shards of at most
    ``SHARD``, its tokenizer and config beside them).

    Args:
        names: zoo names of trained models whose checkpoints this machine has (the call's trainings).
        out: the call's folder.
    Returns:
        {name: {"folder": path relative to ``out``, "sha256": the folder's weights digest, "files": weight files,
        "largest_file_bytes": ...}}, or {name: {"error": ...}} for a model that could not be exported.
    """
    from transformers import AutoModelForCausalLM

    from models.corpus import load_corpus
    from models.identity import folder_sha256, weight_files
    from models.shipped import checkpoint
    from models.zoo import resolve

    exported: dict[str, dict] = {}
    for name in names:
        dest = out / "weights" / name
        try:
            folder, _ = checkpoint(resolve(name).recipe, load_corpus(), "shipped", "cpu")  # trained: found, not trained
            model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=False)
            model.save_pretrained(dest, max_shard_size=SHARD, safe_serialization=True)
            for extra in folder.iterdir():  # tokenizer and training facts; the weights are the shards just written
                if extra.is_file() and extra.suffix not in (".safetensors", ".bin") and not (dest / extra.name).exists():
                    shutil.copy2(extra, dest / extra.name)
            files = weight_files(dest)
            exported[name] = {"folder": str(dest.relative_to(out)), "sha256": folder_sha256(dest),
                              "files": [f.name for f in files],
                              "largest_file_bytes": max(f.stat().st_size for f in files)}
        except Exception as err:  # noqa: BLE001 - one model's export must not lose the others' or the timings
            exported[name] = {"error": f"{type(err).__name__}: {err}"}
    return exported
