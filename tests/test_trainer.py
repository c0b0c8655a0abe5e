"""The trainer: a recipe makes a cached, self-describing safetensors checkpoint."""

import json
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file

from models.tokenization import CharTokenizer, is_hf_tokenizer_folder, tokenizer_from_json
from models.trainer import checkpoint_dir, gpt2_config, train
from tests.conftest import MICRO, MICRO_TEXT as TEXT  # `micro_corpus`: conftest's fixture


def test_checkpoint_carries_recipe_tokenizer_and_loss_curve(micro_corpus):
    folder = train(MICRO, micro_corpus)
    assert json.loads((folder / "recipe.json").read_text())["name"] == "micro"
    assert tokenizer_from_json((folder / "tokenizer.json").read_text()) == CharTokenizer.from_corpus(micro_corpus)
    curve = json.loads((folder / "loss_curve.json").read_text())["curve"]
    assert [point["step"] for point in curve] == [3, 6]
    assert "lm_head.weight" in load_file(folder / "model.safetensors")  # untied head is saved


def test_cached_checkpoint_is_not_retrained(micro_corpus):
    folder = train(MICRO, micro_corpus)
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert train(MICRO, micro_corpus) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp


def test_same_recipe_same_weights(micro_corpus, tmp_path, monkeypatch):
    first = load_file(train(MICRO, micro_corpus) / "model.safetensors")
    monkeypatch.setenv("LATENT_CLAIMS_CACHE", str(tmp_path / "other-cache"))
    second = load_file(train(MICRO, micro_corpus) / "model.safetensors")
    assert all(torch.equal(first[k], second[k]) for k in first)


def test_key_depends_on_recipe_and_corpus(micro_corpus):
    assert checkpoint_dir(MICRO, micro_corpus) != checkpoint_dir(replace(MICRO, seed=1442), micro_corpus)
    tok = CharTokenizer.from_corpus(micro_corpus)
    assert MICRO.key(micro_corpus.sha256, tok.to_json()) != MICRO.key("0" * 64, tok.to_json())
    assert checkpoint_dir(MICRO, micro_corpus) != checkpoint_dir(replace(MICRO, tokenizer="bpe"), micro_corpus)


def test_the_tokenizer_field_keeps_char_level_keys():
    """Checkpoints trained before recipes named their tokenizer keep their folders (the key the code gave before
    the field existed): the tokenizer enters the key through its JSON, not through the field."""
    assert MICRO.key("0" * 64, '{"kind": "char", "alphabet": "ab"}') == "4356636b237c285d"


def test_full_profile_is_s4s_recipe():
    """S4's model facts (CLAIMS.md): 6 blocks, 384 wide, 6 heads, context 256, dropout 0.2,
    AdamW 3e-4 for 3500 steps then 3e-5, batch 64, seed 1337; 4500 steps in all."""
    from models.recipes import FULL, LADDERS, MAIN_MODEL

    s4 = next(r for r in FULL if r.name == MAIN_MODEL["full"])
    assert (s4.n_layer, s4.n_embd, s4.n_head, s4.context, s4.dropout) == (6, 384, 6, 256, 0.2)
    assert (s4.lr, s4.lr_drop_step, s4.lr_final, s4.batch, s4.seed, s4.steps) == (3e-4, 3500, 3e-5, 64, 1337, 4500)
    assert [r.n_embd for r in LADDERS["full"]] == [192, 384, 768]
    assert s4.tokenizer == "char"  # S4: one token per character
    config = gpt2_config(s4, 65)  # S4's model drops out attention weights and residual branches, not embeddings
    assert (config.attn_pdrop, config.resid_pdrop, config.embd_pdrop) == (0.2, 0.2, 0.0)
    assert gpt2_config(replace(s4, embd_dropout=None), 65).embd_pdrop == 0.2  # the field decides: this fails without it


@pytest.mark.parametrize("kind", ["char", "bpe"])
def test_a_checkpoint_folder_is_a_plain_hf_folder_whose_tokenizer_autotokenizer_loads(micro_corpus, kind):
    """Any tool opens a zoo checkpoint: AutoTokenizer gives the tokens the model was trained on, and back."""
    from transformers import AutoTokenizer

    from models.tokenization import corpus_tokenizer

    folder = train(replace(MICRO, tokenizer=kind), micro_corpus)
    ours, theirs = corpus_tokenizer(kind, micro_corpus), AutoTokenizer.from_pretrained(folder)
    text = TEXT[:300]
    ids = theirs(text, add_special_tokens=False)["input_ids"]
    assert ids == ours.encode(text) and theirs.decode(ids) == text
    assert tokenizer_from_json((folder / "tokenizer.json").read_text()).encode(text) == ids


def test_a_checkpoint_of_an_earlier_version_gets_hf_tokenizer_files_and_keeps_its_weights(micro_corpus):
    folder = train(MICRO, micro_corpus)
    weights = (folder / "model.safetensors").read_bytes()
    (folder / "tokenizer.json").write_text(CharTokenizer.from_corpus(micro_corpus).to_json())  # the earlier form
    (folder / "tokenizer_config.json").unlink()
    assert not is_hf_tokenizer_folder(folder)
    assert train(MICRO, micro_corpus) == folder
    assert is_hf_tokenizer_folder(folder) and (folder / "model.safetensors").read_bytes() == weights
