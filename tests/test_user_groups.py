"""A user's own groups (issue 33): --group and --groups parse, their rules fail on groups built to break them, and
the checked groups are subjects the zoo's resolution knows."""

import shutil
from pathlib import Path

import pytest

from models.user_groups import GroupError, UserGroup, checked, member_facts, parse, read_groups_file
from models.zoo import USER_GROUPS, register_user_groups, resolve, seed_siblings

SHIPPED = Path(__file__).resolve().parents[1] / "models" / "shipped"


def folder(name: str) -> str:
    """A shipped checkpoint's folder, as a user would pass it (an HF folder, not a zoo name)."""
    return str(SHIPPED / name)


@pytest.fixture(autouse=True)
def no_user_groups():
    """Each test starts and ends with no registered user group."""
    register_user_groups(())
    yield
    register_user_groups(())


def test_a_group_spec_names_kind_name_members_and_seed_sets():
    g = parse("ladder:mine=A,B,C;A2,C2")
    assert (g.kind, g.name, g.members, g.seeds) == ("ladder", "mine", ("A", "B", "C", "A2", "C2"), (0, 0, 0, 1, 1))
    assert g.spec == "ladder:mine=A,B,C;A2,C2"
    assert parse("siblings:s=G1, G2,G3,G4").members == ("G1", "G2", "G3", "G4")


@pytest.mark.parametrize("spec, words", [
    ("ladder=mine:A,B", "expected KIND:NAME=A,B,C"),
    ("tower:mine=A,B", "KIND one of ladder, siblings, mixer, depths"),
    ("ladder:mine=A", "at least 2 members"),
    ("siblings:s=A,B;C", "only a ladder takes further seed sets"),
    ("mixer:m=A,B,C", "a mixer pair has 2 members"),
    ("depths:d=A,B,A", "named twice"),
    ("ladder:l=A,B,C;D", "a further seed set needs at least 2 rungs"),
])
def test_a_malformed_group_says_what_to_write(spec, words):
    with pytest.raises(GroupError, match=words):
        parse(spec)


def test_groups_from_a_toml_file(tmp_path):
    path = tmp_path / "groups.toml"
    path.write_text('[[group]]\nkind = "ladder"\nname = "llama"\nmembers = ["a", "b", "c"]\nseeds = [["a2", "c2"]]\n'
                    '[[group]]\nkind = "siblings"\nname = "seeds"\nmembers = ["g1", "g2"]\n')
    ladder, siblings = read_groups_file(path)
    assert ladder == UserGroup("ladder", "llama", ("a", "b", "c", "a2", "c2"), (0, 0, 0, 1, 1))
    assert siblings.kind == "siblings" and siblings.seeds == (0, 0)
    path.write_text('[[group]]\nkind = "ladder"\nname = "x"\n')
    with pytest.raises(GroupError, match="needs kind, name and members"):
        read_groups_file(path)
    path.write_text("[[group]\n")
    with pytest.raises(GroupError, match="--groups"):
        read_groups_file(path)


def test_a_ladder_is_ordered_by_d_model_within_each_seed_set():
    g = checked(parse(f"ladder:z={folder('tiny-w192')},{folder('tiny-w96')},{folder('tiny-w128')};"
                      f"{folder('tiny-w192-seed1442')},{folder('tiny-w96-seed1442')}"))
    assert [Path(m).name for m in g.members] == ["tiny-w96", "tiny-w128", "tiny-w192", "tiny-w96-seed1442",
                                                 "tiny-w192-seed1442"]
    assert g.seeds == (0, 0, 0, 1, 1)


@pytest.mark.parametrize("spec, member, rule", [
    ("siblings:s={w96},{w128}", "tiny-w128", "siblings share architecture, tokenizer and width"),
    ("siblings:s={w96},{bpe}", "tiny-bpe-w96", "siblings share architecture, tokenizer and width"),
    ("ladder:l={w96},{bpe}", "tiny-bpe-w96", "ladder rungs share tokenizer and family"),
    ("ladder:l={w96},{w96s}", "tiny-w96", "one member per width in a seed set"),
    ("mixer:m={w96},{w128}", "tiny-w128", "a mixer pair shares its width and tokenizer"),
    ("mixer:m={w96},{bpe}", "tiny-bpe-w96", "a mixer pair shares its width and tokenizer"),
    ("depths:d={w96},{w128}", "tiny-w128", "depth variants share tokenizer, family and width"),
])
def test_a_broken_rule_names_the_member_and_the_rule(spec, member, rule):
    names = {"w96": folder("tiny-w96"), "w128": folder("tiny-w128"), "bpe": folder("tiny-bpe-w96"),
             "w96s": folder("tiny-w96-seed88")}
    with pytest.raises(GroupError, match=rule) as err:
        checked(parse(spec.format(**names)))
    assert member in str(err.value)


def test_the_zoo_mixer_pair_and_siblings_pass_their_rules_as_folders():
    assert checked(parse(f"mixer:m={folder('tiny-w96')},{folder('tiny-mixer-w96')}")).members[1].endswith("mixer-w96")
    sibs = [folder(n) for n in ("tiny-w96", "tiny-w96-seed1442", "tiny-w96-seed88", "tiny-w96-seed99999")]
    assert checked(parse("siblings:s=" + ",".join(sibs))).members == tuple(sibs)


def test_a_member_that_is_not_a_model_is_named(tmp_path):
    with pytest.raises(GroupError, match="no-such-model"):
        member_facts(str(tmp_path / "no-such-model"))
    with pytest.raises(GroupError, match="a group cannot be a member"):
        member_facts("tiny-ladder")


def test_a_registered_group_is_a_subject_and_its_members_are_each_others_siblings():
    sibs = [folder(n) for n in ("tiny-w96", "tiny-w96-seed1442", "tiny-w96-seed88")]
    register_user_groups([checked(parse("siblings:mine=" + ",".join(sibs)))])
    entry = resolve("mine")
    assert entry.role == "siblings" and entry.user and entry.members == tuple(sibs)
    assert seed_siblings("mine") == tuple(sibs[1:])
    assert seed_siblings(sibs[1]) == (sibs[0], sibs[2])  # S4.4's floor for a user's model: its group's others
    with pytest.raises(ValueError, match="is taken"):
        register_user_groups([UserGroup("siblings", "tiny-ladder", ("a", "b"), (0, 0))])
    register_user_groups(())
    assert "mine" not in USER_GROUPS


def test_checking_the_group_options_registers_nothing():
    """Issue 65, item 6: the option check validates a group and its name; only the plugin's configure registers the
    run's groups (``conftest.py``), so checking options leaves the zoo as it was."""
    from fixtures.option_checks import check_groups

    sibs = [folder(n) for n in ("tiny-w96", "tiny-w96-seed1442")]
    register_user_groups(())
    groups = check_groups(["siblings:checked-only=" + ",".join(sibs)], None)
    assert [g.name for g in groups] == ["checked-only"] and "checked-only" not in USER_GROUPS
    with pytest.raises(pytest.UsageError, match="is taken"):
        check_groups(["siblings:tiny-ladder=" + ",".join(sibs)], None)


def test_a_copied_folder_of_another_name_has_the_same_facts(tmp_path):
    """The rules compare what the folders hold, not their names: a copy of tiny-w96 is its sibling in every fact."""
    copy = shutil.copytree(SHIPPED / "tiny-w96", tmp_path / "my-run")
    assert member_facts(str(copy)) == member_facts(folder("tiny-w96"))


# --- the zoo's own folders as a user's groups give the zoo's records (a claims run: minutes) ---------------------

GROUP_CLAIMS = ("S3.5", "S3.12", "S4.6", "S4.7", "S4.8", "S4.10")
AS_USER = {  # the zoo's group: the same checkpoints, passed as folders
    "tiny-ladder": "ladder:my-ladder=" + ",".join(folder(n) for n in ("tiny-w96", "tiny-w128", "tiny-w192"))
                   + ";" + ",".join(folder(n) for n in ("tiny-w96-seed1442", "tiny-w192-seed1442")),
    "tiny-siblings": "siblings:my-siblings=" + ",".join(
        folder(n) for n in ("tiny-w96", "tiny-w96-seed1442", "tiny-w96-seed88", "tiny-w96-seed99999")),
    "tiny-mixer": f"mixer:my-mixer={folder('tiny-w96')},{folder('tiny-mixer-w96')}",
}
# Where the records may differ, and why: S3.12's untrained pair. The zoo's twins are the trainings' own inits (drawn
# at each recipe's seed); a folder carries no recipe, so its twin is drawn at --seed. Its checks, and so its outcome,
# are left out of the comparison.
TWIN_SUFFIX = ":untrained"


def _zoo_names(text: str) -> str:
    """A check name with the member folders written as the zoo names they are (the longest path first)."""
    for path in sorted(MEMBERS, key=len, reverse=True):
        text = text.replace(path, MEMBERS[path])
    return text


MEMBERS = {folder(n): n for n in ("tiny-w96", "tiny-w128", "tiny-w192", "tiny-w96-seed1442", "tiny-w192-seed1442",
                                  "tiny-w96-seed88", "tiny-w96-seed99999", "tiny-mixer-w96")}


@pytest.mark.subprocess
@pytest.mark.nightly  # six group claims on three groups, twice: minutes of claims, repeated nightly, not per change
def test_the_zoos_folders_as_user_groups_give_the_zoos_records(tmp_path):
    """A whole claims run over eight models (minutes, nightly) in a child process, as a user's run would be."""
    import json

    from tests.helpers import pytest_child

    done = pytest_child("claims", "-m", "gpu", *(f"--claim={c}" for c in GROUP_CLAIMS), *(f"--model={g}" for g in AS_USER),
                        *(f"--group={s}" for s in AS_USER.values()), "--report-dir", tmp_path, "-p", "no:cacheprovider",
                        "-q", cwd=SHIPPED.parents[1], timeout=1800)
    assert done.returncode in (0, 1), (done.stdout + done.stderr)[-3000:]  # 1: a claim that fails is a finding
    doc = json.loads((tmp_path / "latest" / "results.json").read_text())
    user_of = {zoo: spec.split(":")[1].split("=")[0] for zoo, spec in AS_USER.items()}
    assert set(doc["user_groups"]) == set(user_of.values())
    records = {(r["claim"], r["model"], json.dumps(r["params"], sort_keys=True)): r for r in doc["records"]}
    compared = []
    for (claim, model, params), zoo in records.items():
        if model not in user_of:
            continue
        user = records[claim, user_of[model], params]
        assert user["version"] == zoo["version"]
        zoo_checks = {c["name"]: c for c in zoo["checks"]}
        for check in user["checks"]:
            name = _zoo_names(check["name"])
            if claim == "S3.12" and TWIN_SUFFIX in name:
                continue
            expected = zoo_checks[name]
            assert check["status"] == expected["status"], (claim, name)
            assert [check[k] for k in ("value", "ci_low", "ci_high")] == pytest.approx(
                [expected[k] for k in ("value", "ci_low", "ci_high")], abs=1e-9), (claim, name)
        if not (claim == "S3.12" and any(TWIN_SUFFIX in _zoo_names(c["name"]) for c in user["checks"])):
            # the ledger binds a finding to the zoo's group name: the same failure is "fails" on the user's group
            assert user["outcome"] == zoo["outcome"].replace("fails as expected", "fails"), (claim, model)
        compared.append(claim)
    assert sorted(set(compared)) == sorted(GROUP_CLAIMS, key=str)


def test_a_mixer_pair_given_mixer_first_is_a_usage_error_naming_the_order():
    """Issue 74, case 3: the pair in reverse was accepted, and S3.12 failed where the zoo's pair holds."""
    transformer, mixer = folder("tiny-w96"), folder("tiny-mixer-w96")
    with pytest.raises(GroupError, match="the transformer first, then the mixer") as err:
        checked(parse(f"mixer:m={mixer},{transformer}"))
    assert f"mixer:m={transformer},{mixer}" in str(err.value) and "masked_mixer" in str(err.value)
    with pytest.raises(GroupError, match="both members are model type gpt2"):
        checked(parse(f"mixer:m={transformer},{folder('tiny-w96-seed88')}"))


def test_byte_identical_copies_in_one_group_are_one_model_counted_twice(tmp_path):
    """Issue 74, case 16: copies of one model in two folders counted as two subjects of a group."""
    import shutil

    copy = shutil.copytree(folder("tiny-w96"), tmp_path / "copy", ignore=shutil.ignore_patterns(".latent-claims-*"))
    with pytest.raises(GroupError, match="the same weights and config") as err:
        checked(parse(f"siblings:s={folder('tiny-w96')},{folder('tiny-w96-seed88')},{copy}"))
    assert str(copy) in str(err.value) and folder("tiny-w96") in str(err.value)
