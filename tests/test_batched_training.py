"""Seed siblings trained as one batched job (models.batched_training, issue 58 item 2)."""

import copy
import json
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file

from torch.func import stack_module_state

from models.batched_training import _losses, seed_siblings_of, sibling_batches, train_batched
from models.errors import ModelLoadError
from models.trainer import build_model, checkpoint_dir, train
from tests.conftest import MICRO  # `micro_corpus`: conftest's fixture, a small corpus with a cache of its own

SIBLINGS = [MICRO, replace(MICRO, name="micro-seed1442", seed=1442), replace(MICRO, name="micro-seed88", seed=88)]


def _weights(folder):
    return load_file(folder / "model.safetensors")


def test_a_few_batched_steps_give_each_model_the_weights_of_training_it_alone(micro_corpus, tmp_path, monkeypatch):
    """Own seed, data order and optimizer state per model: without dropout, each model's weights after the batched
    job are those of training it alone, to float32 tolerance; a model is not its sibling (the check can fail)."""
    batched = [_weights(f) for f in train_batched(SIBLINGS, micro_corpus)]
    monkeypatch.setenv("LATENT_CLAIMS_CACHE", str(tmp_path / "alone"))
    alone = [_weights(train(r, micro_corpus)) for r in SIBLINGS]
    for mine, theirs in zip(batched, alone):
        assert mine.keys() == theirs.keys()
        for name in mine:
            torch.testing.assert_close(mine[name], theirs[name], rtol=1e-4, atol=1e-5)
    changed = batched[1]["transformer.h.0.mlp.c_fc.weight"] - alone[0]["transformer.h.0.mlp.c_fc.weight"]
    assert changed.abs().max() > 1e-3  # siblings differ: the comparison above could have failed


def test_a_batched_checkpoint_says_what_it_was_trained_with_and_has_its_own_curve(micro_corpus):
    folders = train_batched(SIBLINGS, micro_corpus)
    assert folders == [checkpoint_dir(r, micro_corpus) for r in SIBLINGS]
    metas = [json.loads((f / "loss_curve.json").read_text()) for f in folders]
    assert metas[0]["trained_with"] == ["micro-seed1442", "micro-seed88"]
    assert metas[0]["train_seconds"] == pytest.approx(metas[0]["job_seconds"] / 3)  # its share of the job
    assert [p["step"] for p in metas[1]["curve"]] == [3, 6]
    assert metas[0]["curve"] != metas[1]["curve"]


def test_cached_siblings_are_kept_and_the_rest_train(micro_corpus):
    """A cached sibling is not retrained; with one left to train, it trains alone; a damaged cached sibling is named
    before any training."""
    cached = train(SIBLINGS[0], micro_corpus)
    stamp = (cached / "model.safetensors").stat().st_mtime_ns
    folders = train_batched(SIBLINGS[:2], micro_corpus)
    assert (cached / "model.safetensors").stat().st_mtime_ns == stamp
    assert "trained_with" not in json.loads((folders[1] / "loss_curve.json").read_text())
    (cached / "loss_curve.json").unlink()
    with pytest.raises(ModelLoadError, match="the cached checkpoint of micro is damaged"):
        train_batched(SIBLINGS, micro_corpus)
    assert not checkpoint_dir(SIBLINGS[2], micro_corpus).exists()


def test_with_dropout_each_model_draws_its_own_masks_and_the_job_repeats(micro_corpus, tmp_path, monkeypatch):
    """S4's recipe has dropout. Two copies of one model given one batch lose differently in training mode (masks of
    their own) and alike in eval mode; the job's dropout changes its weights; and the same job run again gives the
    same bits (its masks come from the seeded global generator)."""
    model = build_model(replace(MICRO, dropout=0.2), 30)
    params, buffers = stack_module_state([model, copy.deepcopy(model)])
    base = copy.deepcopy(model).to("meta")
    base.set_attn_implementation("eager")
    batch = torch.randint(0, 30, (1, 4, 16), generator=torch.Generator().manual_seed(0)).expand(2, 4, 16)
    base.train()
    trained = _losses(base)(params, buffers, batch, batch)
    base.eval()
    evaluated = _losses(base)(params, buffers, batch, batch)
    assert trained[0] != trained[1] and evaluated[0] == evaluated[1]

    dropped = [replace(r, dropout=0.2) for r in SIBLINGS[:2]]
    first = [_weights(f) for f in train_batched(dropped, micro_corpus)]
    monkeypatch.setenv("LATENT_CLAIMS_CACHE", str(tmp_path / "again"))
    again = [_weights(f) for f in train_batched(dropped, micro_corpus)]
    assert all(torch.equal(a[k], b[k]) for a, b in zip(first, again) for k in a)
    plain = _weights(train_batched(SIBLINGS[:2], micro_corpus)[0])
    assert not torch.equal(plain["transformer.h.0.mlp.c_fc.weight"], first[0]["transformer.h.0.mlp.c_fc.weight"])


def test_only_seed_siblings_are_one_job():
    wider = replace(MICRO, name="micro-w32", n_embd=32)
    assert seed_siblings_of(SIBLINGS[0], SIBLINGS[1]) and not seed_siblings_of(MICRO, wider)
    assert not seed_siblings_of(MICRO, replace(MICRO, name="same-seed"))
    assert sibling_batches([MICRO, wider, *SIBLINGS[1:]]) == [[MICRO, *SIBLINGS[1:]], [wider]]
    with pytest.raises(ValueError, match="differ in more than name and seed"):
        train_batched([MICRO, wider], None)
