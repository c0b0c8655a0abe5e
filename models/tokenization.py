"""Tokenizers: character level (as S4's model) and a byte-level BPE trained on the corpus.

Both expose the same small interface as :class:`HFTokenizer` (a wrapper of a
hub tokenizer): ``encode(text) -> list[int]``, ``decode(ids) -> str`` and
``vocab_size``.

A checkpoint folder holds them as ``tokenizers`` files (:func:`save_hf_tokenizer`: ``tokenizer.json`` and
``tokenizer_config.json``), so that ``AutoTokenizer.from_pretrained(folder)`` loads it here and in any other tool:
the character tokenizer is a BPE vocabulary of single characters without merges, decoded by concatenation.
"""

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from models.cache import cache_root

from models.atomic_files import atomic_write_text
from models.corpus import Corpus, CorpusError

BPE_VOCAB_SIZE = 4096  # "a few thousand tokens"


@functools.lru_cache(maxsize=2)
def _alphabet(text: str) -> str:
    """The sorted characters of ``text`` (a few tenths of a second for the 5 MB corpus, asked at each model load)."""
    return "".join(sorted(set(text)))


@dataclass(frozen=True)
class CharTokenizer:
    """One token per character of the corpus alphabet (S4: vocab 65 on TinyShakespeare).

    Attributes:
        alphabet: the sorted characters; token id = index.
    """

    alphabet: str

    @classmethod
    def from_corpus(cls, corpus: Corpus) -> "CharTokenizer":
        """The sorted set of characters in the whole corpus (found once per text: a zoo name's cache key asks for it)."""
        return cls(_alphabet(corpus.text))

    @property
    def vocab_size(self) -> int:
        """Number of tokens (the alphabet's length)."""
        return len(self.alphabet)

    def encode(self, text: str) -> list[int]:
        """Token ids, one per character.

        Raises:
            ValueError: naming a character outside the alphabet.
        """
        index = {c: i for i, c in enumerate(self.alphabet)}
        try:
            return [index[c] for c in text]
        except KeyError as err:
            raise ValueError(f"character {err.args[0]!r} is not in this tokenizer's alphabet") from None

    def decode(self, ids) -> str:
        """Text of a sequence of token ids."""
        return "".join(self.alphabet[i] for i in ids)

    def to_json(self) -> str:
        """The tokenizer's identity in the checkpoint cache key (``models.trainer.checkpoint_dir``); checkpoints of
        earlier versions stored it as their tokenizer.json."""
        return json.dumps({"kind": "char", "alphabet": self.alphabet})

    def to_tokenizers(self) -> Tokenizer:
        """The same tokenizer as a ``tokenizers.Tokenizer``: each character of the alphabet one token (a BPE
        vocabulary without merges, no pre-tokenizer), decoded by concatenation."""
        tokenizer = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(self.alphabet)}, merges=[]))
        tokenizer.decoder = decoders.Fuse()
        return tokenizer


@dataclass(frozen=True)
class BPETokenizer:
    """A byte-level BPE (``tokenizers`` library) trained on the corpus' training split."""

    tokenizer: Tokenizer

    @property
    def vocab_size(self) -> int:
        """Number of tokens, special ones included."""
        return self.tokenizer.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        return self.tokenizer.encode(text).ids

    def decode(self, ids) -> str:
        """Text of a sequence of token ids."""
        return self.tokenizer.decode(list(ids))

    def to_json(self) -> str:
        """The tokenizer as stored in a checkpoint's tokenizer.json (``tokenizers``' own JSON; part of the cache key)."""
        return self.tokenizer.to_str()

    def to_tokenizers(self) -> Tokenizer:
        """The ``tokenizers.Tokenizer`` itself."""
        return self.tokenizer


def bpe_path(corpus: Corpus, vocab_size: int = BPE_VOCAB_SIZE) -> Path:
    """Where the corpus' BPE tokenizer is cached: ``<cache>/tokenizers/bpe-<corpus sha256[:16]>-<vocab_size>.json``."""
    return cache_root() / "tokenizers" / f"bpe-{corpus.sha256[:16]}-{vocab_size}.json"


def train_bpe(corpus: Corpus, vocab_size: int = BPE_VOCAB_SIZE) -> BPETokenizer:
    """The corpus' byte-level BPE, trained once and cached by corpus hash.

    Cached as :func:`bpe_path`.

    Raises:
        CorpusError: if the cached file cannot be read (truncated or damaged), naming it and what to do.
    """
    path = bpe_path(corpus, vocab_size)
    if path.exists():
        try:
            return BPETokenizer(Tokenizer.from_file(str(path)))
        except Exception as err:  # noqa: BLE001 - tokenizers raises a bare Exception ("EOF while parsing ...")
            raise CorpusError(f"{path}: the cached BPE tokenizer cannot be read ({err}): it is truncated or "
                              "damaged; delete it, and the next run trains it again from the corpus") from None
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(corpus.train.splitlines(), trainer=trainer)
    atomic_write_text(Path(path), tokenizer.to_str())
    return BPETokenizer(tokenizer)


@dataclass(frozen=True)
class HFTokenizer:
    """A Hugging Face ``AutoTokenizer`` behind the same interface."""

    tokenizer: object

    @property
    def vocab_size(self) -> int:
        """Number of tokens, added ones included."""
        return len(self.tokenizer)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without BOS/EOS (prompts are windows of running text)."""
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def decode(self, ids) -> str:
        """Text of a sequence of token ids."""
        return self.tokenizer.decode(list(ids))


# Files from which AutoTokenizer builds a tokenizer; a folder with none of them gets an empty one.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "vocab.txt", "merges.txt",
                   "tokenizer.model", "spiece.model", "sentencepiece.bpe.model")


def hf_tokenizer_files(folder: Path) -> list[Path]:
    """The tokenizer files of a local HF folder (``TOKENIZER_FILES``, ``*.tiktoken``); [] if it has none.

    Without them ``AutoTokenizer`` does not fail: it builds an empty tokenizer that
    encodes every text to no tokens.
    """
    folder = Path(folder)
    return sorted({*(folder / n for n in TOKENIZER_FILES if (folder / n).is_file()), *folder.glob("*.tiktoken")})


TOKENIZER_KINDS = ("char", "bpe")  # what a recipe's ``tokenizer`` field may name


def corpus_tokenizer(kind: str, corpus: Corpus) -> "CharTokenizer | BPETokenizer":
    """The corpus' tokenizer of a kind: "char" (its alphabet) or "bpe" (its cached byte-level BPE).

    Raises:
        ValueError: for a kind not in ``TOKENIZER_KINDS``.
    """
    if kind == "char":
        return CharTokenizer.from_corpus(corpus)
    if kind == "bpe":
        return train_bpe(corpus)
    raise ValueError(f"unknown tokenizer kind {kind!r}; a recipe's tokenizer is one of {', '.join(TOKENIZER_KINDS)}")


HF_TOKENIZER_CONFIG = {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False}


def save_hf_tokenizer(tokenizer: "CharTokenizer | BPETokenizer", folder: Path) -> None:
    """Write ``tokenizer.json`` (``tokenizers``' format) and ``tokenizer_config.json`` into a checkpoint folder,
    atomically, so that ``AutoTokenizer.from_pretrained(folder)`` loads the tokenizer the model was trained with."""
    atomic_write_text(Path(folder) / "tokenizer.json", tokenizer.to_tokenizers().to_str())
    atomic_write_text(Path(folder) / "tokenizer_config.json", json.dumps(HF_TOKENIZER_CONFIG, indent=1))


def is_hf_tokenizer_folder(folder: Path) -> bool:
    """Whether a checkpoint folder's tokenizer files are the ``tokenizers`` format (not the earlier
    ``{"kind": "char", ...}`` of this suite's own, which only this suite could read)."""
    folder = Path(folder)
    try:
        return (folder / "tokenizer_config.json").is_file() and "kind" not in json.loads(
            (folder / "tokenizer.json").read_text())
    except (OSError, ValueError):
        return False


def tokenizer_from_json(text: str) -> "CharTokenizer | BPETokenizer":
    """The tokenizer a checkpoint's tokenizer.json holds: a character tokenizer (a BPE vocabulary of single
    characters without merges, decoded by concatenation; or the earlier ``{"kind": "char"}`` form), else a BPE."""
    data = json.loads(text)
    if data.get("kind") == "char":
        return CharTokenizer(data["alphabet"])
    model, decoder = data.get("model") or {}, data.get("decoder") or {}
    vocab = model.get("vocab") or {}
    if model.get("type") == "BPE" and not model.get("merges") and decoder.get("type") == "Fuse" \
            and all(len(token) == 1 for token in vocab):
        return CharTokenizer("".join(sorted(vocab, key=vocab.get)))
    return BPETokenizer(Tokenizer.from_str(text))

