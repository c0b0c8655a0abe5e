"""The shipped zoo (models/shipped.py): pinned by content, checked at load, never retrained behind the user's back."""

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import models.shipped as shipped_zoo
from fixtures.ledger import load_ledger
from models.corpus import load_corpus
from models.errors import ModelLoadError
from models.loading import from_config, load, needs_training
from models.recipes import PREPARED
from models.shipped import ShippedModel, checkpoint, file_sha256, manifest, shipped, verify
from models.trainer import checkpoint_dir
from models.zoo import REFERENCES, resolve
from reports.document import RunDocument
from reports.shipped_verdicts import against_shipped, lines, snapshot

CORPUS = load_corpus(None)


def _no_training(*args, **kwargs):
    raise AssertionError("a shipped model was about to be trained")


def test_the_tiny_zoo_is_shipped_each_recipe_pinned_to_its_files():
    pinned = manifest()
    assert set(pinned) == {r.name for r in PREPARED["tiny"]}  # every model `prepare` used to train
    for recipe in PREPARED["tiny"]:
        model = shipped(recipe, CORPUS)
        assert model is not None and model.fingerprint == checkpoint_dir(recipe, CORPUS).name
        assert verify(model) == model.weights_sha256 == file_sha256(model.folder / "model.safetensors")
    doc = json.loads(shipped_zoo.MANIFEST.read_text())
    for entry in doc["models"].values():  # what trained it, and how the training went
        assert entry["trained_on"]["cpu"] and entry["trained_on"]["torch"] and entry["loss_curve"]
        assert entry["recipe"]["name"] in pinned and len(doc["trained_at_commit"]) == 40


def test_a_shipped_model_loads_without_training(monkeypatch):
    monkeypatch.setattr(shipped_zoo, "train", _no_training)
    entry = resolve("tiny-w96")
    assert not needs_training(entry, CORPUS)
    loaded = load(entry, CORPUS, "cpu", torch.float32, seed=0)
    assert loaded.zoo_build == "shipped" and loaded.weights_sha256 == manifest()["tiny-w96"].weights_sha256
    assert Path(loaded.source) == manifest()["tiny-w96"].folder
    twin = load(resolve("tiny-w96:untrained"), CORPUS, "cpu", torch.float32, seed=0)
    assert twin.zoo_build == "shipped"  # drawn from the shipped config


def test_a_shipped_recipe_needs_no_training_unless_this_machines_build_is_asked_for(monkeypatch, tmp_path):
    import models.loading

    monkeypatch.setattr(models.loading, "checkpoint_dir", lambda recipe, corpus: tmp_path / "not-cached")
    assert not needs_training(resolve("tiny-w96"), CORPUS)  # shipped: nothing to train, even with an empty cache
    assert not needs_training(resolve("tiny-w96:untrained"), CORPUS)
    assert needs_training(resolve("tiny-w96"), CORPUS, build="local")  # this machine's build, not cached
    assert needs_training(resolve("tiny-w96-d2"), CORPUS)  # a depth variant is not shipped


def test_a_local_build_trains_into_the_cache(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(shipped_zoo, "train", lambda recipe, corpus, device: calls.append(recipe.name) or tmp_path)
    recipe = resolve("tiny-w96").recipe
    assert checkpoint(recipe, CORPUS, "local", "cpu") == (tmp_path, None) and calls == ["tiny-w96"]
    with pytest.raises(ValueError, match="shipped, local"):
        checkpoint(recipe, CORPUS, "other", "cpu")


def _copy(name: str, tmp_path: Path) -> ShippedModel:
    pinned = manifest()[name]
    folder = tmp_path / name
    shutil.copytree(pinned.folder, folder)
    return replace(pinned, folder=folder)


@pytest.mark.parametrize("damage", ["changed", "truncated", "missing"])
def test_a_changed_or_truncated_shipped_file_is_an_error_naming_the_file_and_both_digests(tmp_path, damage, monkeypatch):
    model = _copy("tiny-w96", tmp_path)
    weights = model.folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    if damage == "changed":
        data[-1] ^= 1
        weights.write_bytes(bytes(data))
    elif damage == "truncated":
        weights.write_bytes(bytes(data[: len(data) // 2]))
    else:
        weights.unlink()
    with pytest.raises(ModelLoadError) as err:
        verify(model)
    message = str(err.value)
    assert str(weights) in message and model.weights_sha256 in message and "git checkout" in message
    if damage != "missing":
        assert file_sha256(weights) in message  # the digest found, beside the pinned one
    # through the loader: an error, never a retrain
    monkeypatch.setattr(shipped_zoo, "manifest", lambda: {"tiny-w96": model})
    monkeypatch.setattr(shipped_zoo, "train", _no_training)
    with pytest.raises(ModelLoadError, match="manifest pins"):
        load(resolve("tiny-w96"), CORPUS, "cpu", torch.float32, seed=0)


def test_a_changed_config_file_is_caught_too(tmp_path):
    model = _copy("tiny-w128", tmp_path)
    config = model.folder / "config.json"
    config.write_text(config.read_text().replace('"n_layer": 4', '"n_layer": 3'))
    with pytest.raises(ModelLoadError, match="config.json: sha256"):
        verify(model)


def test_a_recipe_that_no_longer_matches_its_shipped_weights_is_an_error_not_a_retrain(monkeypatch):
    model = replace(manifest()["tiny-w96"], fingerprint="tiny-w96-0000000000000000")
    monkeypatch.setattr(shipped_zoo, "manifest", lambda: {"tiny-w96": model})
    monkeypatch.setattr(shipped_zoo, "train", _no_training)
    with pytest.raises(ModelLoadError, match="--retrain tiny-w96") as err:
        checkpoint(resolve("tiny-w96").recipe, CORPUS, "shipped", "cpu")
    assert "tiny-w96-0000000000000000" in str(err.value)


def test_another_corpus_is_not_shipped():
    other = replace(CORPUS, sha256="0" * 64)
    assert shipped(resolve("tiny-w96").recipe, other) is None


def _seeded_digest(name: str) -> str:
    """The weights digest of a random-init model of the zoo as a run records it: a twin at its recipe's training
    seed (its training's own init), a reference at seed 0."""
    from transformers import AutoConfig

    from models.identity import state_dict_sha256

    entry = resolve(name)
    if entry.role == "untrained":
        config = AutoConfig.from_pretrained(manifest()[entry.trained].folder)
        return state_dict_sha256(from_config(config, seed=entry.recipe.seed))
    values = json.loads(Path(entry.source).read_text())
    config = AutoConfig.for_model(values.pop("model_type"), **values)
    return state_dict_sha256(from_config(config, seed=0))


def test_every_zoo_ledger_entry_names_shipped_weights_or_a_seeded_digest():
    """The ledger is measured on the weights every machine runs: a trained model's entry names its shipped digest;
    an untrained twin's, the digest of its training's own init (the recipe's seed); a reference's, its seed-0 init;
    a group's, none (it has no one digest)."""
    shipped_digests = {name: m.weights_sha256 for name, m in manifest().items()}
    seeded: dict[str, str] = {}
    for (claim, model, variant, test), entry in load_ledger().items():
        if model.startswith(("/", ".", "hf:")):
            continue  # a user's model: not ours to check
        role = resolve(model).role
        where = f"{claim} on {model}"
        if role == "trained":
            assert entry.weights_sha256 == shipped_digests[model], f"{where}: not the shipped weights"
            assert entry.fingerprint == manifest()[model].fingerprint, where
        elif role in ("untrained", "reference"):
            if model not in seeded:
                seeded[model] = _seeded_digest(model)
            assert entry.weights_sha256 == seeded[model], f"{where}: not its init (a twin at its recipe seed, a reference at seed 0)"
        else:
            assert resolve(model).is_group and entry.weights_sha256 == "", where
    assert set(REFERENCES) >= {m for m in seeded if resolve(m).role == "reference"}


def _doc(outcome: str, zoo_build: str = "shipped", version: int = 1) -> dict:
    """A run's results.json (as a dict) with one S4.1 record on tiny-w96, claim check 0.5 [0.4, 0.6]."""
    record = {"claim": "S4.1", "version": version, "model": "tiny-w96", "test": "claims/t.py::test_x[tiny-w96]",
              "outcome": outcome, "checks": [{"name": "x", "value": 0.5, "ci_low": 0.4, "ci_high": 0.6,
                                              "threshold": 0.0}]}
    return {"run_id": "r1", "git": "abc", "zoo_build": zoo_build, "interrupted": False, "versions": {"torch": "2"},
            "models": {"tiny-w96": {"build": {"cpu": "Intel (AVX512)"}}}, "records": [record],
            "seed": 0, "prompts": [32, 128], "max_prompts": 128, "zoo": "tiny", "device": {"dtype": "float32"},
            "source_scale": False}


def _run(outcome: str, zoo_build: str = "shipped", version: int = 1) -> RunDocument:
    return RunDocument.from_json(_doc(outcome, zoo_build, version))


def test_a_local_build_is_compared_with_the_shipped_verdicts():
    kept = snapshot(_run("fails as expected"))
    assert kept["machines"] == ["Intel (AVX512)"] and list(kept["records"].values())[0] == {
        "version": 1, "outcome": "fails", "value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": None}
    same = against_shipped(_run("fails", "local").records, kept)
    assert same["compared"] == 1 and same["differ"] == []
    differ = against_shipped(_run("holds", "local").records, kept)
    assert [(d["shipped"], d["local"]) for d in differ["differ"]] == [("fails", "holds")]
    other_version = against_shipped(_run("holds", "local", version=2).records, kept)
    assert other_version["compared"] == 0 and other_version["not_compared"] == 1
    with pytest.raises(ValueError, match="not the shipped weights"):
        snapshot(_run("holds", "local"))
    missing = against_shipped(_run("holds", "local").records, None)
    assert missing["compared"] == 0 and "NOT COMPARED" in lines(missing)[0]
    assert "fails on the shipped weights, holds on this machine's build" in "\n".join(lines(differ))


def test_a_claim_test_moved_to_another_file_keys_the_same_shipped_verdict(tmp_path):
    """Issue 65, item 3: a record's identity is its claim, test function and parameters, not its file, so splitting a
    claim file (claims/s0_spectra/test_residuals.py) keeps every shipped verdict; a file written with path keys
    reads the same."""
    from reports.shipped_verdicts import load

    kept = snapshot(_run("fails"))
    assert list(kept["records"]) == ["S4.1|test_x[tiny-w96]"]
    moved = _run("holds", "local")
    moved.records[0].test = "claims/elsewhere/test_moved.py::test_x[tiny-w96]"
    assert against_shipped(moved.records, kept)["compared"] == 1
    old = tmp_path / "verdicts.json"
    with_path = {"S4.1|claims/t.py::test_x[tiny-w96]": kept["records"]["S4.1|test_x[tiny-w96]"]}
    old.write_text(json.dumps({**kept, "records": with_path}))
    assert list(load(old)["records"]) == ["S4.1|test_x[tiny-w96]"]


def test_the_shipped_verdicts_file_is_a_whole_run_on_the_shipped_weights():
    kept = json.loads(shipped_zoo.VERDICTS.read_text())
    assert len(kept["records"]) > 300 and kept["git"] and kept["machines"]
    from models.zoo import default_names

    subjects = {key.split("[", 1)[1].rstrip("]") for key in kept["records"]}  # a test id's parameters
    for name in default_names("tiny"):  # every subject of the tiny zoo a claim runs on (none runs on tiny-depths)
        assert name == "tiny-depths" or any(s == name or s.startswith(f"{name}-") and not s[len(name) + 1:].startswith(
            "seed") for s in subjects), name


def test_prepare_trains_nothing_shipped_and_retrain_trains_this_machines_builds(monkeypatch, capsys):
    import models.__main__ as prepare

    trained = []
    monkeypatch.setattr(prepare, "train_batched", lambda group, corpus, device, progress:
                        [trained.append(r.name) or Path(".") for r in group])
    monkeypatch.setattr(prepare, "measure_matmul_flops", lambda device: 50e9)
    assert prepare.main(["prepare", "--zoo", "tiny", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert trained == [] and "nothing to train: every model is shipped" in out
    assert f"tiny-w96: shipped weights {manifest()['tiny-w96'].weights_sha256[:12]}" in out
    monkeypatch.setattr(prepare, "work_to_train", lambda recipes, corpus: {})
    assert prepare.main(["prepare", "--retrain", "tiny-w96", "--device", "cpu"]) == 0
    assert trained == ["tiny-w96"]


def test_python_m_reports_shipped_writes_the_verdicts_file_only_from_a_shipped_run(tmp_path, monkeypatch, capsys):
    from reports.__main__ import main
    from reports.results_file import SCHEMA

    doc = {**_doc("holds"), "schema": SCHEMA}
    doc["records"][0]["checks"] = []
    run = tmp_path / "results.json"
    run.write_text(json.dumps(doc))
    target = tmp_path / "verdicts.json"
    monkeypatch.setattr(shipped_zoo, "VERDICTS", target)
    assert main(["shipped", str(run)]) == 0 and not target.exists()  # a dry run says what it would keep
    assert main(["shipped", str(run), "--write"]) == 0
    assert json.loads(target.read_text())["records"]["S4.1|test_x[tiny-w96]"]["outcome"] == "holds"
    run.write_text(json.dumps({**doc, "zoo_build": "local"}))
    assert main(["shipped", str(run), "--write"]) == 2 and "not the shipped weights" in capsys.readouterr().err


@pytest.mark.parametrize("other", [{"seed": 3, "prompts": [8, 64]}, {"device": {"dtype": "bfloat16"}},
                                   {"zoo": "full"}, {"source_scale": True}])
def test_verdict_files_refuse_a_run_made_with_other_settings_naming_the_difference(tmp_path, monkeypatch, capsys,
                                                                                   other):
    """Issue 59, item 3: `--seed 3 --prompts 8x64` or `--dtype bfloat16` runs were merged into the shipped verdicts
    (S4.2 on tiny-w96 1.2807 -> 1.3610) and rewrote ledger whys; both writers now refuse them, and an interrupted run
    too, naming what differs. The verdicts file keeps the settings it was written with."""
    from reports.__main__ import main
    from reports.results_file import SCHEMA

    target = tmp_path / "verdicts.json"
    monkeypatch.setattr(shipped_zoo, "VERDICTS", target)
    run = tmp_path / "results.json"
    good = {**_doc("holds"), "schema": SCHEMA}
    run.write_text(json.dumps(good))
    assert main(["shipped", str(run), "--write"]) == 0
    written = json.loads(target.read_text())
    assert written["settings"]["seed"] == 0 and written["settings"]["dtype"] == "float32"
    run.write_text(json.dumps({**good, **other}))
    assert main(["shipped", str(run), "--merge", "--write"]) == 2
    err = capsys.readouterr().err
    assert "made with other settings than the shipped verdicts" in err and "nothing written" in err
    assert json.loads(target.read_text()) == written
    name = next(iter(other))
    assert {"seed": "--seed 3 (the shipped verdicts': 0)", "device": "--dtype 'bfloat16'", "zoo": "--zoo 'full'",
            "source_scale": "--source-scale True"}[name] in err
    ledger = tmp_path / "ledger.toml"
    ledger.write_text("")
    import reports.ledger_file
    monkeypatch.setattr(reports.ledger_file, "SHIPPED_LEDGER", ledger)  # a user's own ledger is not refused (issue 74)
    assert main(["ledger", str(run), "--ledger", str(ledger), "--write"]) == 2
    assert "nothing written" in capsys.readouterr().err
    run.write_text(json.dumps({**good, "interrupted": True}))
    assert main(["ledger", str(run), "--ledger", str(ledger), "--write"]) == 2
    assert "the run was interrupted" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["tiny-w96", "tiny-w96-seed88", "tiny-mixer-w96"])
def test_a_zoo_twin_is_its_trainings_own_starting_point(name):
    """Item 6 of issue 34: the twin is the trainer's init (``build_model`` under the recipe's seed), so the four
    tiny-w96 builds have four twins, not one drawn four times."""
    from models.trainer import build_model

    twin = load(resolve(f"{name}:untrained"), CORPUS, "cpu", torch.float32, seed=0).model
    recipe = resolve(name).recipe
    torch.manual_seed(recipe.seed)
    init = build_model(recipe, twin.get_input_embeddings().weight.shape[0]).state_dict()
    assert all(torch.equal(tensor, twin.state_dict()[k]) for k, tensor in init.items())


def test_seed_siblings_have_twins_of_their_own():
    digests = {load(resolve(f"{n}:untrained"), CORPUS, "cpu", torch.float32, seed=0).weights_sha256
               for n in ("tiny-w96", "tiny-w96-seed1442", "tiny-w96-seed88", "tiny-w96-seed99999")}
    assert len(digests) == 4


def test_prepare_steps_trains_a_recipe_and_its_sibling_briefly_as_one_job_even_where_shipped(monkeypatch, capsys):
    """``--steps N`` (make gpu-check's rehearsal): the named recipes, shortened to N steps, as one batched job; the
    shipped weights are neither checked nor replaced; a count below 1 is a usage error."""
    import models.__main__ as prepare

    groups = []
    monkeypatch.setattr(prepare, "train_batched", lambda group, corpus, device, progress:
                        groups.append([(r.name, r.steps, r.eval_every) for r in group]) or [Path(".")] * len(group))
    monkeypatch.setattr(prepare, "work_to_train", lambda recipes, corpus: {})
    assert prepare.main(["prepare", "--steps", "3", "tiny-w96", "tiny-w96-seed1442", "--device", "cpu"]) == 0
    assert groups == [[("tiny-w96", 3, 3), ("tiny-w96-seed1442", 3, 3)]]
    assert "shipped weights" not in capsys.readouterr().out
    assert prepare.main(["prepare", "--steps", "0", "tiny-w96", "--device", "cpu"]) == 2
    assert "--steps 0: give a number of training steps, at least 1" in capsys.readouterr().err
    assert prepare.main(["ship", "--steps", "3", "tiny-w96"]) == 2
    assert "--steps 3: prepare's, not ship's" in capsys.readouterr().err


def test_no_ledger_entry_calls_a_verdict_its_seed_siblings_disagree_on_a_finding():
    """Issue 77, item 4: where one build of a recipe holds a claim and another fails it in the shipped verdicts, every
    ledger entry on those builds says "Seed-unstable (holds on k of n builds)" first, not a finding about the model."""
    import re
    from fixtures.ledger import load_ledger
    from models.recipes import seed_builds
    from reports.records import seed_unstable

    kept = json.loads(shipped_zoo.VERDICTS.read_text())["records"]
    recipe_of = seed_builds("tiny")
    outcomes: dict[tuple[str, str, str], dict[str, str]] = {}
    for key, rec in kept.items():
        claim, rest = key.split("|", 1)
        test, params = re.fullmatch(r"(\w+)\[(.*)\]", rest).groups()
        model = next((m for m in sorted({*recipe_of, *recipe_of.values()}, key=len, reverse=True) if params == m), None)
        if model is not None:
            measured = "fails" if rec["outcome"] == "fails as expected" else rec["outcome"]
            outcomes.setdefault((claim, test, recipe_of.get(model, model)), {})[model] = measured
    wrong = []
    for e in load_ledger().values():
        builds = outcomes.get((e.claim, e.test, recipe_of.get(e.model, e.model)), {})
        counts = {o: list(builds.values()).count(o) for o in set(builds.values())}
        words = seed_unstable(counts, len(builds))
        if words and not e.why.startswith(words[0].upper() + words[1:]):
            wrong.append(f"{e.claim} on {e.model}: {words}, but the why reads {e.why[:60]!r}")
    assert not wrong, wrong
