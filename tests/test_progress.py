"""Training progress: the estimate is measured on the first steps and the bar's ETA covers every model to train."""

from contextlib import contextmanager
from dataclasses import replace

import pytest

from models.corpus import Corpus
from models.progress import CALIBRATION_STEPS, TrainingProgress, training_flops
from models.recipes import TINY
from models.trainer import train

TEXT = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer. " * 60
CORPUS = Corpus("toy", TEXT, "0" * 64)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LATENT_CLAIMS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_bar_counts_the_work_of_every_model_and_the_estimate_covers_the_rest(capsys):
    progress = TrainingProgress({"a": 100.0, "b": 300.0}, "zoo toy")
    assert progress.bar.total == 400.0
    for _ in range(10):
        progress.advance(5.0, model="a")
    line = progress.measured("a", steps_left=10, seconds_per_step=2.0, flops_per_step=5.0)
    progress.close()
    # a: 10 steps × 2 s; all: (400 − 50) FLOPs at 5 FLOPs per 2 s = 140 s, about 2 minutes
    assert line == ("training a: about 20 seconds more (2 s a step over its first 10 steps); the 2 models: about "
                    "2 minutes more at this throughput (2.5e-09 GFLOP/s of training)")
    assert line in capsys.readouterr().err


def test_one_model_s_line_names_no_other(capsys):
    progress = TrainingProgress({"a": 100.0}, "training a")
    assert "models" not in progress.measured("a", 3, 0.5, 1.0)
    progress.close()


def test_training_states_its_measured_estimate_after_the_first_steps(cache, capsys):
    micro = replace(TINY[0], name="micro", n_layer=1, n_embd=16, n_head=2, context=16, batch=2,
                    steps=CALIBRATION_STEPS + 3, eval_every=CALIBRATION_STEPS + 3)
    train(micro, CORPUS)
    err = capsys.readouterr().err
    assert "training micro: about " in err and f"a step over its first {CALIBRATION_STEPS} steps)" in err
    assert training_flops(10, 2, 3, 4) == 6 * 10 * 2 * 3 * 4


def test_a_model_trained_on_first_use_trains_where_the_terminal_sees_it(monkeypatch, tmp_path):
    """The pool trains inside its ``visible`` context, where pytest's capture is off; a cached model loads outside it."""
    import torch

    import fixtures.pool
    from fixtures.settings import Settings
    from fixtures.pool import ModelPool

    entered = []

    @contextmanager
    def visible():
        entered.append("in")
        try:
            yield
        finally:
            entered.append("out")

    def load(*args, **kwargs):
        assert entered == ["in"]
        raise fixtures.pool.ModelLoadError("stop here")

    monkeypatch.setattr(fixtures.pool, "load", load)
    monkeypatch.setattr(fixtures.pool, "needs_training", lambda entry, corpus, build: True)
    pool = ModelPool(Settings("tiny", (), "cpu", torch.float32, 0, None, tmp_path, None), CORPUS, visible=visible)
    with pytest.raises(pytest.fail.Exception, match="stop here"):
        pool.get("tiny-w96")
    assert entered == ["in", "out"]
    monkeypatch.setattr(fixtures.pool, "needs_training", lambda entry, corpus, build: False)  # a cached model loads quietly
    entered.clear()
    pool.failed.clear()
    monkeypatch.setattr(fixtures.pool, "load", lambda *a, **k: (_ for _ in ()).throw(fixtures.pool.ModelLoadError("x")))
    with pytest.raises(pytest.fail.Exception):
        pool.get("tiny-w96")
    assert entered == []


def test_only_a_zoo_recipe_without_its_checkpoint_needs_training(cache):
    from models.loading import needs_training
    from models.zoo import resolve

    assert needs_training(resolve("tiny-w96"), CORPUS)  # an empty cache, and another corpus than the shipped zoo's
    assert needs_training(resolve("tiny-w96:untrained"), CORPUS)  # a twin is built from its trained model's config
    assert not needs_training(resolve("ref-gpt2-small"), CORPUS)

