"""Loading a zoo entry: train or read a checkpoint, build a random init, or load a Hugging Face model.

Weights are read from safetensors (``use_safetensors=True`` for our checkpoints) or, for a hub model or folder
that has only a pickle, with ``weights_only=True``; remote code is never trusted. Every failure is a
:class:`models.errors.ModelLoadError` of one line naming the file or setting.
"""

import json
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PreTrainedModel
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

from latent_instruments.errors import NonFiniteError, require_finite
from models.adapters import Adapter, adapter_for
from models.corpus import Corpus
from models.errors import ModelLoadError
from models.load_errors import (cause_of_type, load_error, refuse_unmatched_tensors, shape_mismatches,
                                 unpickle_error)
from models.identity import ambiguous_weights, folder_sha256, state_dict_sha256
from models.tokenization import HFTokenizer, hf_tokenizer_files, tokenizer_from_json, train_bpe
from models.shipped import checkpoint, is_shipped, plateau_of
from models.trainer import checkpoint_dir, unreadable_safetensors
from models.zoo import REFERENCES, ZooEntry


@dataclass
class LoadedModel:
    """A model ready for capture.

    Attributes:
        entry: its zoo entry.
        model: HF causal LM, eval mode, on its device and dtype.
        adapter: canonical-name adapter for its architecture.
        tokenizer: CharTokenizer, BPETokenizer or HFTokenizer.
        source: the folder, config or hub id it was made from.
        load_seconds: wall time to train-or-load and move it, in seconds.
        info: the trainer's loss_curve.json for a trained model (curve, train_seconds, trained_on), else {}.
        weights_sha256: sha256 (hex) of its weights: over the weight files of a folder in file-name order, or
            over the state dict of a model built from a seed (``models.identity``).
        zoo_build: for a trained zoo model and its twin, where its checkpoint came from: "shipped" (the weights
            committed in ``models/shipped/``, digest-checked) or "local" (trained on this machine, cached); ""
            for other models.
    """

    entry: ZooEntry
    model: PreTrainedModel
    adapter: Adapter
    tokenizer: object
    source: str
    load_seconds: float = 0.0
    info: dict = field(default_factory=dict)
    weights_sha256: str = ""
    zoo_build: str = ""

    @property
    def name(self) -> str:
        """Its zoo name."""
        return self.entry.name

    @property
    def n_params(self) -> int:
        """Number of parameters (tied weights counted once)."""
        return sum(p.numel() for p in self.model.parameters())

    @property
    def d_model(self) -> int:
        """Width of the residual stream."""
        return self.model.get_input_embeddings().weight.shape[1]

    @property
    def input_device(self) -> torch.device:
        """Where token ids go: the input embedding's device (the CPU where accelerate offloaded it)."""
        device = self.model.get_input_embeddings().weight.device
        return torch.device("cpu") if device.type == "meta" else device

    @property
    def context(self) -> int:
        """Longest usable sequence (learned-position models cannot go past it)."""
        return int(getattr(self.model.config, "n_positions", None) or self.model.config.max_position_embeddings)


LOAD_ERRORS = (OSError, ValueError, RuntimeError, SafetensorError)
_FINITE_WEIGHTS: set[str] = set()  # weights digests whose every tensor was found finite in this process


def check_finite_weights(model: PreTrainedModel, weights_sha256: str, source: str) -> None:
    """Every floating-point weight and buffer of ``model`` must be finite; checked once per weights digest.

    A NaN in a weight the prompts never reach (an output-head row, a rare token's embedding) passes the residual
    identity and can still decide a claim, so the weights themselves are read (piece by piece, no copy).

    Raises:
        ModelLoadError: naming the tensor, how many of its values are NaN or inf, and the source.
    """
    if weights_sha256 in _FINITE_WEIGHTS:
        return
    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and tensor.device.type != "meta":
            try:
                require_finite(tensor, f"weight {name}")
            except NonFiniteError:
                bad = int((~torch.isfinite(tensor.detach())).sum())
                raise ModelLoadError(f"{source}: weight {name} holds {bad} non-finite value(s) (NaN or inf) out of "
                                     f"{tensor.numel()}: the checkpoint is damaged and no claim can use it; save the "
                                     "model again, or test another checkpoint") from None
    _FINITE_WEIGHTS.add(weights_sha256)


def needs_training(entry: ZooEntry, corpus: Corpus, build: str = "shipped") -> bool:
    """Whether :func:`load` will train ``entry`` first: a zoo recipe (or its twin) that is not shipped
    (``models.shipped``; in a ``build`` "local" run none is) and whose checkpoint is not cached."""
    return (entry.recipe is not None and not is_shipped(entry.recipe, corpus, build)
            and not checkpoint_dir(entry.recipe, corpus).exists())


def _hf_model(source: str, placement: dict | None = None, **kwargs) -> PreTrainedModel:
    try:
        model, report = AutoModelForCausalLM.from_pretrained(
            source, trust_remote_code=False, attn_implementation="eager", output_loading_info=True,
            **(placement or {}), **kwargs
        )
    except pickle.UnpicklingError as err:  # a .bin whose pickle torch.load(weights_only=True) refused
        raise unpickle_error(source, err) from None
    except LOAD_ERRORS as err:
        refused = cause_of_type(err, pickle.UnpicklingError)  # transformers 4.x wraps it in an OSError
        if refused is not None:
            raise unpickle_error(source, refused) from None
        mismatched = shape_mismatches(source) if "mismatched_sizes" in str(err) else []
        if mismatched:  # transformers' own message points at a report printed to the terminal, not the record
            raise ModelLoadError(f"{source!r}: tensors of the wrong shape for its config.json: "
                                 + "; ".join(mismatched) + ". The weights and config.json come from different "
                                 "models, or a file was edited: save the model again with save_pretrained") from None
        raise load_error(source, "model", err) from err
    refuse_unmatched_tensors(source, report)
    return model


def _hf_config(source: str):
    try:
        return AutoConfig.from_pretrained(source, trust_remote_code=False)
    except LOAD_ERRORS as err:
        raise load_error(source, "config", err) from err


def _check_hf_folder(folder: Path, weights: bool) -> None:
    """One-line errors for what would otherwise fail late or vaguely: remote code, a corrupt
    safetensors file or a single weights file beside a shard index (``weights``: the folder's weights are to be
    loaded; ``models.identity.ambiguous_weights``), no tokenizer files."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except OSError:
        config = {}  # a missing config.json: transformers names it below
    except ValueError as err:  # not JSON (or not UTF-8): say so, before the tokenizer's load fails on it vaguely
        raise ModelLoadError(f"{folder / 'config.json'} is not JSON ({err}): save the model again with "
                             "model.save_pretrained(folder), or repair the file") from None
    if isinstance(config, dict) and "auto_map" in config and config.get("model_type") not in CONFIG_MAPPING:
        raise ModelLoadError(
            f"{folder / 'config.json'}: model_type {config.get('model_type')!r} is not built into transformers and "
            f"its auto_map field ({', '.join(sorted(config['auto_map']))}) points at code in the folder: remote code "
            "is never trusted (trust_remote_code=False), so this model cannot be loaded")
    if weights and (why := ambiguous_weights(folder)):
        raise ModelLoadError(why)
    for path in sorted(folder.glob("*.safetensors")) if weights else ():
        if why := unreadable_safetensors(path):
            raise ModelLoadError(f"could not load {path}: it is truncated or not a safetensors file ({why}); "
                                 "copy it again, or save the model again with model.save_pretrained(folder)")
    if not hf_tokenizer_files(folder):
        raise ModelLoadError(
            f"{folder}: no tokenizer files (tokenizer.json, tokenizer_config.json or a vocabulary file such as "
            "vocab.json or tokenizer.model); save the model's tokenizer there with tokenizer.save_pretrained(folder)")


def _check_vocabulary(model: PreTrainedModel, tokenizer, source: str, sample: str) -> None:
    """The tokenizer's ids must index the model's input embedding, and it must make tokens of text."""
    rows = model.get_input_embeddings().weight.shape[0]
    if tokenizer.vocab_size > rows:
        raise ModelLoadError(
            f"{source}: the tokenizer has {tokenizer.vocab_size} tokens but the model's vocabulary is {rows} "
            f"(input embedding rows; config.vocab_size {getattr(model.config, 'vocab_size', None)}): token ids past "
            f"{rows - 1} would index outside it. Save the tokenizer the model was trained with in the folder "
            "(tokenizer.save_pretrained(folder))")
    if sample and not tokenizer.encode(sample):
        raise ModelLoadError(f"{source}: its tokenizer ({tokenizer.vocab_size} tokens) encodes text to no tokens; "
                             "save the model's own tokenizer there with tokenizer.save_pretrained(folder)")


def from_config(config, seed: int) -> PreTrainedModel:
    """A random-init causal LM of ``config`` (eager attention), its weights drawn under ``torch.manual_seed(seed)``."""
    torch.manual_seed(seed)
    config._attn_implementation = "eager"
    return AutoModelForCausalLM.from_config(config, trust_remote_code=False, attn_implementation="eager")


def load(entry: ZooEntry, corpus: Corpus, device: str, dtype: torch.dtype, seed: int,
         device_map: str | None = None, max_memory: dict | None = None, offload_folder: str | None = None,
         build: str = "shipped") -> LoadedModel:
    """Build, train (if not cached) or load one zoo entry.

    Args:
        entry: from :func:`resolve`; not a group.
        corpus: trains trained models and the BPE of reference models.
        device, dtype: where and in what precision the model runs.
        seed: seeds random init of reference models and of hf models' twins. A zoo model's twin is drawn at its
            recipe's training seed instead (``Recipe.seed``): the very weights its training started from.
        device_map: for models loaded from a folder (trained, hf): accelerate's placement, e.g. "auto",
            which splits a model too large for one device over the GPUs, the CPU and ``offload_folder``;
            None puts the whole model on ``device``. Random-init models always go to ``device``.
        max_memory: accelerate's per-device limits, e.g. {"cpu": "200MB"} (with ``device_map``).
        offload_folder: where accelerate may offload weights to disk (with ``device_map``).
        build: for trained zoo models (``--zoo-build``): "shipped", the committed weights checked against their
            manifest (``models.shipped``), where the recipe is shipped; "local", this machine's training (the
            cache, trained on first use).
    Raises:
        ModelLoadError: missing, corrupt, damaged (cached) or unreachable checkpoint; a shipped file whose sha256
            is not the manifest's (naming the file and both digests); a folder without
            tokenizer files; a weight holding NaN or inf; a tokenizer larger than the model's vocabulary; a pickle that
            ``weights_only=True`` refuses; a model that needs remote code. One line, naming the file
            or setting.
        UnsupportedArchitectureError: no adapter for the architecture.
        ValueError: for a group.
    """
    started = time.perf_counter()
    info: dict = {}
    placement = {"device_map": device_map, "max_memory": max_memory, "offload_folder": offload_folder,
                 "dtype": dtype} if device_map else None
    if entry.is_group:
        raise ValueError(f"{entry.name} is a group of models; load its members")
    pinned_sha256, zoo_build = None, ""
    if entry.recipe is not None:  # trained, or the twin of a trained model
        folder, pinned_sha256 = checkpoint(entry.recipe, corpus, build, device)
        zoo_build = "shipped" if pinned_sha256 else "local"
        tokenizer = tokenizer_from_json((folder / "tokenizer.json").read_text())
        if entry.role == "trained":
            info = json.loads((folder / "loss_curve.json").read_text())
            info["plateau"] = plateau_of(entry.recipe.name) if pinned_sha256 else None  # the manifest's (issue 77)
            model, source = _hf_model(str(folder), placement, use_safetensors=True), str(folder)
        else:
            # the twin is the training's own starting point: the trainer's init, drawn at the recipe's seed
            model = from_config(AutoConfig.from_pretrained(folder, trust_remote_code=False), entry.recipe.seed)
            source = f"config of {folder}"
    elif entry.source in {str(p) for p in REFERENCES.values()}:  # a reference, or its (identical) twin
        values = json.loads(Path(entry.source).read_text())
        config = AutoConfig.for_model(values.pop("model_type"), **values)
        model, source, tokenizer = from_config(config, seed), entry.source, train_bpe(corpus)
    else:  # hf, or the twin of an hf model
        hf_id = entry.source
        if Path(hf_id).is_dir():
            _check_hf_folder(Path(hf_id), weights=entry.role == "hf")
        try:
            tokenizer = HFTokenizer(AutoTokenizer.from_pretrained(hf_id, trust_remote_code=False))
        except LOAD_ERRORS as err:
            raise load_error(hf_id, "tokenizer", err) from err
        except (KeyError, TypeError, AttributeError) as err:  # a tokenizer file that is JSON, but not a tokenizer
            files = ", ".join(p.name for p in hf_tokenizer_files(Path(hf_id))) if Path(hf_id).is_dir() else hf_id
            raise ModelLoadError(
                f"{hf_id}: its tokenizer files ({files}) are not a tokenizer transformers can read (missing or "
                f"wrong field {err}); tokenizer.json must be a `tokenizers` file as tokenizer.save_pretrained(folder) "
                "writes it: save the model's own tokenizer there") from None
        if entry.role == "hf":
            model = _hf_model(hf_id, placement)
        else:
            model = from_config(_hf_config(hf_id), seed)
        source = hf_id
        _check_vocabulary(model, tokenizer, hf_id, corpus.validation[:1000])
    adapter = adapter_for(model)
    # what is tested: the weight files of the folder the model was loaded from, else its state dict as built
    from_folder = entry.role in ("trained", "hf") and Path(source).is_dir()
    if entry.role == "trained" and pinned_sha256:
        weights_sha256 = pinned_sha256  # verified against the manifest, file by file
    else:
        weights_sha256 = folder_sha256(Path(source)) if from_folder else state_dict_sha256(model)
    check_finite_weights(model, weights_sha256, source)
    if getattr(model, "hf_device_map", None) is None:  # accelerate placed a device_map model already
        model = model.to(device=device, dtype=dtype)
    model.eval()
    return LoadedModel(entry, model, adapter, tokenizer, source, time.perf_counter() - started, info, weights_sha256,
                       zoo_build)
