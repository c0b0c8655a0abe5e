"""The model zoo: names, roles, groups, fingerprints and loaders.

Names (``--model NAME``, repeatable; ``--zoo tiny|full`` picks the default set):

    tiny-w96, tiny-w128, tiny-w192   trained char-level ladder, profile tiny (main: tiny-w96)
    tiny-bpe-w96                     trained on the corpus' 4096-token byte-level BPE, profile tiny
    s4-w192, s4-w384, s4-w768        trained char-level ladder, profile full (s4-w384 is S4's recipe)
    s4-bpe-w384                      S4's recipe on the byte-level BPE, profile full
    NAME:untrained                   the untrained twin of any model: same config, seeded random init
    ref-opt-125m, ref-gpt2-small,    random-init reference architectures from models/configs/
    ref-pythia-160m, ref-llama-small
    PROFILE-ladder                   group: the size ladder, and its ends at a second seed (S3.5)
    PROFILE-siblings                 group: the main recipe at S4's four seeds (S4.7)
    PROFILE-depths                   group: the main recipe at other depths
    PROFILE-mixer                    group: the main model and a masked mixer of its recipe (S3.12)
    hf:ID, ORG/NAME, or a folder     any Hugging Face causal LM: hub id or local HF folder

Roles: "trained", "untrained", "reference", "hf", and the group kinds
"ladder", "siblings", "depths", "mixer". A group is one subject made of member models;
its members are loaded, captured and freed like any model.
"""

import hashlib
import json
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PreTrainedModel
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

from models.adapters import Adapter, adapter_for
from models.corpus import Corpus
from models.identity import folder_sha256, state_dict_sha256
from models.errors import ModelLoadError  # defined there (the trainer raises it too); import it from here
from models.recipes import GROUP_RECIPES, PROFILES, Recipe, seed_builds
from models.tokenization import HFTokenizer, hf_tokenizer_files, tokenizer_from_json, train_bpe
from models.trainer import checkpoint_dir, train, unreadable_safetensors

CONFIGS = Path(__file__).parent / "configs"
REFERENCES = {f"ref-{p.stem}": p for p in sorted(CONFIGS.glob("*.json"))}
TWIN_SUFFIX = ":untrained"
MODEL_ROLES = ("trained", "untrained", "reference", "hf")
GROUP_KINDS = tuple(GROUP_RECIPES)  # "ladder", "siblings", "depths"
ROLES = MODEL_ROLES + GROUP_KINDS


class UnknownModelError(ValueError):
    """A --model name that is neither a zoo name nor a HF id or folder."""


@dataclass(frozen=True)
class ZooEntry:
    """One subject a claim can run on.

    Attributes:
        name: the zoo name, as reports show it.
        role: one of ``ROLES``.
        recipe: the training recipe for trained models (and their twins).
        source: HF id, folder or config path for "hf"/"reference" entries.
        members: for a group, its members' names in the group's order (narrow to wide, shallow to deep).
    """

    name: str
    role: str
    recipe: Recipe | None = None
    source: str | None = None
    members: tuple[str, ...] = ()

    @property
    def twin(self) -> str:
        """The name of this model's untrained twin."""
        return self.name + TWIN_SUFFIX

    @property
    def trained(self) -> str | None:
        """The trained model an untrained twin was drawn beside (its name without ``:untrained``); None for any
        other role: a random-init reference has no trained counterpart here (run the twin of the trained
        checkpoint instead, ``--model FOLDER:untrained``)."""
        return self.name.removesuffix(TWIN_SUFFIX) if self.role == "untrained" else None

    @property
    def is_group(self) -> bool:
        """Whether this subject is a group of models (``GROUP_KINDS``)."""
        return self.role in GROUP_KINDS


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
    """

    entry: ZooEntry
    model: PreTrainedModel
    adapter: Adapter
    tokenizer: object
    source: str
    load_seconds: float = 0.0
    info: dict = field(default_factory=dict)
    weights_sha256: str = ""

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


def _zoo_entries() -> dict[str, ZooEntry]:
    entries: dict[str, ZooEntry] = {r.name: ZooEntry(r.name, "trained", recipe=r) for rs in PROFILES.values() for r in rs}
    for kind, profiles in GROUP_RECIPES.items():
        for profile, recipes in profiles.items():
            for recipe in recipes:
                entries[recipe.name] = ZooEntry(recipe.name, "trained", recipe=recipe)
            entries[f"{profile}-{kind}"] = ZooEntry(f"{profile}-{kind}", kind, members=tuple(r.name for r in recipes))
    for name, path in REFERENCES.items():
        entries[name] = ZooEntry(name, "reference", source=str(path))
    return entries


ZOO = _zoo_entries()


def valid_names() -> list[str]:
    """Every zoo name, for error messages and --help."""
    return sorted(ZOO) + ["NAME:untrained", "hf:ID", "ORG/NAME", "/path/to/hf-folder"]


def resolve(name: str) -> ZooEntry:
    """The zoo entry for a --model name.

    Raises:
        UnknownModelError: listing the valid names.
        ModelLoadError: for a path that is not a HF model folder.
    """
    if name.endswith(TWIN_SUFFIX):
        base = resolve(name[: -len(TWIN_SUFFIX)])
        if base.is_group or base.role == "untrained":
            raise UnknownModelError(f"{name!r}: a {base.role} has no untrained twin")
        return ZooEntry(name, "untrained", recipe=base.recipe, source=base.source)
    if name in ZOO:
        return ZOO[name]
    if name.startswith("hf:"):
        return ZooEntry(name, "hf", source=name[3:])
    if name.startswith((".", "/", "~")) or Path(name).exists():
        folder = Path(name).expanduser()
        if not (folder / "config.json").is_file():
            raise ModelLoadError(f"{name!r} is not a Hugging Face model folder (no config.json there); "
                                 "save one with model.save_pretrained(folder) and tokenizer.save_pretrained(folder)")
        return ZooEntry(name, "hf", source=str(folder))
    if name.count("/") == 1:
        return ZooEntry(name, "hf", source=name)
    raise UnknownModelError(f"unknown model {name!r}; valid names: {', '.join(valid_names())}")


def seed_siblings(name: str) -> tuple[str, ...]:
    """The seed siblings of a model: the other trainings of its recipe at other seeds (S4.7's noise floor, S4.4's).

    For a siblings group itself, its members after the first. For a trained model, every prepared training of its
    recipe at another seed (``models.recipes.seed_builds``), in both directions: tiny-w96 has tiny-w96-seed1442,
    -seed88 and -seed99999; tiny-w96-seed88 has tiny-w96 and the other two; tiny-w192 has tiny-w192-seed1442. ()
    for a model whose recipe was trained at one seed only, a group of another kind, or a model outside the zoo.
    """
    entry = resolve(name)
    for group in (ZOO[f"{p}-siblings"] for p in PROFILES):
        if entry.name == group.name:
            return group.members[1:]
    if entry.is_group:
        return ()
    for profile in PROFILES:
        builds = seed_builds(profile)  # {sibling: model}
        main = builds.get(entry.name, entry.name)
        recipe = [main, *(s for s, m in builds.items() if m == main)]
        if entry.name in recipe and len(recipe) > 1:
            return tuple(r for r in recipe if r != entry.name)
    return ()


def default_names(profile: str) -> list[str]:
    """The zoo of a profile: its trained models, their seed siblings (``models.recipes.seed_builds``: other
    trainings of the same recipe, for the builds-agree table), the trained models' twins, the references and the
    profile's groups."""
    trained = [r.name for r in PROFILES[profile]]
    return (trained + list(seed_builds(profile)) + [t + TWIN_SUFFIX for t in trained] + list(REFERENCES)
            + [f"{profile}-{k}" for k in GROUP_KINDS])


def fingerprint(entry: ZooEntry, corpus: Corpus, seed: int) -> str:
    """What a model is, beyond its name: the ledger binds expected verdicts to it.

    - trained zoo model: its checkpoint folder name, ``NAME-KEY`` (KEY hashes recipe, corpus, tokenizer,
      trainer version);
    - random init (twins, references): what it is initialised from, plus ``seed``;
    - HF folder: sha256 of its weight files (read once; seconds per GB); hub id: ``hub:ID``;
    - group: its members' fingerprints joined by "+".

    Raises:
        ModelLoadError: for a folder without weight files.
    """
    if entry.is_group:
        return "+".join(fingerprint(resolve(m), corpus, seed) for m in entry.members)
    twin = f":untrained:seed{seed}" if entry.role == "untrained" else ""
    if entry.recipe is not None:
        return checkpoint_dir(entry.recipe, corpus).name + twin
    source = Path(entry.source)
    if entry.source in {str(p) for p in REFERENCES.values()}:
        return f"{source.stem}-{hashlib.sha256(source.read_bytes()).hexdigest()[:16]}:seed{seed}"
    if source.is_dir():
        try:
            return f"weights-{folder_sha256(source)[:16]}" + twin
        except FileNotFoundError as err:
            raise ModelLoadError(f"{err} (to fingerprint it)") from None
    return f"hub:{entry.source}" + twin


LOAD_ERRORS = (OSError, ValueError, RuntimeError, SafetensorError)


def _load_error(source: str, what: str, err: Exception) -> ModelLoadError:
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


def _cause_of_type(err: BaseException, kind: type) -> BaseException | None:
    """The first exception of ``kind`` in ``err``'s chain of causes and contexts, or None."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, kind):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def _unpickle_error(source: str, err: pickle.UnpicklingError) -> ModelLoadError:
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


def _hf_model(source: str, placement: dict | None = None, **kwargs) -> PreTrainedModel:
    try:
        return AutoModelForCausalLM.from_pretrained(
            source, trust_remote_code=False, attn_implementation="eager", **(placement or {}), **kwargs
        )
    except pickle.UnpicklingError as err:  # a .bin whose pickle torch.load(weights_only=True) refused
        raise _unpickle_error(source, err) from None
    except LOAD_ERRORS as err:
        refused = _cause_of_type(err, pickle.UnpicklingError)  # transformers 4.x wraps it in an OSError
        if refused is not None:
            raise _unpickle_error(source, refused) from None
        raise _load_error(source, "model", err) from err


def _hf_config(source: str):
    try:
        return AutoConfig.from_pretrained(source, trust_remote_code=False)
    except LOAD_ERRORS as err:
        raise _load_error(source, "config", err) from err


def _check_hf_folder(folder: Path, weights: bool) -> None:
    """One-line errors for what would otherwise fail late or vaguely: remote code, a corrupt
    safetensors file (``weights``: the folder's weights are to be loaded), no tokenizer files."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}  # transformers names it below
    if isinstance(config, dict) and "auto_map" in config and config.get("model_type") not in CONFIG_MAPPING:
        raise ModelLoadError(
            f"{folder / 'config.json'}: model_type {config.get('model_type')!r} is not built into transformers and "
            f"its auto_map field ({', '.join(sorted(config['auto_map']))}) points at code in the folder: remote code "
            "is never trusted (trust_remote_code=False), so this model cannot be loaded")
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


def _from_config(config, seed: int) -> PreTrainedModel:
    torch.manual_seed(seed)
    config._attn_implementation = "eager"
    return AutoModelForCausalLM.from_config(config, trust_remote_code=False, attn_implementation="eager")


def load(entry: ZooEntry, corpus: Corpus, device: str, dtype: torch.dtype, seed: int,
         device_map: str | None = None, max_memory: dict | None = None, offload_folder: str | None = None) -> LoadedModel:
    """Build, train (if not cached) or load one zoo entry.

    Args:
        entry: from :func:`resolve`; not a group.
        corpus: trains trained models and the BPE of reference models.
        device, dtype: where and in what precision the model runs.
        seed: seeds random init of twins and reference models.
        device_map: for models loaded from a folder (trained, hf): accelerate's placement, e.g. "auto",
            which splits a model too large for one device over the GPUs, the CPU and ``offload_folder``;
            None puts the whole model on ``device``. Random-init models always go to ``device``.
        max_memory: accelerate's per-device limits, e.g. {"cpu": "200MB"} (with ``device_map``).
        offload_folder: where accelerate may offload weights to disk (with ``device_map``).
    Raises:
        ModelLoadError: missing, corrupt, damaged (cached) or unreachable checkpoint; a folder without
            tokenizer files; a tokenizer larger than the model's vocabulary; a pickle that
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
    if entry.recipe is not None:  # trained, or the twin of a trained model
        folder = train(entry.recipe, corpus, device=device)
        tokenizer = tokenizer_from_json((folder / "tokenizer.json").read_text())
        if entry.role == "trained":
            info = json.loads((folder / "loss_curve.json").read_text())
            model, source = _hf_model(str(folder), placement, use_safetensors=True), str(folder)
        else:
            model, source = _from_config(AutoConfig.from_pretrained(folder, trust_remote_code=False), seed), f"config of {folder}"
    elif entry.source in {str(p) for p in REFERENCES.values()}:  # a reference, or its (identical) twin
        values = json.loads(Path(entry.source).read_text())
        config = AutoConfig.for_model(values.pop("model_type"), **values)
        model, source, tokenizer = _from_config(config, seed), entry.source, train_bpe(corpus)
    else:  # hf, or the twin of an hf model
        hf_id = entry.source
        if Path(hf_id).is_dir():
            _check_hf_folder(Path(hf_id), weights=entry.role == "hf")
        try:
            tokenizer = HFTokenizer(AutoTokenizer.from_pretrained(hf_id, trust_remote_code=False))
        except LOAD_ERRORS as err:
            raise _load_error(hf_id, "tokenizer", err) from err
        if entry.role == "hf":
            model = _hf_model(hf_id, placement)
        else:
            model = _from_config(_hf_config(hf_id), seed)
        source = hf_id
        _check_vocabulary(model, tokenizer, hf_id, corpus.validation[:1000])
    adapter = adapter_for(model)
    # what is tested: the weight files of the folder the model was loaded from, else its state dict as built
    from_folder = entry.role in ("trained", "hf") and Path(source).is_dir()
    weights_sha256 = folder_sha256(Path(source)) if from_folder else state_dict_sha256(model)
    if getattr(model, "hf_device_map", None) is None:  # accelerate placed a device_map model already
        model = model.to(device=device, dtype=dtype)
    model.eval()
    return LoadedModel(entry, model, adapter, tokenizer, source, time.perf_counter() - started, info, weights_sha256)
