"""The calibration tables of S0.6's and S0.7's "pretty close" in their topic's home (``residual.toml``'s
``[[claims.calibrations]]``, between their markers): written by ``calibrate_pretty_close.py``, read through
``fixtures.catalogue`` into ``fixtures.calibration``'s margins.
"""

import json
import re
from pathlib import Path

CATALOGUE = Path(__file__).resolve().parent / "residual.toml"  # the home of S0.6 and S0.7 (fixtures.homes)
CLAIMS = ("S0.6", "S0.7")  # the "pretty close" of each, calibrated on the same inits and windows
WINDOW_SEED = 20261128  # orders the training split's windows; init k takes the k-th block of them
SUBJECT = "ref-opt-125m"  # S0's subject: a random-init OPT-125m


CHECKS = {"S0.6": "largest |bend| of blocks 2..L beyond a straight law's (curvature in log-log)",
          "S0.7": "shape distance, MLP residual to hidden state, as a fraction of the attention residual's (means "
                  "over blocks)"}


def markers(claim: str, positions: int) -> tuple[str, str]:
    """The lines that open and close a claim's calibration table for one length in the catalogue."""
    return f"# >>> {claim} pretty close at {positions}", f"# <<< {claim} pretty close at {positions}"


def windows_drawn(c: dict) -> str:
    """How the inits' windows were drawn: disjoint blocks, one an init, where the split holds enough; else each
    init's own draw (independent, not disjoint)."""
    if c["window_blocks"] >= len(c["seeds"]):
        return f"init k the k-th of {c['window_blocks']} disjoint blocks in the order of seed {WINDOW_SEED}"
    return (f"each init its own draw, in the order of seed {WINDOW_SEED} + 1 + k (the split holds {c['window_blocks']} "
            f"disjoint blocks, fewer than the inits: independent, not disjoint)")


def table(claim: str, c: dict) -> str:
    """The catalogue's calibration table of ``claim`` for one length, between its markers."""
    opening, closing = markers(claim, c["positions"])
    depths = "".join(f"\n[[claims.calibrations.depths]]\nblocks = {d['blocks']}\nvalues = {d['values']}\n"
                     f"margin = {d['margin']}\npoint = {d['point']}\n" for d in c["depths"])
    return (f"{opening} (python -m claims.s0_spectra.calibrate_pretty_close --positions {c['positions']} "
            f"--sequences {c['sequences']} --write)\n"
            "[[claims.calibrations]]\n"
            'name = "pretty close"\n'
            f"check = {json.dumps(CHECKS[claim], ensure_ascii=False)}\n"
            f'subject = "{SUBJECT}, random inits at seeds {c["seeds"][0]}-{c["seeds"][-1]}, blocks 1..L of each"\n'
            f'windows = "training split, {c["sequences"]} x {c["positions"]} tokens an init, {windows_drawn(c)}"\n'
            f"positions = {c['positions']}\n"
            f"sequences = {c['sequences']}\n"
            f"confidence = {c['confidence']}\n"
            f"seeds = {c['seeds']}\n"
            f"coverage = {c['coverage']}\n"
            f"{depths}"
            f"{closing}\n")


def marked(claim: str, positions: int) -> re.Pattern:
    """The catalogue's calibration table of ``claim`` for one length, its markers included."""
    opening, closing = markers(claim, positions)
    return re.compile(rf"{re.escape(opening)} .*?{re.escape(closing)}\n", re.S)


def check_writable(positions: int, path: Path = CATALOGUE) -> None:
    """Whether ``--write`` could put the tables for ``positions`` tokens into ``path``, asked before calibrating
    (issue 74, case 14).

    Raises:
        ValueError: if the catalogue lacks a claim's markers for that length, or cannot be read or replaced.
    """
    import os

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"cannot read {path} ({err.strerror}): check the path and its permissions") from err
    for claim in CLAIMS:
        if not marked(claim, positions).search(text):
            opening, closing = markers(claim, positions)
            raise ValueError(f"{path}: no {claim} calibration markers for {positions} positions; add a table between "
                             f"'{opening} ...' and '{closing}' lines first, or leave out --write")
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        raise ValueError(f"cannot write {path} (it or its folder is read-only): make it writable, or leave out "
                         "--write")


def write(calibrations: dict, path: Path = CATALOGUE) -> None:
    """Replace each claim's calibration table of that length in the catalogue (atomically, all or none).

    Args:
        calibrations: {claim: calibration} as :func:`calibrate` returns.
    Raises:
        ValueError: if the catalogue has no markers for a claim at that length (nothing is written).
    """
    from models.atomic_files import atomic_write_text

    text = path.read_text(encoding="utf-8")
    for claim, c in calibrations.items():
        old = marked(claim, c["positions"])
        if not old.search(text):
            raise ValueError(f"{path}: no {claim} calibration markers for {c['positions']} positions")
        text = old.sub(lambda _, claim=claim, c=c: table(claim, c), text)
    atomic_write_text(path, text)
