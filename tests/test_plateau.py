"""Whether a zoo recipe is trained to a plateau (issue 77, item 3): its doubled run, the schedule stretched, lowers the
held-out loss by less than 1 %; the manifest keeps the measurement and the report's models table shows it."""

import json

import pytest

import models.shipped as shipped_zoo
from models.plateau import PLATEAU_GAIN, Plateau, held_out, measure, stretched
from models.trainer import train
from reports.fact_tables import plateau
from tests.conftest import MICRO


def test_the_doubled_run_is_the_same_recipe_with_its_schedule_stretched():
    doubled = stretched(MICRO)
    assert (doubled.name, doubled.steps, doubled.lr_drop_step, doubled.eval_every) == ("micro-x2", 12, 8, 6)
    assert (doubled.lr, doubled.lr_final, doubled.seed, doubled.n_embd) == (MICRO.lr, MICRO.lr_final, MICRO.seed, 16)


@pytest.mark.parametrize("own, doubled, at", [(1.80, 1.70, False), (1.60, 1.59, True), (1.50, 1.52, True),
                                              (1.0, 1.0 - PLATEAU_GAIN, False)])
def test_a_recipe_is_at_a_plateau_where_twice_the_training_lowers_the_loss_by_less_than_one_percent(own, doubled, at):
    p = Plateau(700, own, 1400, doubled)
    assert p.at_plateau is at and p.to_json()["at_plateau"] is at and p.to_json()["threshold"] == PLATEAU_GAIN
    assert ("not at a plateau" in p.describe()) is not at


def test_the_held_out_loss_of_a_checkpoint_and_its_doubled_run_is_measured_on_the_same_text(micro_corpus):
    own, doubled = train(MICRO, micro_corpus), train(stretched(MICRO), micro_corpus)
    result = measure(MICRO, own, doubled, micro_corpus)
    assert (result.steps, result.doubled_steps) == (6, 12)
    assert result.bits_per_character == held_out(own, micro_corpus) > 0
    assert result.doubled_bits_per_character < result.bits_per_character  # six more steps on a small text help


def test_the_manifest_keeps_a_shipped_models_plateau_and_the_models_table_shows_it(tmp_path, monkeypatch):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"models": {"tiny-w96": {"weights_sha256": "ab"}}}))
    monkeypatch.setattr(shipped_zoo, "MANIFEST", manifest)
    assert shipped_zoo.plateau_of("tiny-w96") is None
    measured = Plateau(700, 2.59, 1400, 2.45).to_json()
    shipped_zoo.keep_plateau("tiny-w96", measured)
    assert shipped_zoo.plateau_of("tiny-w96") == measured
    assert json.loads(manifest.read_text())["models"]["tiny-w96"]["weights_sha256"] == "ab"  # the rest kept
    with pytest.raises(shipped_zoo.ModelLoadError, match="ship it first"):
        shipped_zoo.keep_plateau("tiny-w999", measured)
    assert plateau({"role": "trained", "plateau": measured}) == (
        "no: 2.59 → 2.45 bits/char at 700 → 1400 steps (5.4% lower)")
    assert plateau({"role": "trained", "plateau": None}) == "not measured" and plateau({"role": "reference"}) == ""


def test_python_m_models_plateau_trains_the_doubled_runs_and_writes_only_with_write(monkeypatch, capsys):
    import models.__main__ as cli

    trained, kept = [], {}
    monkeypatch.setattr(cli, "train_batched", lambda group, corpus, device: trained.extend(r.name for r in group))
    monkeypatch.setattr(cli, "checkpoint", lambda recipe, corpus, build, device: (None, "ab" * 32))
    monkeypatch.setattr(cli, "measure", lambda recipe, own, doubled, corpus: Plateau(recipe.steps, 1.8, 1400, 1.7))
    monkeypatch.setattr(cli, "keep_plateau", lambda name, measured: kept.update({name: measured}))
    assert cli.main(["plateau", "tiny-w96", "tiny-w96-seed88", "--device", "cpu"]) == 0
    assert trained == ["tiny-w96-x2", "tiny-w96-seed88-x2"] and kept == {}  # one by one on a CPU; nothing written
    assert "tiny-w96: 1.8 bits/char at 700 steps, 1.7 at 1400 (5.6% lower): not at a plateau" in capsys.readouterr().out
    assert cli.main(["plateau", "tiny-w96", "--write", "--device", "cpu"]) == 0
    assert kept["tiny-w96"]["at_plateau"] is False and kept["tiny-w96"]["steps"] == 700
