"""The one-line messages of a model that cannot be loaded (``models.errors.ModelLoadError``), apart from the
loader (``models.loading``): transformers' own errors reworded to name the file or tensor at fault and what to do,
and the tensors a folder's weight files and config.json do not share (issue 67, cases 1-2)."""

import pickle
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM

from models.errors import ModelLoadError


def load_error(source: str, what: str, err: Exception) -> ModelLoadError:
    """The error of transformers failing to load the ``what`` ("model", "config", "tokenizer") of a folder or hub
    id: remote code refused, or the folder's or hub's way out."""
    if "trust_remote_code" in str(err):  # transformers' refusal of a model or tokenizer class shipped as code
        return ModelLoadError(f"{source!r} needs remote code for its {what} (an auto_map field in its config.json or "
                              "tokenizer_config.json names a class shipped as code): remote code is never trusted "
                              "(trust_remote_code=False), so only architectures built into transformers load")
    where = "local folder" if Path(source).exists() else "hub id"
    return ModelLoadError(
        f"could not load the {what} of {source!r} ({where}): {err}\n"
        "A hub id needs the hub or a copy in the HF cache: download it where there is network and pass "
        "the folder instead. A folder must hold config.json, model.safetensors (or a .bin loadable with "
        "weights_only=True) and the tokenizer files; a corrupt file must be re-saved."
    )


def cause_of_type(err: BaseException, kind: type) -> BaseException | None:
    """The first exception of ``kind`` in ``err``'s chain of causes and contexts, or None."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, kind):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def unpickle_error(source: str, err: pickle.UnpicklingError) -> ModelLoadError:
    """The error of a ``.bin`` that ``torch.load(weights_only=True)`` refused or could not read, naming the file
    and, for a refusal, the conversion to safetensors."""
    folder = Path(source)
    bins = sorted(folder.glob("*.bin")) if folder.is_dir() else []
    where = (str(bins[0]) if len(bins) == 1 else f"{bins[0]} (one of {len(bins)} .bin files)") if bins else source
    cause = err.__cause__ or err.__context__
    reason = " ".join(str(cause if isinstance(cause, pickle.UnpicklingError) else err).split())
    if "Weights only load failed" not in str(err):
        return ModelLoadError(f"{where}: cannot be unpickled ({reason}); the file is corrupt or not a PyTorch "
                              "checkpoint: copy or save it again")
    return ModelLoadError(
        f"{where}: refused to unpickle ({reason}); weights are loaded only with weights_only=True, which runs "
        "no code from the file. Convert it to safetensors where you trust it: "
        f"safetensors.torch.save_file(torch.load({where if len(bins) == 1 else 'FILE'!r}, weights_only=False), "
        f"{str(folder / 'model.safetensors') if len(bins) == 1 else 'FILE.safetensors'!r})")


# buffers of old GPT-2 checkpoints that transformers reports as unexpected: constants, not weights
IGNORED_UNEXPECTED = ("attn.masked_bias",)


def refuse_unmatched_tensors(source: str, report: dict) -> None:
    """Refuse a model whose weight files and config.json do not match tensor for tensor (issue 67, cases 1-2).

    ``from_pretrained`` fills a tensor its config builds but the files lack with random values, and drops a
    tensor of the files that its config has no place for (a config with fewer blocks), saying so only in its
    loading report: either way the claims would be measured on another model than the one named.
    Tied weights (an ``lm_head`` tied to the input embedding) are not missing: transformers leaves them out.

    Args:
        source: the folder or hub id, for the message.
        report: ``from_pretrained(..., output_loading_info=True)``'s second value (``missing_keys``,
            ``unexpected_keys``: tensor names).

    Raises:
        ModelLoadError: naming the missing and the unused tensors (the first 8 of each, then a count).
    """
    def listed(names: set[str]) -> str:
        names = sorted(names)
        return ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")

    missing = set(report.get("missing_keys") or ())
    unused = {k for k in report.get("unexpected_keys") or () if not k.endswith(IGNORED_UNEXPECTED)}
    problems = ([f"{len(missing)} tensor(s) its config.json builds are not in its weight files ({listed(missing)}); "
                 "transformers would fill them with random values"] if missing else []) + \
               ([f"{len(unused)} tensor(s) of its weight files have no place in the model its config.json builds "
                 f"({listed(unused)}); transformers would drop them"] if unused else [])
    if problems:
        raise ModelLoadError(f"{source!r}: " + "; ".join(problems) + ". The weights and config.json come from "
                             "different models, or a file was edited: save the model again with save_pretrained")


def shape_mismatches(source: str) -> list[str]:
    """"NAME: file (a, b), config (c, d)" for each tensor of a folder's safetensors whose shape is not the one its
    config.json builds (the model built on the meta device: nothing is allocated); [] where it cannot tell."""
    from safetensors import safe_open

    files = sorted(Path(source).glob("*.safetensors")) if Path(source).is_dir() else []
    if not files:
        return []
    try:
        with torch.device("meta"):
            expected = {k: tuple(v.shape) for k, v in AutoModelForCausalLM.from_config(
                AutoConfig.from_pretrained(source, trust_remote_code=False)).state_dict().items()}
        out = []
        for file in files:
            with safe_open(str(file), framework="pt") as f:
                for name in f.keys():
                    shape = tuple(f.get_slice(name).get_shape())
                    if name in expected and expected[name] != shape:
                        out.append(f"{name}: file {shape}, config {expected[name]}")
        return out
    except Exception:  # noqa: BLE001 - only a better message; the loader's own error stands otherwise
        return []
