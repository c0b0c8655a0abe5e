"""The model zoo: names, roles and loaders.

Names (``--model NAME``, repeatable; ``--zoo tiny|full`` picks the default set):

    tiny-w96, tiny-w128, tiny-w192   trained char-level ladder, profile tiny (main: tiny-w128)
    s4-w192, s4-w384, s4-w768        trained char-level ladder, profile full (s4-w384 is S4's recipe)
    NAME:untrained                   the untrained twin of any model: same config, seeded random init
    ref-opt-125m, ref-gpt2-small,    random-init reference architectures from models/configs/
    ref-pythia-160m, ref-llama-small
    tiny-ladder, full-ladder         the size ladder as one subject (S3.5)
    hf:ID, ORG/NAME, or a folder     any Hugging Face causal LM: hub id or local HF folder

Roles: "trained", "untrained", "reference", "hf", "ladder".
"""

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from models.adapters import Adapter, adapter_for
from models.corpus import Corpus
from models.recipes import PROFILES, Recipe
from models.tokenization import CharTokenizer, HFTokenizer, train_bpe
from models.trainer import train

CONFIGS = Path(__file__).parent / "configs"
REFERENCES = {f"ref-{p.stem}": p for p in sorted(CONFIGS.glob("*.json"))}
TWIN_SUFFIX = ":untrained"


class UnknownModelError(ValueError):
    """A --model name that is neither a zoo name nor a HF id or folder."""


class ModelLoadError(RuntimeError):
    """A model that is named correctly but cannot be loaded (missing, corrupt, offline)."""


@dataclass(frozen=True)
class ZooEntry:
    """One subject a claim can run on.

    Attributes:
        name: the zoo name, as reports show it.
        role: "trained", "untrained", "reference", "hf" or "ladder".
        recipe: the training recipe for trained models (and their twins).
        source: HF id, folder or config path for "hf"/"reference" entries.
        members: for a "ladder", its rungs' names from narrow to wide.
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
    """

    entry: ZooEntry
    model: PreTrainedModel
    adapter: Adapter
    tokenizer: object
    source: str
    load_seconds: float = 0.0
    info: dict = field(default_factory=dict)

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
    def context(self) -> int:
        """Longest usable sequence (learned-position models cannot go past it)."""
        return int(getattr(self.model.config, "n_positions", None) or self.model.config.max_position_embeddings)


def _zoo_entries() -> dict[str, ZooEntry]:
    entries: dict[str, ZooEntry] = {}
    for profile, recipes in PROFILES.items():
        for recipe in recipes:
            entries[recipe.name] = ZooEntry(recipe.name, "trained", recipe=recipe)
        entries[f"{profile}-ladder"] = ZooEntry(f"{profile}-ladder", "ladder", members=tuple(r.name for r in recipes))
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
        if base.role in ("ladder", "untrained"):
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


def default_names(profile: str) -> list[str]:
    """The zoo of a profile: its trained ladder, their twins, the references and the ladder."""
    trained = [r.name for r in PROFILES[profile]]
    return trained + [t + TWIN_SUFFIX for t in trained] + list(REFERENCES) + [f"{profile}-ladder"]


LOAD_ERRORS = (OSError, ValueError, RuntimeError, SafetensorError)


def _load_error(source: str, what: str, err: Exception) -> ModelLoadError:
    where = "local folder" if Path(source).exists() else "hub id"
    return ModelLoadError(
        f"could not load the {what} of {source!r} ({where}): {err}\n"
        "A hub id needs the hub or a copy in the HF cache: download it where there is network and pass "
        "the folder instead. A folder must hold config.json, model.safetensors (or a .bin loadable with "
        "weights_only=True) and the tokenizer files; a corrupt file must be re-saved."
    )


def _hf_model(source: str, **kwargs) -> PreTrainedModel:
    try:
        return AutoModelForCausalLM.from_pretrained(
            source, trust_remote_code=False, attn_implementation="eager", **kwargs
        )
    except LOAD_ERRORS as err:
        raise _load_error(source, "model", err) from err


def _from_config(config, seed: int) -> PreTrainedModel:
    torch.manual_seed(seed)
    config._attn_implementation = "eager"
    return AutoModelForCausalLM.from_config(config, trust_remote_code=False, attn_implementation="eager")


def load(entry: ZooEntry, corpus: Corpus, device: str, dtype: torch.dtype, seed: int) -> LoadedModel:
    """Build, train (if not cached) or load one zoo entry.

    Args:
        entry: from :func:`resolve`; not a ladder.
        corpus: trains trained models and the BPE of reference models.
        device, dtype: where and in what precision the model runs.
        seed: seeds random init of twins and reference models.
    Raises:
        ModelLoadError: missing, corrupt or unreachable checkpoint.
        UnsupportedArchitectureError: no adapter for the architecture.
    """
    started = time.perf_counter()
    info: dict = {}
    if entry.role == "ladder":
        raise ValueError(f"{entry.name} is a ladder; load its members")
    if entry.recipe is not None:  # trained, or the twin of a trained model
        folder = train(entry.recipe, corpus, device=device)
        tokenizer = CharTokenizer(**{"alphabet": json.loads((folder / "tokenizer.json").read_text())["alphabet"]})
        if entry.role == "trained":
            info = json.loads((folder / "loss_curve.json").read_text())
            model, source = _hf_model(str(folder), use_safetensors=True), str(folder)
        else:
            model, source = _from_config(AutoConfig.from_pretrained(folder), seed), f"config of {folder}"
    elif entry.source in {str(p) for p in REFERENCES.values()}:  # a reference, or its (identical) twin
        values = json.loads(Path(entry.source).read_text())
        config = AutoConfig.for_model(values.pop("model_type"), **values)
        model, source, tokenizer = _from_config(config, seed), entry.source, train_bpe(corpus)
    else:  # hf, or the twin of an hf model
        hf_id = entry.source
        try:
            tokenizer = HFTokenizer(AutoTokenizer.from_pretrained(hf_id, trust_remote_code=False))
        except LOAD_ERRORS as err:
            raise _load_error(hf_id, "tokenizer", err) from err
        if entry.role == "hf":
            model = _hf_model(hf_id)
        else:
            model = _from_config(AutoConfig.from_pretrained(hf_id, trust_remote_code=False), seed)
        source = hf_id
    adapter = adapter_for(model)
    model = model.to(device=device, dtype=dtype).eval()
    return LoadedModel(entry, model, adapter, tokenizer, source, time.perf_counter() - started, info)
