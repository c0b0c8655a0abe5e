"""The zoo's names and loaders: HF folders, twins, and clear errors for bad input."""

import huggingface_hub.constants
import pytest
import torch

from models.corpus import Corpus
from models.errors import ModelLoadError
from models.loading import load
from models.zoo import UnknownModelError, default_names, resolve, seed_siblings
from tests.builders import TEXT, save_hf_folder

CORPUS = Corpus("toy", TEXT, "0" * 64)


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(UnknownModelError, match="valid names: .*ref-opt-125m.*tiny-w128.*hf:ID"):
        resolve("gpt-9000")


def test_roles_of_zoo_names():
    assert resolve("tiny-w128").role == "trained"
    assert resolve("tiny-w128:untrained").role == "untrained"
    assert resolve("ref-llama-small").role == "reference"
    assert resolve("tiny-ladder").members == ("tiny-w96", "tiny-w128", "tiny-w192",  # the main seed, then
                                              "tiny-w96-seed1442", "tiny-w192-seed1442")  # ends at another
    assert resolve("EleutherAI/pythia-160m").role == "hf"
    assert {resolve(n).role for n in default_names("tiny")} == {"trained", "untrained", "reference", "ladder",
                                                                  "siblings", "depths", "mixer"}


def test_groups_are_named_subjects_of_member_models():
    siblings = resolve("tiny-siblings")
    assert siblings.is_group and siblings.members[0] == "tiny-w96" and len(siblings.members) == 4
    assert [resolve(m).recipe.seed for m in siblings.members] == [1337, 1442, 88, 99999]
    assert seed_siblings("tiny-w96") == seed_siblings("tiny-siblings") == siblings.members[1:]
    assert seed_siblings("tiny-w128") == seed_siblings("tiny-ladder") == seed_siblings("tiny-w96:untrained") == ()


def test_every_training_of_a_recipe_at_another_seed_is_a_seed_sibling():
    """S4.4's floor: a model's siblings are the other trainings of its recipe, whichever of them is the subject."""
    assert seed_siblings("tiny-w192") == ("tiny-w192-seed1442",)
    assert seed_siblings("tiny-w192-seed1442") == ("tiny-w192",)
    assert set(seed_siblings("tiny-w96-seed88")) == {"tiny-w96", "tiny-w96-seed1442", "tiny-w96-seed99999"}
    assert [resolve(m).recipe.n_layer for m in resolve("tiny-depths").members] == [2, 4, 8]
    assert resolve("tiny-ladder").members[3] == resolve("tiny-siblings").members[1]  # one checkpoint, trained once
    assert not resolve("tiny-w128").is_group


def test_fingerprints_tell_builds_of_one_name_apart(tmp_path):
    """A ledger entry binds to what a model is: recipe + corpus for zoo models, the weights for a folder."""
    from models.corpus import load_text_file
    from models.zoo import fingerprint

    text_a, text_b = tmp_path / "a.txt", tmp_path / "b.txt"
    text_a.write_text(TEXT * 40)
    text_b.write_text(TEXT * 41)
    a, b = load_text_file(text_a), load_text_file(text_b)
    assert fingerprint(resolve("tiny-w128"), a, 0) != fingerprint(resolve("tiny-w128"), b, 0)
    assert fingerprint(resolve("tiny-w128"), a, 0).startswith("tiny-w128-")
    assert fingerprint(resolve("ref-gpt2-small"), a, 0) != fingerprint(resolve("ref-gpt2-small"), a, 1)
    first = save_hf_folder(tmp_path / "one", arch="gpt2")
    assert fingerprint(resolve(str(first)), a, 0).startswith("weights-")
    save_hf_folder(tmp_path / "two", arch="llama")
    assert fingerprint(resolve(str(first)), a, 0) != fingerprint(resolve(str(tmp_path / "two")), a, 0)


def test_a_model_split_by_max_memory_loads_and_captures_like_a_whole_one(tmp_path):
    """--device-map auto: accelerate puts part of the model on disk (CPU here, GPUs elsewhere); capture still works."""
    from models.capture import run_with_cache
    from models.corpus import load_text_file
    from models.loading import load

    folder = save_hf_folder(tmp_path / "split", arch="gpt2")
    (tmp_path / "c.txt").write_text(TEXT * 40)
    corpus = load_text_file(tmp_path / "c.txt")
    whole = load(resolve(str(folder)), corpus, "cpu", torch.float32, 0)
    split = load(resolve(str(folder)), corpus, "cpu", torch.float32, 0, device_map="auto",
                 max_memory={"cpu": 60_000}, offload_folder=str(tmp_path / "offload"))
    assert "disk" in set(split.model.hf_device_map.values())  # really split
    ids = torch.randint(0, 50, (2, 16), generator=torch.Generator().manual_seed(0))
    a = run_with_cache(whole.model, whole.adapter, ids)
    b = run_with_cache(split.model, split.adapter, ids.to(split.input_device), offload=True)
    for name, tensor in a.activations.items():
        torch.testing.assert_close(b[name], tensor, atol=1e-5, rtol=1e-5)


def test_a_ladder_has_no_twin():
    with pytest.raises(UnknownModelError, match="no untrained twin"):
        resolve("tiny-ladder:untrained")


def test_local_hf_folder_loads_with_its_tokenizer_and_adapter(tmp_path):
    folder = save_hf_folder(tmp_path / "neox")
    loaded = load(resolve(str(folder)), CORPUS, "cpu", torch.float32, seed=0)
    assert loaded.entry.role == "hf" and loaded.adapter.model_type == "gpt_neox"
    assert loaded.tokenizer.decode(loaded.tokenizer.encode("To be, or not")) == "To be, or not"


def test_twin_of_a_hf_folder_is_a_seeded_random_init(tmp_path):
    folder = save_hf_folder(tmp_path / "neox")
    a = load(resolve(f"{folder}:untrained"), CORPUS, "cpu", torch.float32, seed=1)
    b = load(resolve(f"{folder}:untrained"), CORPUS, "cpu", torch.float32, seed=1)
    trained = load(resolve(str(folder)), CORPUS, "cpu", torch.float32, seed=1)
    weight = lambda m: m.model.get_input_embeddings().weight  # noqa: E731
    assert torch.equal(weight(a), weight(b)) and not torch.equal(weight(a), weight(trained))


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(ModelLoadError, match="no config.json"):
        resolve(str(tmp_path / "nothing-here"))


def test_corrupt_checkpoint_is_named(tmp_path):
    folder = save_hf_folder(tmp_path / "neox")
    (folder / "model.safetensors").write_bytes(b"\x00garbage" * 10)
    with pytest.raises(ModelLoadError, match="could not load"):
        load(resolve(str(folder)), CORPUS, "cpu", torch.float32, seed=0)


def test_unreachable_hub_id_says_so(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelLoadError, match="could not load"):
        load(resolve("nobody-here/no-such-model"), CORPUS, "cpu", torch.float32, seed=0)


def test_the_seed_siblings_are_subjects_of_the_default_zoo_beside_their_models():
    from models.recipes import seed_builds

    builds = seed_builds("tiny")
    assert builds == {"tiny-w96-seed1442": "tiny-w96", "tiny-w96-seed88": "tiny-w96",
                      "tiny-w96-seed99999": "tiny-w96", "tiny-w192-seed1442": "tiny-w192"}
    names = default_names("tiny")
    assert set(builds) <= set(names) and all(resolve(b).role == "trained" for b in builds)
    assert not any(f"{b}:untrained" in names for b in builds)  # a sibling's twin would be the main model's twin again
    assert set(seed_builds("full")) >= {"s4-w384-seed1442", "s4-w384-seed88", "s4-w384-seed99999"}


def test_every_claim_runs_on_the_siblings_but_those_the_report_names():
    """Reads the session's one whole collection (``tests.helpers.collected``, shared by modules)."""
    from fixtures.catalogue import load_catalogue
    from tests.helpers import collected, node_ids

    ids = node_ids(collected())  # the session's one whole collection of the tiny zoo
    on_sibling = [i for i in ids if "[tiny-w96-seed88" in i]
    assert on_sibling and not [i for i in on_sibling if "test_cosine_direct_inversion_fails_on_one_token" in i]
    assert "S3.7" in load_catalogue().not_on_siblings()  # the scope rule lives with the claim
    on_main = {i.replace("[tiny-w96]", "") for i in ids if i.endswith("[tiny-w96]")}
    on_seed = {i.replace("[tiny-w96-seed88]", "") for i in on_sibling}
    assert on_main - on_seed == {i for i in on_main if "test_cosine_direct_inversion_fails_on_one_token" in i}
