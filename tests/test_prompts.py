"""Prompt windows that are not text are redrawn (fixtures.prompts; issue 20's "prompts that are text")."""

import pytest
import torch

from fixtures.prompts import not_text, prompt_batch
from models.corpus import Corpus, load_corpus
from tests.conftest import ByteTokenizer

BOUNDARY = 0  # the word-boundary token, as sentencepiece's "▁"


class BoundaryTokens:
    """Every space is one word-boundary token (id 0), every other character its code point + 1."""

    def encode(self, text: str) -> list[int]:
        return [BOUNDARY if c == " " else ord(c) + 1 for c in text]

    def decode(self, ids) -> str:
        return "".join(" " if i == BOUNDARY else chr(i - 1) for i in ids)


def _spaced_corpus() -> Corpus:
    """Prose whose lines are indented by long runs of spaces, as verse set in a page's middle."""
    line = " " * 60 + "Now is the winter of our discontent made glorious summer\n"
    text = line * 4000
    return Corpus("spaced", text, "0" * 64)


def test_a_run_of_spaces_is_not_text_and_prose_is():
    tok = BoundaryTokens()
    assert not_text(tok.encode(" " * 21), tok) == "mostly whitespace"
    assert not_text(tok.encode("ab" + " " * 19), tok) == "mostly whitespace"
    assert not_text(tok.encode("abc  "), tok) == ""  # two of five: indented text is text
    assert not_text([7] * 15 + tok.encode("abcdef"), tok) == "one token repeated"
    assert not_text(tok.encode("Now is the winter of"), tok) == ""
    assert not_text(tok.encode(" "), tok) == ""  # a one-token prompt is whatever token it is


def test_windows_of_one_repeated_boundary_token_are_redrawn_and_counted():
    """On a corpus with long runs of spaces, an unfiltered draw holds windows of 21 × "▁"; the batch holds none."""
    corpus, tok, n, length = _spaced_corpus(), BoundaryTokens(), 32, 21
    ids = torch.tensor(tok.encode(corpus.validation))
    slots = ids.numel() // length
    unfiltered = ids[: slots * length].view(slots, length)[
        torch.randperm(slots, generator=torch.Generator().manual_seed(0))[:n]]
    assert any((row == BOUNDARY).all() for row in unfiltered)  # the input that fails the old sampler

    drawn = prompt_batch(corpus, tok, n, length, seed=0)
    assert drawn.ids.shape == (n, length)
    assert drawn.redrawn > 0
    assert not any(not_text(row.tolist(), tok) for row in drawn.ids)
    again = prompt_batch(corpus, tok, n, length, seed=0)
    assert torch.equal(again.ids, drawn.ids) and again.redrawn == drawn.redrawn


def test_a_corpus_of_prose_gives_the_unfiltered_batch():
    """Nothing is redrawn on the default corpus at the tiny profile's shape, so its batches are unchanged."""
    corpus = load_corpus(None)
    drawn = prompt_batch(corpus, ByteTokenizer(), 32, 128, seed=0)
    ids = torch.tensor(ByteTokenizer().encode(corpus.validation))
    slots = ids.numel() // 128
    chosen = torch.randperm(slots, generator=torch.Generator().manual_seed(0))[:32].sort().values
    assert drawn.redrawn == 0
    assert torch.equal(drawn.ids, torch.stack([ids[s * 128:(s + 1) * 128] for s in chosen.tolist()]))


def test_a_corpus_of_only_whitespace_is_refused_with_the_reason():
    corpus = Corpus("blank", (" " * 50 + "\n") * 2000, "0" * 64)
    with pytest.raises(ValueError, match="0 windows of 21 tokens that are text.*mostly whitespace or one token"):
        prompt_batch(corpus, BoundaryTokens(), 8, 21, seed=0)


class CountingTokenizer(ByteTokenizer):
    """ByteTokenizer that counts the characters it was asked to encode."""

    def __init__(self):
        self.encoded = 0

    def encode(self, text: str) -> list[int]:
        self.encoded += len(text)
        return super().encode(text)


def test_a_tokenizer_encodes_a_validation_text_once_for_every_batch_drawn_from_it():
    """The shared batch, a later look's and a claim's own all slice one encoding (``fixtures.prompts._ENCODED``); a
    second tokenizer, or another text, is encoded anew, and every batch equals what a fresh encoding gives."""
    corpus, spaced = load_corpus(None), _spaced_corpus()
    once, fresh = CountingTokenizer(), CountingTokenizer()
    batches = [prompt_batch(corpus, once, n, length, seed=0).ids for n, length in ((8, 64), (16, 64), (4, 32))]
    assert once.encoded == len(corpus.validation)
    assert all(torch.equal(b, prompt_batch(corpus, CountingTokenizer(), b.shape[0], b.shape[1], seed=0).ids)
               for b in batches)
    prompt_batch(spaced, once, 4, 32, seed=0)
    assert once.encoded == len(corpus.validation) + len(spaced.validation[:400_000])
    prompt_batch(corpus, fresh, 8, 64, seed=0)
    assert fresh.encoded == len(corpus.validation)
