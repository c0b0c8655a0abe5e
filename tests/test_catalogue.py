"""The catalogue's record of the sources' numbers and of where every threshold comes from (issue 56).

Read statically: every ``Check.of(NAME, ...)`` in the claim files has an entry in ``claims/catalogue.toml``'s
``[[claims.thresholds]]`` whose provenance is one of "source", "reading, before" or "after", so that no check is
added without saying where its threshold came from.
"""

import ast
import re
from pathlib import Path

import pytest

from fixtures.catalogue import PROVENANCES, load_catalogue
from reports.source_numbers import name_pattern

CLAIMS = Path(__file__).resolve().parent.parent / "claims"


def _template(node: ast.expr) -> str | None:
    """A check name as the code writes it, with "{}" for each part an f-string fills; None where it is built
    otherwise (a conditional, a variable)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def _check_names() -> list[tuple[str, int, str]]:
    """(file, line, name template) of every Check.of call in the claim files and their helpers."""
    out = []
    for path in sorted(CLAIMS.rglob("*.py")):
        if path.name == "_template.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = getattr(node, "func", None)
            if (isinstance(node, ast.Call) and isinstance(func, ast.Attribute) and func.attr == "of"
                    and getattr(func.value, "id", "") == "Check" and node.args):
                name = _template(node.args[0])
                if name is None and isinstance(node.args[0], ast.BinOp):  # "..." + ("a" if x else "b")
                    name = _template(node.args[0].left)
                    name = None if name is None else name + "{}"
                out.append((path.name, node.lineno, name))
    return out


def test_every_check_of_every_claim_says_where_its_threshold_comes_from():
    recorded = [t.check for c in load_catalogue().claims.values() for t in c.thresholds]
    missing = [f"{f}:{line} {name!r}" for f, line, name in _check_names()
               if name is None or not any(re.fullmatch(name_pattern(name), r) or re.fullmatch(name_pattern(r), name)
                                          for r in recorded)]
    assert not missing, ("checks without a [[claims.thresholds]] entry in claims/catalogue.toml: "
                         + "; ".join(missing))


def test_a_threshold_of_another_provenance_is_refused(tmp_path):
    text = (CLAIMS / "catalogue.toml").read_text(encoding="utf-8")
    bad = tmp_path / "catalogue.toml"
    bad.write_text(text.replace('provenance = "after"', 'provenance = "tuned"', 1))
    with pytest.raises(ValueError, match="provenance 'tuned'.*one of source, source's numbers, reading, before, after"):
        load_catalogue(bad)
    assert {t.provenance for c in load_catalogue().claims.values() for t in c.thresholds} == set(PROVENANCES)


def test_the_report_shows_where_a_recorded_checks_threshold_comes_from():
    from fixtures.catalogue import catalogue_json
    from reports.source_numbers import provenance

    entry = catalogue_json()["S3.14"]  # the catalogue's "block {L}" matches any depth
    assert provenance(entry, "share of block 1's advantage over block 12 recovered by blocks 1-12 together") == \
        "reading, before"
    assert provenance(catalogue_json()["S4.5"], "relative output-norm change, turned to cosine 0.52 and × 10") == \
        "source's numbers"
    assert provenance(catalogue_json()["S4.5"], "a check the catalogue does not know") == ""


def _matches(template: str, row: str) -> bool:
    return bool(re.fullmatch(name_pattern(template), row) or re.fullmatch(name_pattern(row), template))


def unmatched_rows(rows: list[tuple[str, str, str]], names: list[str]) -> list[str]:
    """The ``[[claims.thresholds]]`` rows (claim, role, check) of a check role that name no ``Check.of`` of the claim
    files (gates and demoted checks name none: a gate is a rule, a demoted check is no longer one)."""
    return [f"{claim}: {check!r}" for claim, role, check in rows
            if role not in ("gate", "demoted") and not any(_matches(n, check) for n in names)]


def readings_without_why(thresholds: list[tuple[str, object]]) -> list[str]:
    """Rows of a reading (role "reading" or "demoted", or provenance "reading, before" / "after") that do not say
    before or after what and why: a reading's provenance is "reading, before" or "after", with a basis."""
    return [f"{claim}: {t.check!r}" for claim, t in thresholds
            if (t.role in ("reading", "demoted") and t.provenance not in ("reading, before", "after"))
            or (t.provenance in ("reading, before", "after") and len(t.basis.split()) < 3)]


def test_every_threshold_row_names_a_check_of_the_claims():
    """Issue 64, item 6: provenance held both ways: a row names a check the claims record (or is a gate, or a
    demoted check with what it was and why)."""
    rows = [(c.id, t.role, t.check) for c in load_catalogue().claims.values() for t in c.thresholds]
    names = [name for _, _, name in _check_names() if name is not None]
    assert unmatched_rows(rows, names) == []
    assert unmatched_rows([("S9.9", "claim", "a check no claim records")], names) == ["S9.9: 'a check no claim records'"]


def test_every_reading_says_before_or_after_what_and_why():
    catalogue = load_catalogue()
    assert readings_without_why([(c.id, t) for c in catalogue.claims.values() for t in c.thresholds]) == []
    from fixtures.catalogue import Threshold
    bad = [("S9.9", Threshold("x", "reading", ">", "0", "source", "S9's words")),
           ("S9.9", Threshold("y", "control", ">", "0", "after", ""))]
    assert readings_without_why(bad) == ["S9.9: 'x'", "S9.9: 'y'"]


def test_the_provenance_counts_come_from_the_catalogue(capsys):
    """Issue 64, item 6: the counts a closing note quotes are `python -m fixtures.catalogue`'s."""
    from fixtures.catalogue import PROVENANCES, print_provenance_counts, provenance_counts

    counts = provenance_counts()
    rows = [t for c in load_catalogue().claims.values() for t in c.thresholds]
    assert counts["all"]["all"] == len(rows) == sum(counts[p]["all"] for p in PROVENANCES)
    assert counts["source's numbers"]["claim"] >= 2  # S4.3's cosine bound, S4.5's 'a little'
    print_provenance_counts()
    last = capsys.readouterr().out.splitlines()[-1].split()
    assert last[0] == "all" and int(last[-1]) == len(rows)
