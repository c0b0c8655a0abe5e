"""The zoo's names and loaders: HF folders, twins, and clear errors for bad input."""

import huggingface_hub.constants
import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from models.corpus import Corpus
from models.zoo import ModelLoadError, UnknownModelError, default_names, load, resolve
from tests.conftest import tiny_model

TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n" * 400
CORPUS = Corpus("toy", TEXT, "0" * 64)


def save_hf_folder(folder, arch="gpt_neox"):
    """A tiny random-init HF model with a fast tokenizer, saved as a local folder (as a user would)."""
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(TEXT.splitlines(), trainers.BpeTrainer(vocab_size=50, special_tokens=["[UNK]"],
                                                                          initial_alphabet=[], show_progress=False))
    PreTrainedTokenizerFast(tokenizer_object=tokenizer).save_pretrained(folder)
    tiny_model(arch).save_pretrained(folder, safe_serialization=True)
    return folder


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(UnknownModelError, match="valid names: .*ref-opt-125m.*tiny-w128.*hf:ID"):
        resolve("gpt-9000")


def test_roles_of_zoo_names():
    assert resolve("tiny-w128").role == "trained"
    assert resolve("tiny-w128:untrained").role == "untrained"
    assert resolve("ref-llama-small").role == "reference"
    assert resolve("tiny-ladder").members == ("tiny-w96", "tiny-w128", "tiny-w192")
    assert resolve("EleutherAI/pythia-160m").role == "hf"
    assert {resolve(n).role for n in default_names("tiny")} == {"trained", "untrained", "reference", "ladder"}


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
