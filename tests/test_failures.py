"""Clear failures: each broken model, folder or cache entry gives one short message that names the file or
setting at fault (and what to do), once per model; nothing a user has is deleted, no foreign code runs."""

import io
import json
import os
import pickle
import shlex
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from transformers import GPT2LMHeadModel, GPTBigCodeConfig, GPTBigCodeForCausalLM, PreTrainedTokenizerFast

import fixtures.pool
import models.__main__ as prepare
import models.load_errors as load_errors
import models.trainer as trainer
from fixtures.settings import Settings
from fixtures.pool import ModelPool
from models.corpus import Corpus
from models.errors import ModelLoadError as DefinedError
from models.recipes import FULL, GROUP_RECIPES, PREPARED, TINY
from models.tokenization import CharTokenizer, corpus_tokenizer
from models.trainer import checkpoint_dir, estimate_training_seconds, format_duration, recipe_n_params, train
from models.errors import ModelLoadError
from models.loading import load
from models.zoo import resolve
from tests.conftest import tiny_model
from tests.helpers import pytest_inprocess as pytest_run
from tests.builders import TEXT, save_hf_folder

CORPUS = Corpus("toy", TEXT * 4, "0" * 64)  # long enough for the pool's 32 prompts of 32 tokens


def load_folder(folder: Path, twin: bool = False):
    return load(resolve(f"{folder}:untrained" if twin else str(folder)), CORPUS, "cpu", torch.float32, seed=0)


def load_error(folder: Path, twin: bool = False) -> str:
    """The message of the ModelLoadError that loading the folder raises; it is one line."""
    with pytest.raises(ModelLoadError) as refused:
        load_folder(folder, twin)
    message = str(refused.value)
    assert "\n" not in message, message
    return message


def save_model_with_tokenizer(folder: Path, model) -> Path:
    """Any model, saved with save_hf_folder's tokenizer (save_hf_folder's own model is replaced)."""
    save_hf_folder(folder, arch="gpt2")
    (folder / "model.safetensors").unlink()
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def bigcode_folder(folder: Path) -> Path:
    """A tiny GPT-BigCode: transformers has the architecture, models/adapters.py has no adapter for it."""
    torch.manual_seed(0)
    model = GPTBigCodeForCausalLM(GPTBigCodeConfig(n_embd=32, n_layer=1, n_head=2, vocab_size=50, n_positions=32))
    return save_model_with_tokenizer(folder, model)


class SystemCall:
    """A pickle payload that runs a shell command when unpickled (never, here)."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def test_model_load_error_is_still_importable_from_the_zoo():
    from models import zoo

    assert zoo.ModelLoadError is DefinedError


def test_a_truncated_safetensors_file_is_named(tmp_path):
    folder = save_hf_folder(tmp_path / "truncated", arch="gpt2")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    message = load_error(folder)
    assert message.startswith(f"could not load {weights}: it is truncated or not a safetensors file")
    assert "model.save_pretrained(folder)" in message


def test_a_tokenizer_json_that_is_json_but_no_tokenizer_is_named(tmp_path):
    folder = save_hf_folder(tmp_path / "odd-tokenizer", arch="gpt2")
    (folder / "tokenizer.json").write_text('{"version": "1.0", "model": {}}')
    message = load_error(folder)
    assert "tokenizer.json" in message and "not a tokenizer transformers can read" in message
    assert "tokenizer.save_pretrained(folder)" in message and "KeyError" not in message


def test_a_nan_in_a_weight_the_prompts_never_reach_is_a_load_error_naming_it(tmp_path):
    """A NaN in the output head's first row passes the residual identity; the weights themselves are read."""
    from safetensors.torch import load_file, save_file

    folder = save_hf_folder(tmp_path / "nan-head", arch="gpt2")
    weights = load_file(folder / "model.safetensors")
    name = next(k for k in weights if k.endswith("wte.weight"))  # GPT-2's head is tied to it: the head's row 0
    weights[name][0, 0] = float("nan")
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    message = load_error(folder)
    assert f"weight {name.removeprefix('transformer.')}" in message or f"weight {name}" in message
    assert "holds 1 non-finite value(s)" in message and "no claim can use it" in message


@pytest.mark.parametrize("twin", [False, True], ids=["model", "twin"])
def test_a_folder_without_tokenizer_files_says_to_save_the_tokenizer(tmp_path, twin):
    folder = tmp_path / "no-tokenizer"
    tiny_model("gpt2").save_pretrained(folder)
    message = load_error(folder, twin)
    assert message.startswith(f"{folder}: no tokenizer files")
    assert "tokenizer.save_pretrained(folder)" in message
    assert "validation split" not in message


def test_a_tokenizer_larger_than_the_vocabulary_is_named_with_both_sizes(tmp_path):
    folder = save_hf_folder(tmp_path / "mismatch", arch="gpt2")  # 50 embedding rows
    tokenizer = PreTrainedTokenizerFast.from_pretrained(folder)
    tokenizer.add_tokens([f"<extra{i}>" for i in range(10)])
    tokenizer.save_pretrained(folder)
    message = load_error(folder)
    assert message.startswith(f"{folder}: the tokenizer has 60 tokens but the model's vocabulary is 50 "
                              "(input embedding rows; config.vocab_size 50)")


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # torch's note on a plain pickle.dump file
@pytest.mark.parametrize("writer", ["torch.save", "pickle.dump"])
def test_a_pickle_payload_is_refused_and_never_runs(tmp_path, writer):
    folder = save_hf_folder(tmp_path / "pickled", arch="gpt2")
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "payload-ran"
    payload = {"transformer.wte.weight": SystemCall(f"touch {shlex.quote(str(marker))}")}
    weights = folder / "pytorch_model.bin"
    if writer == "torch.save":
        torch.save(payload, weights)
    else:
        weights.write_bytes(pickle.dumps(payload))
    assert b"system" in weights.read_bytes()  # the payload is there
    message = load_error(folder)
    assert not marker.exists()
    assert message.startswith(f"{weights}: refused to unpickle (")
    assert "weights_only=True" in message and "convert it to safetensors" in message.lower()


def remote_code_folder(folder: Path, marker: Path, model_type: str) -> Path:
    """A folder whose config.json maps the Auto classes to code in the folder that leaves a marker if imported."""
    save_hf_folder(folder, arch="gpt2")
    code = (f"import pathlib\npathlib.Path({str(marker)!r}).write_text('remote code ran')\n"
            "from transformers import GPT2Config, GPT2LMHeadModel\n\n"
            f"class MyConfig(GPT2Config):\n    model_type = {model_type!r}\n\n"
            "class MyModel(GPT2LMHeadModel):\n    config_class = MyConfig\n")
    (folder / "configuration_my.py").write_text(code)
    (folder / "modeling_my.py").write_text(code)
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type=model_type, auto_map={"AutoConfig": "configuration_my.MyConfig",
                                                   "AutoModelForCausalLM": "modeling_my.MyModel"})
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("twin", [False, True], ids=["model", "twin"])
def test_remote_code_is_never_run_and_the_config_field_is_named(tmp_path, twin):
    marker = tmp_path / "remote-code-ran"
    folder = remote_code_folder(tmp_path / "custom", marker, "my_gpt")
    message = load_error(folder, twin)
    assert not marker.exists()
    assert message.startswith(f"{folder / 'config.json'}: model_type 'my_gpt' is not built into transformers and "
                              "its auto_map field (AutoConfig, AutoModelForCausalLM)")
    assert "remote code is never trusted (trust_remote_code=False)" in message


def test_a_tokenizer_class_shipped_as_code_is_not_run(tmp_path):
    marker = tmp_path / "tokenizer-code-ran"
    folder = save_hf_folder(tmp_path / "tokenizer-code", arch="gpt2")
    (folder / "tokenization_my.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.update(tokenizer_class="MyTokenizer", auto_map={"AutoTokenizer": [None, "tokenization_my.MyTokenizer"]})
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    try:
        load_folder(folder)  # transformers builds its own fast tokenizer from tokenizer.json here
    except ModelLoadError as refused:
        assert "remote code is never trusted" in str(refused) and "\n" not in str(refused)
    assert not marker.exists()


def test_transformers_refusal_of_remote_code_is_one_line():
    """A hub id is not looked at before loading: transformers' own refusal becomes the one-line message."""
    refusal = ValueError("The repository org/name contains custom code which must be executed to correctly load "
                         "the model.\nPlease pass the argument `trust_remote_code=True` to allow custom code to be run.")
    message = str(load_errors.load_error("org/name", "model", refusal))
    assert message.startswith("'org/name' needs remote code for its model (an auto_map field in its config.json")
    assert "remote code is never trusted (trust_remote_code=False)" in message and "\n" not in message


def test_an_auto_map_of_a_built_in_architecture_loads_the_built_in_class_without_its_code(tmp_path):
    marker = tmp_path / "remote-code-ran"
    loaded = load_folder(remote_code_folder(tmp_path / "gpt2-with-code", marker, "gpt2"))
    assert type(loaded.model) is GPT2LMHeadModel and loaded.adapter.model_type == "gpt2"
    assert not marker.exists()


def nan_folder(folder: Path) -> Path:
    model = tiny_model("gpt2")
    with torch.no_grad():
        model.transformer.wte.weight[:] = float("nan")
    return save_model_with_tokenizer(folder, model)


def no_tokenizer_folder(folder: Path) -> Path:
    tiny_model("gpt2").save_pretrained(folder)
    return folder


def pickle_folder(folder: Path) -> Path:
    save_hf_folder(folder, arch="gpt2")
    (folder / "model.safetensors").unlink()
    torch.save({"w": SystemCall("true")}, folder / "pytorch_model.bin")
    return folder


@pytest.fixture
def pool(tmp_path) -> ModelPool:
    settings = Settings(zoo="tiny", models=(), device="cpu", dtype=torch.float32, seed=0, corpus=None,
                        report_dir=tmp_path / "reports", baseline=None)
    return ModelPool(settings, CORPUS)


@pytest.mark.parametrize("make, first_words", [
    (bigcode_folder, "{name}: no activation adapter for architecture 'gpt_bigcode' (GPTBigCodeForCausalLM)"),
    (nan_folder, "{name}: weight transformer.wte.weight holds "),  # read at load, before any activation
    (no_tokenizer_folder, "{name}: no tokenizer files"),
    (pickle_folder, "{name}/pytorch_model.bin: refused to unpickle"),
], ids=["unsupported-architecture", "nan-weights", "no-tokenizer", "pickle"])
def test_the_pool_fails_each_test_of_a_broken_model_with_one_message_and_loads_it_once(
        tmp_path, pool, monkeypatch, make, first_words):
    name = str(make(tmp_path / "broken"))
    calls = []
    real_load = fixtures.pool.load
    monkeypatch.setattr(fixtures.pool, "load", lambda *a, **k: calls.append(a[0].name) or real_load(*a, **k))
    messages = []
    for _ in range(2):  # the first test of the model, and a later one
        with pytest.raises(pytest.fail.Exception) as failed:
            pool.get(name)
        assert failed.value.pytrace is False and failed.value.__context__ is None  # just the message, no chain
        messages.append(failed.value.msg)
    assert calls == [name]
    assert messages[0] == messages[1] == pool.failed[name]
    assert messages[0].startswith(first_words.format(name=name)) and "\n" not in messages[0]
    assert pool.describe()[name] == {"role": "hf", "error": messages[0]}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("LATENT_CLAIMS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def damaged_checkpoint(recipe, damage: str) -> Path:
    """A checkpoint folder where train() looks for the recipe's, with one file missing or corrupt."""
    folder = checkpoint_dir(recipe, CORPUS)
    folder.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "loss_curve.json", "recipe.json"):
        (folder / name).write_text("{}")
    if damage == "truncated":
        (folder / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    elif damage == "no-curve":
        (folder / "model.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")  # an empty, valid file
        (folder / "loss_curve.json").unlink()
    return folder


def snapshot(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.mark.parametrize("damage, problem", [
    ("missing", "missing model.safetensors"),
    ("truncated", "model.safetensors cannot be opened (Error while deserializing header"),
    ("no-curve", "missing loss_curve.json"),
])
def test_a_damaged_cache_entry_is_named_with_the_command_that_rebuilds_it(cache, damage, problem):
    recipe = TINY[0]
    folder = damaged_checkpoint(recipe, damage)
    before = snapshot(folder)
    with pytest.raises(ModelLoadError) as refused:
        train(recipe, CORPUS)
    message = str(refused.value)
    assert message.startswith(f"the cached checkpoint of tiny-w96 is damaged ({problem}")
    assert f": {folder}; nothing was deleted." in message
    assert message.endswith(f"Rebuild it with: rm -rf '{folder}' && python -m models prepare --zoo tiny --corpus toy")
    assert snapshot(folder) == before  # nothing deleted, nothing retrained
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no scratch folder of a training run


def test_a_damaged_cache_entry_fails_loading_the_model_and_its_twin(cache):
    folder = damaged_checkpoint(TINY[0], "missing")
    for name in ("tiny-w96", "tiny-w96:untrained"):
        with pytest.raises(ModelLoadError, match=f"damaged .*{folder}"):
            load(resolve(name), CORPUS, "cpu", torch.float32, seed=0)


def test_a_group_members_cache_entry_is_rebuilt_by_naming_it(cache):
    sibling = GROUP_RECIPES["siblings"]["tiny"][1]
    folder = damaged_checkpoint(sibling, "missing")
    with pytest.raises(ModelLoadError) as refused:
        train(sibling, CORPUS)
    assert str(refused.value).endswith(f"rm -rf '{folder}' && python -m models prepare {sibling.name} --corpus toy")
    assert prepare.named_recipes([sibling.name]) == [sibling]


def test_prepare_names_every_damaged_entry_before_training_anything(cache, monkeypatch, capsys):
    monkeypatch.setattr(prepare, "load_corpus", lambda path: CORPUS)
    monkeypatch.setattr(prepare, "train_batched", lambda *a, **k: pytest.fail("trained although an entry is damaged"))
    folders = [damaged_checkpoint(TINY[1], "missing"), damaged_checkpoint(TINY[2], "truncated")]
    assert prepare.main(["prepare", "--zoo", "tiny", "--device", "cpu"]) == 1
    errors = capsys.readouterr().err.splitlines()
    assert [line.split(" is damaged")[0] for line in errors] == ["error: the cached checkpoint of tiny-w128",
                                                                 "error: the cached checkpoint of tiny-w192"]
    assert all(line.endswith(f"rm -rf '{f}' && python -m models prepare --zoo tiny --corpus toy")
               for line, f in zip(errors, folders))


def test_the_estimate_is_six_flops_per_parameter_and_token():
    s4 = next(r for r in FULL if r.name == "s4-w384")
    n_params = recipe_n_params(s4, 65)
    assert 10.7e6 < n_params < 10.9e6  # S4's model: "10.8M parameters"
    seconds = estimate_training_seconds(n_params, s4.steps, s4.batch, s4.context, 50e9)
    assert seconds == pytest.approx(6 * n_params * 4500 * 64 * 256 / 50e9)
    assert format_duration(seconds) == "about 27 hours"
    assert estimate_training_seconds(1000, 10, 2, 5, 6e5) == pytest.approx(1.0)
    assert [format_duration(s) for s in (0.2, 40, 500, 7200, 3 * 86400 + 1)] == [
        "about 1 second", "about 40 seconds", "about 8 minutes", "about 2 hours", "about 3 days"]


def test_the_counted_parameters_are_the_models():
    micro = replace(TINY[0], n_layer=1, n_embd=16, n_head=2, context=16)
    vocab = CharTokenizer.from_corpus(CORPUS).vocab_size
    built = GPT2LMHeadModel(trainer.gpt2_config(micro, vocab))
    assert recipe_n_params(micro, vocab) == sum(p.numel() for p in built.parameters())


@pytest.mark.parametrize("flops, says", [(1e3, True), (1e18, False)], ids=["long", "short"])
def test_a_long_training_run_says_how_long_on_the_terminal_first(cache, monkeypatch, flops, says):
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    monkeypatch.setattr(trainer, "measure_matmul_flops", lambda device: flops)
    micro = replace(TINY[0], name="micro", n_layer=1, n_embd=16, n_head=2, context=16, steps=1, batch=2, eval_every=1)
    train(micro, CORPUS)
    lines = terminal.getvalue().splitlines()
    if says:
        assert len(lines) == 1
        assert lines[0].startswith("training micro on cpu: about ")
        assert "(1 steps × 2 × 16 tokens, 0.0M parameters, at ~0 GFLOP/s measured here); Ctrl-C to stop, or use " \
               "--zoo tiny" in lines[0]
    else:
        assert lines == []


def test_prepare_states_the_profiles_total_estimate_before_training(cache, monkeypatch, capsys):
    trained = []
    monkeypatch.setattr(prepare, "load_corpus", lambda path: CORPUS)
    monkeypatch.setattr(prepare, "measure_matmul_flops", lambda device: 50e9)
    monkeypatch.setattr(prepare, "train_batched", lambda group, corpus, device, progress:
                        trained.append([r.name for r in group]) or [Path(".")] * len(group))
    assert prepare.main(["prepare", "--zoo", "full", "--device", "cpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    plan = next(i for i, line in enumerate(out) if line.startswith("zoo full on cpu: 10 of 10 models to train"))
    assert plan < next(i for i, line in enumerate(out) if line.startswith("s4-w192:"))
    vocab = {kind: corpus_tokenizer(kind, CORPUS).vocab_size for kind in ("char", "bpe")}
    total = sum(estimate_training_seconds(recipe_n_params(r, vocab[r.tokenizer]), r.steps, r.batch, r.context, 50e9)
                for r in PREPARED["full"])
    assert f"{format_duration(total)} in all as a first guess" in out[plan]
    assert "~50 GFLOP/s of matmul measured here" in out[plan] and out[plan].endswith("Ctrl-C to stop, or use --zoo tiny")
    assert trained == [["s4-w192", "s4-w192-seed1442"],  # a recipe and its seed siblings: one batched job each
                       ["s4-w384", "s4-w384-seed1442", "s4-w384-seed88", "s4-w384-seed99999"],  # S4.6-S4.8's floor
                       ["s4-w768", "s4-w768-seed1442"],  # the ladder's ends at a second seed (S3.5)
                       ["s4-bpe-w384"], ["s4-mixer-w384"]]  # another tokenizer; the masked mixer (S3.12)


def test_a_run_with_an_unsupported_model_reports_it_once_and_runs_the_others(tmp_path):
    """End to end: the folder's claim tests are errors with the pool's one message; tiny-w96's run as usual."""
    folder = str(bigcode_folder(tmp_path / "my-bigcode"))
    done = pytest_run("claims", "-m", "gpu", "--model", folder, "--model", "tiny-w96", "--claim", "S4.1", "--claim",
                      "S1.1", "--report-dir", str(tmp_path / "reports"), "-p", "no:cacheprovider", "-q")  # two cheap claims
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "reports" / "latest" / "results.json").read_text())
    entry = results["models"][folder]
    assert entry["role"] == "hf"
    assert entry["error"].startswith(f"{folder}: no activation adapter for architecture 'gpt_bigcode'")
    mine = [r for r in results["records"] if r["model"] == folder]
    assert len(mine) >= 2 and all(r["outcome"] == "error" and entry["error"] in r["message"] for r in mine)
    assert any(r["model"] == "tiny-w96" for r in results["records"])
    assert "Traceback" not in done.stdout and "During handling" not in done.stdout
