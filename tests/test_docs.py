"""The README's claims table agrees with the catalogue and the claim files (issue 37: numbers and names in prose come
from the code, or a test holds them to it)."""

import re
from pathlib import Path

from fixtures.catalogue import load_catalogue

REPO = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| (S\d+\.\d+(?:[–,] ?S\d+\.\d+)*) [^|]*\| `([^`]+)` \|", re.M)


def _ids(span: str, order: list[str]) -> list[str]:
    """The claim ids a table cell names: "S0.1–S0.2" (a range in catalogue order), "S3.7, S3.13" (a list)."""
    out = []
    for part in span.split(","):
        first, _, last = part.strip().partition("–")
        out += order[order.index(first):order.index(last or first) + 1]
    return out


def _tested_in(path: Path) -> set[str]:
    """The claim ids whose tests live in a claim file or folder (their @pytest.mark.claim markers)."""
    files = [path] if path.is_file() else sorted(path.glob("test_*.py"))
    return {m for f in files for m in re.findall(r'@pytest\.mark\.claim\("(S\d+\.\d+)"', f.read_text(encoding="utf-8"))}


def test_the_readme_claims_table_names_every_tested_claim_once_with_the_file_that_tests_it():
    order = list(load_catalogue().claims)
    rows = ROW.findall((REPO / "README.md").read_text(encoding="utf-8"))
    assert rows, "no claims table found in README.md"
    named: list[str] = []
    for span, where in rows:
        ids = _ids(span, order)
        path = REPO / where
        assert path.exists(), f"README names {where}, which does not exist"
        assert set(ids) <= _tested_in(path), f"README says {span} is tested in {where}; it tests {_tested_in(path)}"
        named += ids
    tested = set().union(*(_tested_in(p) for p in (REPO / "claims").iterdir() if p.is_dir() and p.name.startswith("s")))
    assert sorted(named, key=order.index) == sorted(tested, key=order.index), "each tested claim in one row"
