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


def _is_catalogued(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", "") == "catalogued" and bool(node.args)


def _check_keys() -> list[tuple[str, int, str | None]]:
    """(file, line, key template) of every check the claim files make: each ``Check.of`` and ``works_check`` call's
    ``key``, with "{}" for each part an f-string fills (None where a call has no key a template can be read from;
    a helper that passes its caller's key, as ``scope.works_check``, is read at its callers)."""
    out = []
    for path in sorted(CLAIMS.rglob("*.py")):
        if path.name == "_template.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = getattr(node, "func", None)
            is_of = (isinstance(node, ast.Call) and isinstance(func, ast.Attribute) and func.attr == "of"
                     and getattr(func.value, "id", "") == "Check")
            is_works = isinstance(node, ast.Call) and getattr(func, "id", getattr(func, "attr", "")) == "works_check"
            if not (is_of or is_works):
                continue
            key = next((k.value for k in node.keywords if k.arg == "key"), None)
            if key is None:  # **catalogued(KEY, ...): the key the derivation is read by
                key = next((k.value.args[0] for k in node.keywords if k.arg is None and _is_catalogued(k.value)), None)
            if isinstance(key, ast.IfExp):  # convergence_check's: the decided check's key, continued
                key = key.body
            if isinstance(key, ast.Name) and path.name == "scope.py":
                continue  # works_check's own Check.of: keyed by its callers
            out.append((path.name, node.lineno, None if key is None else _template(key)))
    return out


def _matches(template: str, row: str) -> bool:
    return bool(re.fullmatch(name_pattern(template), row) or re.fullmatch(name_pattern(row), template))


def test_every_check_of_every_claim_says_where_its_threshold_comes_from():
    """Issue 65, item 3: rows are paired with checks by key, so rewording a check's name unlinks nothing."""
    recorded = [t.key for c in load_catalogue().claims.values() for t in c.thresholds if t.key]
    missing = [f"{f}:{line} {key!r}" for f, line, key in _check_keys()
               if key is None or not any(_matches(key, r) for r in recorded)]
    assert not missing, ("checks without a [[claims.thresholds]] row of their key in claims/catalogue.toml: "
                         + "; ".join(missing))


def test_a_threshold_of_another_provenance_is_refused(tmp_path):
    from tests.helpers import claims_copy

    bad = claims_copy(tmp_path, ("s4_ffn/final_norm.toml", 'provenance = "after"', 'provenance = "tuned"'))
    with pytest.raises(ValueError, match="provenance 'tuned'.*one of source, source's numbers, reading, before, after"):
        load_catalogue(bad)
    assert {t.provenance for c in load_catalogue().claims.values() for t in c.thresholds} == set(PROVENANCES)


def test_the_report_shows_where_a_recorded_checks_threshold_comes_from():
    from fixtures.catalogue import catalogue_json
    from reports.source_numbers import provenance

    entry = catalogue_json()["S3.14"]  # the catalogue's "block {L}" matches any depth
    assert provenance(entry, "share of block 1's advantage over block 12 recovered by blocks 1-12 together") == \
        "reading, before"
    a_little = "fraction of vectors moved no more than S4's one draw, turned to cosine 0.52 and × 10"
    assert provenance(catalogue_json()["S4.5"], a_little) == "source's numbers"
    assert provenance(catalogue_json()["S4.5"], "a check the catalogue does not know") == ""


def unmatched_rows(rows: list[tuple[str, str, str]], keys: list[str]) -> list[str]:
    """The ``[[claims.thresholds]]`` rows (claim, role, key) of a check role whose key names no check of the claim
    files (gates and demoted checks name none: a gate is a rule, a demoted check is no longer one)."""
    return [f"{claim}: {key!r}" for claim, role, key in rows
            if role not in ("gate", "demoted") and not any(_matches(k, key) for k in keys)]


def readings_without_why(thresholds: list[tuple[str, object]]) -> list[str]:
    """Rows of a reading (role "reading" or "demoted", or provenance "reading, before" / "after") that do not say
    before or after what and why: a reading's provenance is "reading, before" or "after", with a basis."""
    return [f"{claim}: {t.check!r}" for claim, t in thresholds
            if (t.role in ("reading", "demoted") and t.provenance not in ("reading, before", "after"))
            or (t.provenance in ("reading, before", "after") and len(t.basis.split()) < 3)]


def test_every_threshold_row_names_a_check_of_the_claims():
    """Issue 64, item 6: provenance held both ways: a row names a check the claims record by its key (or is a
    gate, or a demoted check with what it was and why)."""
    rows = [(c.id, t.role, t.key) for c in load_catalogue().claims.values() for t in c.thresholds]
    keys = [key for _, _, key in _check_keys() if key is not None]
    assert unmatched_rows(rows, keys) == []
    assert unmatched_rows([("S9.9", "claim", "S9.9/a-check-no-claim-records")], keys) == [
        "S9.9: 'S9.9/a-check-no-claim-records'"]


def test_rewording_a_checks_name_keeps_its_threshold_row():
    """Issue 65, item 3: the report finds a check's row by its key, whatever its display name now says."""
    from fixtures.catalogue import catalogue_json
    from reports.source_numbers import provenance

    entry = catalogue_json()["S4.5"]
    key = "S4.5/a-little"
    assert provenance(entry, "a reworded name for 'a little'", key) == "source's numbers"
    assert provenance(entry, "a reworded name", "S4.5/no-such-check") == ""


DECIDING_ROLES = ("claim", "control", "gate")  # a reading and a demoted check decide nothing
GATE_GROUNDS = ("scope:", "identity:")  # the only grounds on which a gate may say a claim says nothing


def deciding_after_rows(thresholds: list[tuple[str, object]]) -> list[str]:
    """Rows that decide a verdict (a claim check, a control or a gate) with a threshold set after our values were
    seen (provenance "after"): issue 73, such a row may stand beside a verdict as a reading, never decide one."""
    return [f"{claim}: {t.role} {t.check!r}" for claim, t in thresholds
            if t.role in DECIDING_ROLES and t.provenance == "after"]


def gates_without_grounds(thresholds: list[tuple[str, object]]) -> list[str]:
    """Gate rows whose basis does not say which ground makes the record "not informative": the source's own scope
    words ("scope: <quote>") or an identity ("identity: <why>")."""
    return [f"{claim}: {t.check!r}" for claim, t in thresholds
            if t.role == "gate" and not t.basis.startswith(GATE_GROUNDS)]


def test_no_threshold_set_after_looking_decides():
    """Issue 73, item 1: no claim check, control or gate has provenance "after"; a gate names its ground."""
    rows = [(c.id, t) for c in load_catalogue().claims.values() for t in c.thresholds]
    assert deciding_after_rows(rows) == []
    assert gates_without_grounds(rows) == []


def test_a_deciding_row_set_after_looking_and_a_gate_without_ground_are_found():
    from fixtures.catalogue import Threshold

    after = Threshold("a bound", "claim", "<", "0.5", "after", "set once the zoo had failed it")
    demoted = Threshold("a bound", "demoted", "<", "0.5", "after", "decided in v1, removed in v2")
    gate = Threshold("x -> not informative", "gate", "==", "x", "reading, before", "no quote in the source scopes it")
    for role in DECIDING_ROLES:
        assert deciding_after_rows([("S9.9", Threshold(**{**after.__dict__, "role": role}))]) != []
    assert deciding_after_rows([("S9.9", demoted)]) == []
    assert gates_without_grounds([("S9.9", gate)]) == ["S9.9: 'x -> not informative'"]
    assert gates_without_grounds([("S9.9", Threshold(**{**gate.__dict__, "basis": "identity: 0 = 0"}))]) == []


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


def _written_derivations() -> list[str]:
    """(file:line) of each ``Check.of`` in the claims' checks modules whose derivation the code writes instead of
    reading it from the catalogue by key (the shared checks of ``convergence.py``, ``scope.py`` and
    ``source_setting.py`` write theirs: one text for every claim that calls them)."""
    out = []
    for path in sorted(CLAIMS.rglob("*.py")):
        if path.name in ("_template.py", "convergence.py", "scope.py", "source_setting.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = getattr(node, "func", None)
            if (isinstance(node, ast.Call) and isinstance(func, ast.Attribute) and func.attr == "of"
                    and getattr(func.value, "id", "") == "Check"
                    and not any(k.arg is None and _is_catalogued(k.value) for k in node.keywords)):
                out.append(f"{path.name}:{node.lineno}")
    return out


def test_every_derivation_lives_in_the_catalogue_beside_its_threshold():
    """Issue 65, item 4: a check's derivation is its threshold row's, read by key (``catalogued``), not prose in
    the code."""
    assert _written_derivations() == []


def test_a_derivation_is_read_by_key_and_filled():
    from fixtures.catalogue_text import catalogued

    filled = catalogued("S3.7/indirect-control", control_inputs=64)  # RECOVERS from the topic's home
    assert filled["key"] == "S3.7/indirect-control"
    assert "most tokens (> 0.5) must come back" in filled["derivation"] and "of 64 one-token" in filled["derivation"]
    deeper = catalogued("S3.5/gain-block-4-seed-1", "deeper blocks", b=4)
    assert "block 4 is S3's 'also from deeper layers'" in deeper["derivation"]
    with pytest.raises(LookupError, match="0 rows .* have this key"):
        catalogued("S3.7/a-check-no-row-names")
    with pytest.raises(LookupError, match="names .control_inputs., which the code does not give"):
        catalogued("S3.7/indirect-control")
    with pytest.raises(LookupError, match="variant 'wide' of a row whose derivation is a table of block 1, deeper"):
        catalogued("S3.5/gain-block-4-seed-1", "wide", b=4)


def _procedure_keys() -> tuple[list[str], list[str]]:
    """(the keys the claim files read procedures by, file:line of each ``record(procedure=...)`` whose text is not
    read from the catalogue: neither ``procedure(KEY, ...)`` nor a helper of the claim files that returns one, as
    ``residual_procedure``)."""
    def is_procedure(node) -> bool:
        return isinstance(node, ast.Call) and getattr(node.func, "id", "") == "procedure" and bool(node.args)

    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(CLAIMS.rglob("*.py"))
             if path.name != "_template.py"}
    helpers = {node.name for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
               and any(isinstance(r, ast.Return) and is_procedure(r.value) for r in ast.walk(node))}
    keys = [node.args[0].value for tree in trees.values() for node in ast.walk(tree) if is_procedure(node)]
    written = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "record":
                given = next((k.value for k in node.keywords if k.arg == "procedure"), None)
                if given is not None and not (is_procedure(given) or getattr(getattr(given, "func", None), "id", "")
                                              in helpers):
                    written.append(f"{path.name}:{node.lineno}")
    return keys, written


def test_every_procedure_lives_in_the_catalogue():
    """Issue 65, item 4: a record's procedure is the catalogue's text of its key, each entry read at one place."""
    keys, written = _procedure_keys()
    entries = [p.key for c in load_catalogue().claims.values() for p in c.procedures]
    assert written == []
    assert (sorted(set(keys) - set(entries)), sorted(set(entries) - set(keys))) == ([], []), \
        "(keys the code reads with no [[claims.procedures]] entry in its home, entries no code reads)"
    assert sorted(keys) == sorted(entries) and len(set(entries)) == len(entries)


def test_a_procedure_is_read_by_key_and_filled():
    from fixtures.catalogue_text import procedure

    text = procedure("S3.1/the-pseudo-inverse-recovers-the-tokens", prompts=16, tokens=12, SOURCE_PROMPT="The sky")
    assert text.startswith("16 held-out prompts of 12 tokens (the length of S3's prompt 'The sky' in this tokenizer)")
    with pytest.raises(LookupError, match="no \\[\\[claims.procedures\\]\\] entry of this key"):
        procedure("S3.1/a-test-that-is-not-there")
    with pytest.raises(LookupError, match="names 'SOURCE_PROMPT', which the code does not give"):
        procedure("S3.1/the-pseudo-inverse-recovers-the-tokens", prompts=16, tokens=12)


def _gate_reasons() -> tuple[list[str], list[str]]:
    """(the keys the claim files read not-informative reasons by (``gate(KEY, ...)``), file:line of each
    ``claim.not_informative(...)`` and each ``record(not_informative={check: why})`` whose reason the code writes: a
    string, an f-string, or a ``.format`` of one)."""
    def written(node) -> bool:
        return (isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))
                or (isinstance(node, ast.BinOp) and (written(node.left) or written(node.right)))
                or (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "format"))

    keys, out = [], []
    for path in sorted(CLAIMS.rglob("*.py")):
        if path.name == "_template.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "gate" and node.args:
                keys.append(node.args[0].value)
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "not_informative" and node.args
                    and written(node.args[0])):
                out.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.keyword) and node.arg == "not_informative" and any(
                    written(v) for d in ast.walk(node.value) if isinstance(d, ast.Dict) for v in d.values):
                out.append(f"{path.name}:{node.value.lineno}")
    return keys, out


def test_every_not_informative_reason_lives_in_the_catalogue():
    """Issue 65, item 4: why a claim says nothing on a subject is the catalogue's ``[[claims.gates]]`` text of its
    key, read at one place, never prose in the code."""
    keys, written = _gate_reasons()
    entries = [g.key for c in load_catalogue().claims.values() for g in c.gates]
    assert written == []
    assert (sorted(set(keys) - set(entries)), sorted(set(entries) - set(keys))) == ([], []), \
        "(keys the code reads with no [[claims.gates]] entry in its home, entries no code reads)"
    assert sorted(keys) == sorted(entries) and len(set(entries)) == len(entries)


def test_a_gate_reason_is_read_by_key_and_filled():
    from fixtures.catalogue_text import gate

    assert gate("S2.3/analogies-land-on-the-sphere/one-norm", spread=0.00012).startswith(
        "every embedding row has nearly one norm (relative spread 0.00012): cosine on normalised and Euclidean")
    with pytest.raises(LookupError, match="no \\[\\[claims.gates\\]\\] entry of this key"):
        gate("S2.3/a-gate-that-is-not-there")
    with pytest.raises(LookupError, match="names 'spread', which the code does not give"):
        gate("S2.3/analogies-land-on-the-sphere/one-norm")


def test_the_most_specific_row_gives_a_checks_provenance_as_it_gives_its_derivation():
    """S4.7's distinct-models control matches its own row and its claim check's ("S4.7/sibling-{}"); its
    provenance, like its derivation, is its own row's."""
    from fixtures.catalogue import catalogue_json
    from fixtures.catalogue_text import catalogued
    from reports.source_numbers import provenance

    key = "S4.7/sibling-tiny-w96-seed88-distinct-models"
    claim = load_catalogue().claims["S4.7"]
    own = next(t for t in claim.thresholds if t.key == "S4.7/sibling-{}-distinct-models")
    assert provenance(catalogue_json()["S4.7"], "any name", key) == own.provenance == "reading, before"
    assert catalogued(key)["derivation"] == own.derivation.format(**claim.values)


def test_a_claim_of_a_family_without_its_source_says_which_table_to_add(tmp_path):
    """docs/new-claim.md's trial (issue 79, item 6): a new family's first claim without [sources.SX] used to read
    "repeats an id or names an unknown family"."""
    from fixtures.catalogue import CATALOGUE, load_catalogue

    text = CATALOGUE.read_text(encoding="utf-8") + ('\n[[claims]]\nid = "S99.1"\nfamily = "S99"\nstatement = "s"\n'
                                                    'section = "x"\nfigures = "f"\nnotes = ""\n')
    (tmp_path / "catalogue.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"family 'S99' has no \[sources\.S99\] table"):
        load_catalogue(tmp_path / "catalogue.toml")
