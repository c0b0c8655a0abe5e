"""Your own groups of models: size ladders, seed siblings, mixer pairs and depth variants (issue 33).

The group claims (S3.5 on a ladder; S4.6-S4.8 and S4.10 on seed siblings, S4.4's floor; S3.12 on a mixer pair)
run on the zoo's own groups and on groups a user names on the command line or in a TOML file:

    --group ladder:NAME=A,B,C          rungs, any order (ordered here by d_model)
    --group ladder:NAME=A,B,C;A2,C2    the same, with a second training seed of some rungs (each ';' a seed set of
                                       at least 2 rungs: S3.5's "every seed must hold" applies to each)
    --group siblings:NAME=A,B,C,D      trainings of one recipe at other seeds, the first the subject
    --group mixer:NAME=A,B             A the transformer, B the masked mixer (or any token mixer) of its width
    --group depths:NAME=A,B,C          one recipe at several depths (ordered here by block count)
    --groups FILE                      the same in TOML: [[group]] kind = "ladder", name = "mine",
                                       members = ["A", "B", "C"], seeds = [["A2", "C2"]] (optional)

A member is anything --model takes: a local HF folder, hf:ID, ORG/NAME or a zoo name. Each group's rules are
checked at startup from the members' config.json and tokenizer (nothing is loaded), and a broken rule is a
usage error naming the member and the rule:

* siblings share the architecture (model type and block count), the tokenizer and the width;
* ladder rungs share the tokenizer and the family (model type); within a seed set, no two rungs share a width;
* a mixer pair shares the width and the tokenizer (S3.12 pairs their prompts row by row), is given the transformer
  first (a member of a known token-mixer type, ``MIXER_TYPES``, first is refused, naming the order), and its members
  are not of one model type;
* depth variants share the tokenizer, the family and the width;
* no two members are byte-identical copies (the same weights and config.json in two folders).
"""

import hashlib
import json
import tomllib
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

KINDS = ("ladder", "siblings", "mixer", "depths")
MIXER_TYPES = ("masked_mixer",)  # token mixers the suite knows (models/mixer.py): never a mixer pair's transformer
SPEC = "KIND:NAME=A,B,C[;A2,C2]"


class GroupError(ValueError):
    """A group that cannot be run: a malformed --group, an unknown member, or a broken rule (naming which)."""


@dataclass(frozen=True)
class UserGroup:
    """One group of a user's models, as the claims see the zoo's groups.

    Attributes:
        kind: "ladder", "siblings", "mixer" or "depths" (``KINDS``).
        name: the subject's name in reports.
        members: every member in the group's order: a ladder's first seed set narrow to wide, then each further
            set narrow to wide; depth variants shallow to deep; siblings and a mixer pair as given.
        seeds: per member, the index of its declared seed set (0 for the first); all 0 but for a ladder.
    """

    kind: str
    name: str
    members: tuple[str, ...]
    seeds: tuple[int, ...]

    @property
    def spec(self) -> str:
        """The group as --group writes it, ``KIND:NAME=A,B,C;A2,C2`` (the replay command's form)."""
        sets = [",".join(m for m, s in zip(self.members, self.seeds) if s == seed) for seed in sorted(set(self.seeds))]
        return f"{self.kind}:{self.name}={';'.join(sets)}"


@dataclass(frozen=True)
class MemberFacts:
    """What a group's rules compare, read from a member's config and tokenizer without loading weights.

    Attributes:
        model_type: the config's model_type (the family, e.g. "gpt2", "llama").
        width: d_model.
        depth: the number of blocks.
        tokenizer: sha256 of the tokenizer's vocabulary (token → id, sorted), or the zoo recipe's tokenizer kind.
    """

    model_type: str
    width: int
    depth: int
    tokenizer: str


def parse(spec: str) -> UserGroup:
    """A --group value, ``KIND:NAME=A,B,C[;A2,C2]``, as a :class:`UserGroup` (not yet checked: :func:`checked`).

    Raises:
        GroupError: for a malformed value or an unknown kind, naming what to write instead.
    """
    kind, _, rest = spec.partition(":")
    name, _, listed = rest.partition("=")
    if kind not in KINDS or not name or not listed:
        raise GroupError(f"--group {spec}: expected {SPEC} with KIND one of {', '.join(KINDS)}, e.g. "
                         "--group ladder:mine=./w768,./w1600,./w4096")
    sets = [[m.strip() for m in part.split(",") if m.strip()] for part in listed.split(";")]
    return _group(kind, name, sets, f"--group {spec}")


def read_groups_file(path: Path) -> list[UserGroup]:
    """The groups of a TOML file: ``[[group]]`` tables with kind, name, members and, for a ladder, seeds (a list
    of further seed sets).

    Raises:
        GroupError: for a file that cannot be read or parsed, or a table without kind, name or members.
    """
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise GroupError(f"--groups {path}: {err}") from None
    unknown = sorted(set(document) - {"group"})
    if unknown:
        raise GroupError(f"--groups {path}: unknown key {', '.join(map(repr, unknown))}: the file holds [[group]] "
                         "tables only (kind, name, members, seeds)")
    tables = document.get("group")
    if not isinstance(tables, list) or not tables:
        raise GroupError(f"--groups {path}: no [[group]] table; write each group as [[group]] with kind, name, "
                         "members and, for a ladder, seeds")
    groups = []
    for i, table in enumerate(tables):
        where = f"--groups {path}, group {i + 1}"
        if not isinstance(table, dict) or not {"kind", "name", "members"} <= set(table):
            raise GroupError(f"{where}: each [[group]] needs kind, name and members (seeds optional)")
        extra = sorted(set(table) - {"kind", "name", "members", "seeds"})
        if extra:
            raise GroupError(f"{where}: unknown key {', '.join(map(repr, extra))}; a [[group]] takes kind, name, "
                             "members and seeds")
        if table["kind"] not in KINDS:
            raise GroupError(f"{where}: kind {table['kind']!r} is not one of {', '.join(KINDS)}")
        seeds = table.get("seeds", [])
        if not _names(table["members"]) or not (isinstance(seeds, list) and all(_names(s) for s in seeds)):
            raise GroupError(f"{where}: members must be a list of model names, e.g. members = [\"./a\", \"./b\"], "
                             "and seeds a list of such lists")
        sets = [list(table["members"]), *(list(s) for s in seeds)]
        groups.append(_group(table["kind"], str(table["name"]), sets, where))
    return groups


def _names(value) -> bool:
    """Whether a TOML value is a list of strings (``members = "a,b"`` is a string, not a list)."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _group(kind: str, name: str, sets: list[list[str]], where: str) -> UserGroup:
    if any(not s for s in sets) or len(sets[0]) < 2:
        raise GroupError(f"{where}: a group needs at least 2 members, and every seed set at least 1")
    if len(sets) > 1 and kind != "ladder":
        raise GroupError(f"{where}: only a ladder takes further seed sets (';'); siblings are seeds already")
    if any(len(s) < 2 for s in sets[1:]):
        raise GroupError(f"{where}: a further seed set needs at least 2 rungs (its narrowest and widest): S3.5 "
                         "compares rungs within a seed set")
    if kind == "mixer" and len(sets[0]) != 2:
        raise GroupError(f"{where}: a mixer pair has 2 members, the transformer then the mixer")
    members = [m for s in sets for m in s]
    if len(set(members)) != len(members):
        raise GroupError(f"{where}: a member is named twice")
    return UserGroup(kind, name, tuple(members), tuple(i for i, s in enumerate(sets) for _ in s))


def _facts(config, tokenizer: str, member: str) -> MemberFacts:
    """A config's family, width and depth (transformers maps each architecture's names onto ``hidden_size`` and
    ``num_hidden_layers``), with the tokenizer's identity."""
    try:
        return MemberFacts(config.model_type, int(config.hidden_size), int(config.num_hidden_layers), tokenizer)
    except AttributeError as err:
        raise GroupError(f"{member}: its config gives no width or depth ({err})") from None


def _vocabulary_digest(vocabulary: dict) -> str:
    return hashlib.sha256(json.dumps(sorted(vocabulary.items())).encode()).hexdigest()


@cache
def member_facts(member: str) -> MemberFacts:
    """The :class:`MemberFacts` of a group member (a folder, hub id or zoo name; an untrained twin as its model).

    Raises:
        GroupError: for a member that does not resolve, or whose config or tokenizer cannot be read.
    """
    from transformers import AutoConfig, AutoTokenizer

    from models.errors import ModelLoadError
    from models.zoo import UnknownModelError, resolve

    try:
        entry = resolve(member.removesuffix(":untrained"))
    except (UnknownModelError, ModelLoadError) as err:
        raise GroupError(f"{member}: {err}") from None
    if entry.is_group:
        raise GroupError(f"{member}: a group cannot be a member of a group")
    if entry.recipe is not None:
        from models.shipped import manifest

        shipped = manifest().get(entry.name)
        if shipped is None:  # an unshipped zoo recipe: its facts are the recipe's
            r = entry.recipe
            return MemberFacts(r.architecture, r.n_embd, r.n_layer, f"zoo:{r.tokenizer}")
        source = str(shipped.folder)
    elif entry.role == "reference":  # built from its config file, with the corpus' BPE (models.loading)
        values = json.loads(Path(entry.source).read_text())
        return _facts(AutoConfig.for_model(values.pop("model_type"), **values), "zoo:bpe", member)
    else:
        source = entry.source
    try:
        config = AutoConfig.from_pretrained(source, trust_remote_code=False)
        vocabulary = AutoTokenizer.from_pretrained(source, trust_remote_code=False).get_vocab()
    except (OSError, ValueError, KeyError) as err:
        raise GroupError(f"{member}: its config or tokenizer cannot be read ({err})") from None
    return _facts(config, _vocabulary_digest(vocabulary), member)


def _differ(group: UserGroup, facts: dict[str, MemberFacts], field: str, rule: str) -> None:
    first = group.members[0]
    for member in group.members[1:]:
        if getattr(facts[member], field) != getattr(facts[first], field):
            raise GroupError(f"{group.kind} {group.name}: {member} breaks the rule '{rule}': its {field} is "
                             f"{getattr(facts[member], field)}, {first}'s {getattr(facts[first], field)}")


def _check_copies(group: UserGroup) -> None:
    """No two members are byte-identical copies of one model in two folders (issue 74, case 16: they counted as two
    subjects); a copy whose config.json differs is another model."""
    from models.identity import folder_identity

    seen: dict[str, str] = {}
    for member in group.members:
        folder = Path(member).expanduser()
        held = folder_identity(folder) if folder.is_dir() else None
        if held is not None and held in seen:
            raise GroupError(f"{group.kind} {group.name}: {member} holds the same weights and config as "
                             f"{seen[held]} (weights sha256 {held[:12]}): one model counted twice; name each model once")
        if held is not None:
            seen[held] = member


def _check_mixer_order(group: UserGroup, facts: dict[str, MemberFacts]) -> None:
    """A mixer pair is the transformer, then the token mixer (issue 74, case 3: the pair given in reverse ran and
    gave S3.12 a wrong red verdict)."""
    first, second = group.members
    kinds = facts[first].model_type, facts[second].model_type
    if kinds[0] in MIXER_TYPES and kinds[1] not in MIXER_TYPES:
        raise GroupError(f"mixer {group.name}: {first} is a token mixer (model type {kinds[0]}) and {second} a "
                         f"transformer ({kinds[1]}): a mixer pair is given the transformer first, then the mixer; "
                         f"write mixer:{group.name}={second},{first}")
    if kinds[0] == kinds[1]:
        raise GroupError(f"mixer {group.name}: both members are model type {kinds[0]} ({first}, {second}): a mixer "
                         "pair is a transformer, then a token mixer of its width")


def checked(group: UserGroup) -> UserGroup:
    """The group with its rules checked (see the module docstring) and its members in the group's order.

    Raises:
        GroupError: naming the member and the rule it breaks.
    """
    facts = {m: member_facts(m) for m in group.members}
    _check_copies(group)
    if group.kind == "siblings":
        for field in ("model_type", "depth", "width", "tokenizer"):
            _differ(group, facts, field, "siblings share architecture, tokenizer and width")
        return group
    if group.kind == "mixer":
        for field in ("width", "tokenizer"):
            _differ(group, facts, field, "a mixer pair shares its width and tokenizer")
        _check_mixer_order(group, facts)
        return group
    rule = ("ladder rungs share tokenizer and family" if group.kind == "ladder"
            else "depth variants share tokenizer, family and width")
    for field in ("model_type", "tokenizer") + (("width",) if group.kind == "depths" else ()):
        _differ(group, facts, field, rule)
    size = (lambda m: facts[m].width) if group.kind == "ladder" else (lambda m: facts[m].depth)
    ordered: list[tuple[str, int]] = []
    for seed in sorted(set(group.seeds)):
        rungs = sorted((m for m, s in zip(group.members, group.seeds) if s == seed), key=size)
        for a, b in zip(rungs, rungs[1:]):
            if size(a) == size(b):
                raise GroupError(f"{group.kind} {group.name}: {a} and {b} break the rule 'one member per "
                                 f"{'width' if group.kind == 'ladder' else 'depth'} in a seed set': both are {size(a)}")
        ordered += [(m, seed) for m in rungs]
    return replace(group, members=tuple(m for m, _ in ordered), seeds=tuple(s for _, s in ordered))
