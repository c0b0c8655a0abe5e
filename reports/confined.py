"""Every file a report writes stays in its run folder (issue 74, case 10): a claim id read from a results.json
(``S2.1/../../../../tmp/x/PWNED``) once became a figure's path outside it.

:func:`confined` is the one gate a name read from data passes before it becomes a path; :func:`plain` makes such a
name of characters that cannot leave a folder; :func:`unknown_claims` checks a document's claim ids against the
catalogue before anything is written from it.
"""

import re
from pathlib import Path

_PLAIN = re.compile(r"[A-Za-z0-9._-]+")


class UnsafePath(ValueError):
    """A name read from data that would leave its folder (a separator, ``..``, an absolute path, a NUL byte)."""


def unknown_claims(records: list) -> str:
    """Why records cannot be reported: the first whose claim id is not a claim of the catalogue (a crafted id such
    as ``S2.1/../../tmp/x`` once became a path outside the report folder; issue 74, case 10), or ""."""
    from fixtures.catalogue import load_catalogue

    known = load_catalogue().claims
    for i, r in enumerate(records):
        if not isinstance(r.claim, str) or r.claim not in known:
            return (f"record {i} ({str(r.test)[:80]!r}) has claim id {str(r.claim)!r}, not a claim of the catalogue "
                    f"(S0.1 ... {list(known)[-1]}): the file is damaged or crafted; nothing written")
    return ""


def plain(text: str) -> str:
    """``text`` with every run of characters other than letters, digits, ``.``, ``_`` and ``-`` as one ``_``, and
    no run of dots (so never ``..``): e.g. "S2.1/../x" → "S2.1_._x"."""
    return re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]+", "_", text))


def confined(folder: Path, name: str) -> Path:
    """``folder / name`` for a plain file name: one path component of letters, digits, ``.``, ``_`` and ``-``,
    not ``.`` or ``..``.

    Args:
        folder: the folder the file must stay in.
        name: the file's name, as data gave it.
    Returns:
        the path, inside ``folder``.
    Raises:
        UnsafePath: for any other name (a separator, ``..``, an absolute path, a NUL byte, an empty name), saying
            which name and where it had to stay.
    """
    if not isinstance(name, str) or not _PLAIN.fullmatch(name) or name in (".", ".."):
        raise UnsafePath(f"{name!r} is not a plain file name (letters, digits, '.', '_', '-'; not '..'): it would "
                         f"not stay in {folder}; nothing written there")
    return Path(folder) / name
