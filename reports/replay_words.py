"""A run's replay line as words (results.json's ``replay``): the options a merge compares (:func:`replay_option`)
and what merged runs together replay (:func:`whole_run`)."""

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reports.merge import Run

SUBJECT_OPTIONS = ("--model", "--group", "--shard")


def replay_option(run: "Run", flag: str, default: str | None = None) -> str | None:
    """The value of ``flag`` in a run's replay line (the only place results.json keeps ``--inconclusive`` and
    ``--ledger``), else ``default``."""
    words = _words(run)
    return words[words.index(flag) + 1] if flag in words[:-1] else default


def _words(run: "Run") -> list[str]:
    """A run's replay line as shell words (an older, unquoted line with a quote in a path: split on spaces)."""
    try:
        return shlex.split(run.doc.replay or "")
    except ValueError:
        return (run.doc.replay or "").split()


def whole_run(runs: list["Run"]) -> str | None:
    """What the merged runs together replay: the first run's command without its subjects (``--model``,
    ``--group``, ``--shard``) and claims (``--claim``), then every run's ``--model`` and ``--group`` in order, each
    once (issue 67, case 4: a merge of runs split by ``--model`` replayed the first run's models only), then every
    run's ``--claim`` in order, each once, unless a run selected no claim (then every claim ran: issue 74, case 7).
    Shards of the zoo name no subject: their merge replays the whole zoo."""
    if not runs[0].doc.replay:
        return None
    words, base, subjects, claims = _words(runs[0]), [], {}, {}
    pairs = iter(range(len(words)))
    for i in pairs:
        if words[i] in (*SUBJECT_OPTIONS, "--claim") and i + 1 < len(words):
            next(pairs, None)
        else:
            base.append(words[i])
    every_claim = False
    for run in runs:
        said = _words(run)
        every_claim = every_claim or "--claim" not in said[:-1]
        for flag, value in zip(said, said[1:]):
            if flag in ("--model", "--group"):
                subjects.setdefault((flag, value), None)
            elif flag == "--claim":
                claims.setdefault(("--claim", value), None)
    chosen = [] if every_claim else [word for pair in claims for word in pair]
    return shlex.join(base + [word for pair in subjects for word in pair] + chosen)
