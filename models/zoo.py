"""The model zoo: names, roles, groups and fingerprints (loading a model: ``models.loading``).

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
from dataclasses import dataclass
from pathlib import Path

from models.corpus import Corpus
from models.errors import ModelLoadError
from models.identity import folder_config_sha256, folder_sha256
from models.recipes import GROUP_RECIPES, PROFILES, Recipe, seed_builds
from models.trainer import checkpoint_dir

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
        member_seeds: for a group, each member's training seed (the zoo's recipe seeds) or declared seed set (a
            user's ladder, ``models.user_groups``): a ladder's rungs of one seed are compared with each other.
        user: a group the user declared (``--group``, ``--groups``), not the zoo's.
    """

    name: str
    role: str
    recipe: Recipe | None = None
    source: str | None = None
    members: tuple[str, ...] = ()
    member_seeds: tuple[int, ...] = ()
    user: bool = False

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
    def random_init(self) -> bool:
        """Whether this model's weights are a random initialisation: an untrained twin or a "reference" (S3's
        premises about models "before training", S3.4, S3.10's controls and S3's descent steps)."""
        return self.role in ("untrained", "reference")

    @property
    def is_group(self) -> bool:
        """Whether this subject is a group of models (``GROUP_KINDS``)."""
        return self.role in GROUP_KINDS


def _zoo_entries() -> dict[str, ZooEntry]:
    entries: dict[str, ZooEntry] = {r.name: ZooEntry(r.name, "trained", recipe=r) for rs in PROFILES.values() for r in rs}
    for kind, profiles in GROUP_RECIPES.items():
        for profile, recipes in profiles.items():
            for recipe in recipes:
                entries[recipe.name] = ZooEntry(recipe.name, "trained", recipe=recipe)
            entries[f"{profile}-{kind}"] = ZooEntry(f"{profile}-{kind}", kind, members=tuple(r.name for r in recipes),
                                                    member_seeds=tuple(r.seed for r in recipes))
    for name, path in REFERENCES.items():
        entries[name] = ZooEntry(name, "reference", source=str(path))
    return entries


ZOO = _zoo_entries()
USER_GROUPS: dict[str, ZooEntry] = {}  # the run's --group/--groups (``register_user_groups``), by name


def check_group_names(groups) -> None:
    """That a run's own groups (``models.user_groups.UserGroup``) have names of their own; registers nothing.

    Raises:
        UnknownModelError: for a group named like a zoo model or group, or like another group of the run.
    """
    seen: set[str] = set()
    for g in groups:
        if g.name in ZOO or g.name in seen:
            raise UnknownModelError(f"group name {g.name!r} is taken (a zoo name or another --group); choose another")
        seen.add(g.name)


def register_user_groups(groups) -> None:
    """Make a run's own groups (checked: ``models.user_groups.checked``, :func:`check_group_names`) subjects that
    :func:`resolve` knows. The plugin calls it once, with the run's settings (``conftest.py``); no option check does.

    Raises:
        UnknownModelError: as :func:`check_group_names`.
    """
    check_group_names(groups)
    USER_GROUPS.clear()
    for g in groups:
        USER_GROUPS[g.name] = ZooEntry(g.name, g.kind, members=g.members, member_seeds=g.seeds, user=True)


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
    if name in USER_GROUPS:
        return USER_GROUPS[name]
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

    For a siblings group itself, its members after the first; for a member of a user's siblings group
    (``--group siblings:...``), the group's other members. For a trained model, every prepared training of its
    recipe at another seed (``models.recipes.seed_builds``), in both directions: tiny-w96 has tiny-w96-seed1442,
    -seed88 and -seed99999; tiny-w96-seed88 has tiny-w96 and the other two; tiny-w192 has tiny-w192-seed1442. ()
    for a model whose recipe was trained at one seed only, a group of another kind, or a model outside the zoo.
    """
    entry = resolve(name)
    if entry.role == "siblings":
        return entry.members[1:]
    if entry.is_group:
        return ()
    for group in USER_GROUPS.values():  # a user's model: the other members of a siblings group it is in
        if group.role == "siblings" and entry.name in group.members:
            return tuple(m for m in group.members if m != entry.name)
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
    - random init (twins, references): what it is initialised from, plus the seed it is drawn at (``seed``; a
      zoo twin's own recipe seed);
    - HF folder: sha256 of its weight files (read once; seconds per GB) and of the config that builds it,
      ``weights-W-config-C`` (issue 74: the same weights under an edited config.json are another model); hub id:
      ``hub:ID``;
    - group: its members' fingerprints joined by "+".

    Raises:
        ModelLoadError: for a folder without weight files.
    """
    if entry.is_group:
        return "+".join(fingerprint(resolve(m), corpus, seed) for m in entry.members)
    if entry.recipe is not None:  # a zoo twin is its training's own init, drawn at the recipe's seed
        twin = f":untrained:seed{entry.recipe.seed}" if entry.role == "untrained" else ""
        return checkpoint_dir(entry.recipe, corpus).name + twin
    twin = f":untrained:seed{seed}" if entry.role == "untrained" else ""
    source = Path(entry.source)
    if entry.source in {str(p) for p in REFERENCES.values()}:
        return f"{source.stem}-{hashlib.sha256(source.read_bytes()).hexdigest()[:16]}:seed{seed}"
    if source.is_dir():
        try:
            return f"weights-{folder_sha256(source)[:16]}-config-{folder_config_sha256(source)[:16]}" + twin
        except FileNotFoundError as err:
            raise ModelLoadError(f"{err} (to fingerprint it)") from None
    return f"hub:{entry.source}" + twin
