"""A model's identity includes the config that builds it (issue 74, case 2): a config.json edited in place (another
activation, another layer-norm epsilon) over the same weights is named by ``--baseline``, not blamed on the weights,
the library or the machine."""

import json

import pytest

from models.identity import config_sha256
from fixtures.catalogue import catalogue_json
from reports import baseline, sections, writer
from reports.document import RunDocument
from tests.builders import edit, record, settings_for
from tests.conftest import tiny_model

WEIGHTS = "ab" * 32


def write(s, records):
    return writer.write_run(s, records, {}, 0, 100.0, catalogue_json())


def compare(old, records, facts, models):
    doc = RunDocument.from_json({**facts, "models": models})
    doc.records = list(records)
    return baseline.compare(old, doc)


def test_the_config_digest_names_what_builds_the_model_and_not_where_it_was_read_from():
    model = tiny_model("gpt2")
    same = tiny_model("gpt2")
    same.config._name_or_path, same.config.torch_dtype = "/somewhere/else", "bfloat16"
    assert config_sha256(model.config) == config_sha256(same.config)
    assert len(config_sha256(model.config)) == 64
    for key, value in (("activation_function", "gelu_new"), ("layer_norm_epsilon", 0.1)):
        other = tiny_model("gpt2")
        setattr(other.config, key, value)
        assert config_sha256(other.config) != config_sha256(model.config), key


def test_a_baseline_names_a_config_changed_under_the_same_weights(tmp_path):
    s = settings_for(tmp_path)
    old = write(s, [record(0.2)])
    edit(old, models={"tiny-w128": {"weights_sha256": WEIGHTS, "config_sha256": "11" * 32}})
    doc = json.loads((old / "results.json").read_text())
    changed = compare(old / "results.json", [record(-0.2)], facts=doc,
                      models={"tiny-w128": {"weights_sha256": WEIGHTS, "config_sha256": "22" * 32}})
    pair = changed["models"][0]
    assert pair["same_weights"] is True and pair["same_config"] is False
    assert [m["new"] for m in changed["reconfigured_in_place"]] == ["tiny-w128"]
    assert changed["retrained_in_place"] == []
    lines = sections.baseline_lines(RunDocument.from_json({**doc, "baseline": changed}))
    said = next(line for line in lines if line.startswith("RECONFIGURED IN PLACE"))
    assert "tiny-w128" in said and "config" in said and "111111111111 → 222222222222" in said


def test_a_baseline_made_before_config_digests_is_not_called_reconfigured(tmp_path):
    s = settings_for(tmp_path)
    old = write(s, [record(0.2)])
    edit(old, models={"tiny-w128": {"weights_sha256": WEIGHTS}})
    doc = json.loads((old / "results.json").read_text())
    changed = compare(old / "results.json", [record(0.2)], facts=doc,
                      models={"tiny-w128": {"weights_sha256": WEIGHTS, "config_sha256": "22" * 32}})
    assert changed["models"][0]["same_config"] is None and changed["reconfigured_in_place"] == []


def test_a_folders_fingerprint_names_its_config_so_a_ledger_entry_stops_applying_to_an_edited_one(tmp_path):
    """Case 2: ledger entries bind a folder's fingerprint; an edited config.json over the same weights is another
    model, so an entry measured before the edit no longer applies (and the note says which model it was)."""
    from fixtures.ledger import Expectation, applicable
    from models.corpus import load_text_file
    from models.identity import folder_sha256
    from models.zoo import fingerprint, resolve
    from tests.builders import TEXT, save_hf_folder

    (tmp_path / "c.txt").write_text(TEXT * 40)
    corpus = load_text_file(tmp_path / "c.txt")
    folder = save_hf_folder(tmp_path / "m", arch="gpt2")
    weights, before = folder_sha256(folder), fingerprint(resolve(str(folder)), corpus, 0)
    entry = Expectation("S4.5", str(folder), before, "why", "would", version=3)
    ledger = {("S4.5", str(folder), "", ""): entry}

    def now(_name):
        return fingerprint(resolve(str(folder)), corpus, 0)

    assert applicable(ledger, "S4.5", 3, str(folder), "", "test_x", now)[0] is entry
    config = json.loads((folder / "config.json").read_text())
    config["activation_function"], config["layer_norm_epsilon"] = "gelu_new", 0.1
    (folder / "config.json").write_text(json.dumps(config))
    assert folder_sha256(folder) == weights  # the same weights...
    assert now(None) != before  # ...are another model
    found, why = applicable(ledger, "S4.5", 3, str(folder), "", "test_x", now)
    assert found is None and before in why and "does not apply" in why
    old_style = Expectation("S4.5", str(folder), f"weights-{weights[:16]}", "why", "would", version=3)
    why = applicable({("S4.5", str(folder), "", ""): old_style}, "S4.5", 3, str(folder), "", "test_x", now)[1]
    assert "before a folder's fingerprint held its config.json" in why


def test_cached_string_outputs_are_keyed_by_the_config_too():
    """S4.6's cached FFN outputs of the corpus strings: the same weights under another config compute others."""
    import torch

    from latent_instruments.strings import StringTable
    from models.string_outputs import cache_path

    table = StringTable.of(torch.arange(40).numpy() % 7, 3, 7)
    assert cache_path(WEIGHTS, "11" * 32, table) != cache_path(WEIGHTS, "22" * 32, table)
