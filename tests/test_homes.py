"""One home per threshold (issue 79, item 1): each topic's numbers are written once, in its home
``claims/<family>/<topic>.toml`` (``fixtures.homes``); checks, measures and every text read them from there.

- no derivation, procedure, not-informative reason, threshold text or docstring of a topic writes the digits of one
  of its home's values or its claims' source numbers (it names them, ``{NAME}`` in the home's texts);
- each threshold row's ``bound`` is what its check compares with (the claims' own checks functions, on their cases);
- changing one value in its home changes the check, its derivation and the catalogue's threshold text, and nothing
  else needs an edit;
- a check's former key (a row's ``was``) still pairs a baseline made with it.
"""

import ast
import functools
import importlib
import math
import re
from pathlib import Path

import pytest

from fixtures.catalogue import load_catalogue
from fixtures.check_keys import current_key
from fixtures.docs_pages import topic_of
from fixtures.homes import evaluate, homes, read_home, values_of
from reports.source_numbers import most_specific

REPO = Path(__file__).resolve().parents[1]
# a number as a text writes it: 0.41, 1e-3, 10, 5 %; not a part of a name or a longer number (S4.5, v5, 23.1496)
LITERAL = re.compile(r"(?<![\w.{\-])(\d+(?:\.\d+)?(?:e[-+]?\d+)?)(?![\w]|\.\d)(\s?%)?")


def written(literal: str, percent: bool, value: float) -> bool:
    """Whether ``literal`` (with "%" after it where ``percent``) writes ``value``: exactly (1e-3 is 0.001, 5 % is
    0.05), or rounded to two or more significant digits (0.41 % is 0.004104; 0.5 is not 0.52); a whole number only
    writes a whole value of 3 or more (block 1 is no threshold)."""
    shown = float(literal) / (100 if percent else 1)
    if shown == 0:
        return False  # "above 0": no home names zero
    if re.fullmatch(r"\d+", literal) and not percent:
        return value == shown and value >= 3
    mantissa = literal.split("e")[0]
    if math.isclose(shown, value, rel_tol=1e-12) or len(mantissa.replace(".", "").lstrip("0")) < 2:
        return math.isclose(shown, value, rel_tol=1e-12)
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    exponent = int(literal.split("e")[1]) if "e" in literal else 0
    half = 0.5 * 10.0 ** (exponent - decimals) / (100 if percent else 1)
    return value != 0 and abs(value - shown) <= half * (1 + 1e-9)


def numbers_in(text: str, values: dict[str, float]) -> list[str]:
    """The literals of ``text`` (its ``{...}`` fields left out) that write one of ``values``, as "literal = NAME"."""
    bare = re.sub(r"\{[^{}]*\}", " ", text)
    bare = re.sub(r"\b(version|versions|issue|issues|block|blocks|Appendix|Table|Figure|seed|layer|layers) \d+", " ", bare)
    return [f"{m.group(0).strip()} = {name}" for m in LITERAL.finditer(bare)
            for name, v in values.items() if written(m.group(1), bool(m.group(2)), v)]


def _home_numbers(home: Path) -> dict[str, float]:
    """A home's values and its claims' source numbers ("source: quantity"), by name."""
    claims = load_catalogue().claims
    ids = [c["id"] for c in read_home(home).get("claims", [])]
    return values_of(home) | {f"source number {n.quantity!r}": n.value for i in ids for n in claims[i].source_numbers}


def _texts(home: Path) -> dict[str, str]:
    """{where: text} of a home's derivations, procedures, reasons, threshold texts (demoted rows are history) and its
    row of docs/measurements.md."""
    out = {}
    for claim in read_home(home).get("claims", []):
        for row in claim.get("thresholds", []):
            if row["role"] == "demoted":
                continue
            derivations = row.get("derivation", "")
            for variant, text in (derivations.items() if isinstance(derivations, dict) else [("", derivations)]):
                out[f"{claim['id']} derivation of {row.get('key') or row['check']!r} {variant}"] = text
            out[f"{claim['id']} threshold of {row.get('key') or row['check']!r}"] = row.get("threshold", "")
        for table in ("procedures", "gates"):
            out |= {f"{claim['id']} {table[:-1]} {p['key']!r}": p["text"] for p in claim.get(table, [])}
    out["docs/measurements.md's row ([docs] measured)"] = read_home(home).get("docs", {}).get("measured", "")
    return out


def _docstrings(home: Path) -> dict[str, str]:
    """{where: docstring} of the topic's modules: its checks, measures and claim test files, and their functions."""
    topic, folder = home.stem, home.parent
    files = [folder / f"{topic}_{part}.py" for part in ("checks", "measures")]
    files += [p for p in folder.glob("test_*.py") if topic_of(p) == topic]
    out = {}
    for path in (f for f in files if f.exists()):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in [tree, *ast.walk(tree)]:
            if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef) and ast.get_docstring(node):
                out[f"{path.relative_to(REPO)}:{getattr(node, 'name', 'module')}"] = ast.get_docstring(node)
    return out


@pytest.mark.parametrize("home", homes(), ids=lambda p: p.stem)
def test_no_text_of_a_topic_writes_a_number_its_home_names(home):
    """A derivation, procedure, reason, threshold text or docstring that wrote 0.41 % where the home names
    SOURCE_TURNED_CHANGE would stay behind when the value changed: it names the value ({SOURCE_TURNED_CHANGE:.2%})."""
    values = _home_numbers(home.resolve())
    found = {where: hits for where, text in {**_texts(home), **_docstrings(home)}.items()
             if (hits := numbers_in(text, values))}
    assert found == {}, f"write these as {{NAME}} fields (texts) or by name (docstrings): {found}"


def test_a_number_is_found_however_it_is_written():
    values = {"SOURCE_TURNED_CHANGE": 0.004104, "SCALE": 10.0, "SCALE_IDENTITY": 1e-3, "ALPHA": 0.05}
    assert numbers_in("moved 0.41 % at × 10, bound 1e-3; 5 % of vectors", values) == [
        "0.41 % = SOURCE_TURNED_CHANGE", "10 = SCALE", "1e-3 = SCALE_IDENTITY", "5 % = ALPHA"]
    assert numbers_in("{SOURCE_TURNED_CHANGE:.2%} in S4.5 of block 1, v10, 23.1496, 0.4 %", values) == []


def _row_of(claim, key: str):
    rows = [t for t in claim.thresholds if t.key]
    found = most_specific([t.key for t in rows], key)
    return rows[found[0]] if len(found) == 1 else None


def test_each_rows_bound_is_what_its_check_compares_with():
    """A row's ``bound`` is an expression over its home's values; the claim's own checks function, on each of its
    self-test cases, compares with exactly that number."""
    from tests.check_cases import all_cases

    CASES = all_cases()

    claims, bound, mismatched = load_catalogue().claims, 0, []
    for case in CASES:
        claim = claims[case.claim]
        for check in case.checks(case.holding, **case.context):
            row = _row_of(claim, check.key)
            if row is not None and row.bound:
                bound += 1
                expected = evaluate(row.bound, claim.values)
                if not math.isclose(check.threshold, expected, rel_tol=1e-12, abs_tol=1e-15):
                    mismatched.append(f"{check.key}: compares with {check.threshold}, its row's bound "
                                      f"{row.bound} = {expected}")
    assert bound > 0 and mismatched == [], mismatched


@pytest.fixture
def changed_home(monkeypatch):
    """Reads S4.5's home with ALPHA_ONE_DRAW changed from 0.05 to 0.07 (nothing else edited), and reloads what
    reads it; everything is read back from the real home afterwards."""
    import fixtures.homes as homes_module
    from fixtures import catalogue
    from claims.s4_ffn import final_norm_checks, final_norm_measures

    real = homes_module.read_home.__wrapped__
    home = (REPO / "claims" / "s4_ffn" / "final_norm.toml").resolve()

    def read(path):
        data = real(path)
        if path == home:
            data = {**data, "values": {**data["values"], "ALPHA_ONE_DRAW": 0.07}}
        return data

    def reload():
        for cached in (homes_module.read_home, homes_module.values_of, catalogue.load_catalogue):
            cached.cache_clear()
        importlib.reload(final_norm_measures)
        importlib.reload(final_norm_checks)

    monkeypatch.setattr(homes_module, "read_home", functools.cache(read))
    monkeypatch.setattr(catalogue, "read_home", homes_module.read_home)
    monkeypatch.setattr(catalogue, "values_of", homes_module.values_of)
    homes_module.values_of.cache_clear()
    catalogue.load_catalogue.cache_clear()
    reload()
    yield final_norm_checks
    monkeypatch.undo()
    reload()


def test_changing_one_value_in_its_home_changes_every_text_that_shows_it(changed_home):
    """Issue 79's done-when: one edit, in the home, and the check, its derivation (what the report shows beside it),
    the catalogue's threshold text and docs/measurements.md's row follow."""
    from claims.s4_ffn.final_norm_measures import FinalNormEstimates
    from tests.cases_s4 import CASES

    [case] = [c for c in CASES if c.claim == "S4.5"]
    holding = FinalNormEstimates(**{f: getattr(case.holding, f) for f in FinalNormEstimates.__dataclass_fields__})
    [little] = [c for c in changed_home.final_norm_checks(holding) if c.key == "S4.5/a-little"]
    assert little.threshold == 0.07 and "at least 7% of its vectors" in little.derivation
    assert "5%" not in little.derivation
    row = _row_of(load_catalogue().claims["S4.5"], "S4.5/a-little")
    assert row.threshold.startswith("ALPHA_ONE_DRAW = 0.07 of the vectors")
    from fixtures.measurements_page import table

    [row_text] = [line for line in table().splitlines() if line.startswith("| S4.5 ")]
    assert "at least 7% of its vectors" in row_text and "5%" not in row_text


def test_a_baseline_made_with_a_former_key_pairs_with_the_check():
    """Issue 79, item 2: keys name the check, not its text or values; a key a row had before is read as today's."""
    old = "S4.5/relative-output-norm-change-turned-to-cosine-0-52-minus-turned-to-0"
    assert current_key(old) == "S4.5/ordering" and current_key("S4.5/ordering") == "S4.5/ordering"
    former = {"S4.3/block-{}-mean-cos": "S4.3/block-{}/cosine"}
    assert current_key("S4.3/block-2-mean-cos", former) == "S4.3/block-2/cosine"
    assert current_key("S9.9/unknown", former) == "S9.9/unknown"
    assert current_key("S4.3/block-2-mean-cos/after-5N", former) == "S4.3/block-2/cosine/after-5N"
    assert current_key(f"{old}/plateau") == "S4.5/ordering/plateau"


KEY = re.compile(r"S\d+\.\d+(/[a-z{}][A-Za-z0-9{}-]*)+")  # "S4.5/a-little", "S4.3/block-{}/cosine": names
VALUE = re.compile(r"\d-\d")  # a value slugged into a key: "cosine-0-52"
KEY_WORDS = 5  # at most this many words a part ("{}" aside): a name, not a check's display text


def test_every_key_is_a_name_not_a_display_text_or_a_value():
    """Issue 79, item 2: a row's key names its check; it holds no value (a digit would go stale with the threshold)
    and is not a slug of the display text (which may be reworded). A renamed row keeps the old key in ``was``."""
    bad = [t.key for c in load_catalogue().claims.values() for t in c.thresholds if t.key and (
        not KEY.fullmatch(t.key) or VALUE.search(t.key)
        or any(len([w for w in part.split("-") if w != "{}"]) > KEY_WORDS for part in t.key.split("/")[1:]))]
    assert bad == [], f"name these keys (and keep the old key in the row's was): {bad}"


def test_every_value_of_a_home_is_read():
    """A value no code and no text of its topic reads is a number nobody decides with: remove it, or use it."""
    unread = []
    for home in homes():
        folder = home.parent
        code = "\n".join(p.read_text(encoding="utf-8") for p in [*folder.glob("*.py"), *folder.parent.glob("*.py")])
        text = home.read_text(encoding="utf-8")
        for name in values_of(home.resolve()):
            body = text.split("[values]", 1)[1]
            uses = len(re.findall(rf"\b{name}\b", body)) - 1  # its own line
            if not re.search(rf"\b{name}\b", code) and uses < 1:
                unread.append(f"{home.relative_to(REPO)}: {name}")
    assert unread == [], unread
