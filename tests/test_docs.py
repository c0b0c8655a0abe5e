"""The README and docs/ stay true to the code (issues 37 and 57): the generated pages are what the code makes, the
options page is what `pytest --help` shows, every link resolves, every command names a make target, module and
option that exist, and the measurements table names every tested claim once with the file that tests it."""

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from fixtures.catalogue import load_catalogue
from fixtures.docs_pages import declared_options, pages

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [REPO / "README.md", *DOCS]
ROW = re.compile(r"^\| (S\d+\.\d+(?:[–,] ?S\d+\.\d+)*) [^|]*\| `([^`]+)` \|", re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
README_LINES = 150  # issue 57: a README a newcomer reads in two minutes


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


def test_the_measurements_table_names_every_tested_claim_once_with_the_file_that_tests_it():
    order = list(load_catalogue().claims)
    rows = ROW.findall((REPO / "docs" / "measurements.md").read_text(encoding="utf-8"))
    assert rows, "no claims table found in docs/measurements.md"
    named: list[str] = []
    for span, where in rows:
        ids = _ids(span, order)
        path = REPO / where
        assert path.exists(), f"docs/measurements.md names {where}, which does not exist"
        assert set(ids) <= _tested_in(path), f"it says {span} is tested in {where}; it tests {_tested_in(path)}"
        named += ids
    tested = set().union(*(_tested_in(p) for p in (REPO / "claims").iterdir() if p.is_dir() and p.name.startswith("s")))
    missing, twice = sorted(tested - set(named), key=order.index), sorted({i for i in named if named.count(i) > 1})
    assert (missing, twice) == ([], []), (f"docs/measurements.md: claims tested but in no row of its table: {missing}; "
                                          f"claims in more than one row: {twice}. Each tested claim is in one row "
                                          "(docs/new-claim.md: the row's form)")
    assert sorted(named, key=order.index) == sorted(tested, key=order.index)


def test_the_generated_pages_are_what_the_code_makes():
    stale = [path.relative_to(REPO).as_posix() for path, text in pages().items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    assert not stale, f"{', '.join(stale)} out of date: run `python -m fixtures.docs_pages --write` and commit them"


def test_the_options_page_holds_every_option_pytest_help_shows_and_no_other(pytestconfig):
    """docs/options.md is made from ``fixtures.settings.add_options``; the plugin's group in the running pytest (what
    `pytest --help` prints) must hold the same options with the same help."""
    shown = {tuple(o.names()): o.attrs().get("help") for o in pytestconfig._parser.getgroup("latent-claims").options}
    declared = {names: attrs.get("help") for names, attrs in declared_options()}
    assert shown == declared
    page = (REPO / "docs" / "options.md").read_text(encoding="utf-8")
    assert all(f"| `{' '.join(names)}` |" in page for names in declared)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_link_resolves(page):
    broken = [target for target in LINK.findall(page.read_text(encoding="utf-8"))
              if not target.startswith(("http://", "https://", "#", "mailto:"))
              and not (page.parent / target.split("#")[0]).exists()]
    assert not broken, f"{page.relative_to(REPO)} links to missing files: {broken}"


COMMAND = re.compile(r"`((?:make|pytest|python -m|python3 -m) [^`]+)`")  # a command quoted in prose


def _commands(text: str) -> list[list[str]]:
    """The command lines of a page's ```sh blocks (comments dropped) and the commands its prose quotes, as shell
    words."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].split(" # ", 1)[0].strip()
            if line and not line.startswith("#"):
                out.append(shlex.split(line.replace("...", "")))
    for quoted in COMMAND.findall(re.sub(r"```.*?```", "", text, flags=re.S)):
        out.append(quoted.replace("...", "").replace("…", "").split())
    return out


def _problems(words: list[str], targets: set[str], options: set[str]) -> list[str]:
    """What in one command does not exist: a make target, a `python -m` module, a long option of pytest's."""
    out = []
    if words[0] == "make":
        out += [f"make {t}" for t in words[1:] if "=" not in t and t not in targets]
    for i, word in enumerate(words[:-1]):
        if word == "-m" and words[max(i - 1, 0)].endswith("python") and importlib.util.find_spec(words[i + 1]) is None:
            out.append(f"python -m {words[i + 1]}")
    if "pytest" in words[:3]:
        out += [w for w in words if w.startswith("--") and w.split("=")[0] not in options]
    return out


def test_every_command_names_a_make_target_module_and_option_that_exist(pytestconfig):
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(encoding="utf-8"), re.M))
    options = {name for o in pytestconfig._parser._anonymous.options + [
        o for g in pytestconfig._parser._groups for o in g.options] for name in o.names()}
    problems = {page.relative_to(REPO).as_posix(): p for page in PAGES
                if (p := [x for words in _commands(page.read_text(encoding="utf-8")) for x in
                          _problems(words, targets, options)])}
    assert not problems, f"commands naming what does not exist: {problems}"


def test_a_command_naming_a_missing_target_module_or_option_is_caught():
    assert _problems(["make", "claimz"], {"claims"}, set()) == ["make claimz"]
    assert _problems(["python", "-m", "reportz", "merge"], set(), set()) == ["python -m reportz"]
    assert _problems(["pytest", "claims", "--modle", "x"], set(), {"--model"}) == ["--modle"]


def test_the_readme_is_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"README.md is {len(lines)} lines; move detail to docs/"


def _readme_excerpt() -> tuple[list[str], list[list[str]]]:
    """The README's excerpt of the matrix: (subjects, rows of [claim, cell per subject])."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| claim |"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    return header[1:], [[c.strip() for c in line.strip("|").split("|")] for line in lines[start + 2:end]]


def test_the_readmes_excerpt_is_the_shipped_verdicts():
    """Issue 79, item 6 (in part): each cell of the README's excerpt gives the outcome, value and interval that
    models/shipped/verdicts.json holds for that claim and subject, to the report's 3 significant figures."""
    import json
    verdicts = json.loads((Path(__file__).resolve().parents[1] / "models/shipped/verdicts.json").read_text())["records"]
    subjects, rows = _readme_excerpt()
    wrong = []
    for claim, *cells in rows:
        for subject, cell in zip(subjects, cells):
            found = [r for k, r in verdicts.items() if k.startswith(f"{claim}|") and k.endswith(f"[{subject}]")]
            if cell == "·":
                wrong += [f"{claim} on {subject}: '·' but shipped"] if found else []
                continue
            if len(found) != 1:
                wrong.append(f"{claim} on {subject}: {len(found)} shipped records")
                continue
            r = found[0]
            shown = f"{'fails' if r['outcome'] == 'fails' else r['outcome']}"
            numbers = "" if r["value"] is None else " " + " ".join(
                [f"{r['value']:.3g}", f"[{r['ci_low']:.3g},", f"{r['ci_high']:.3g}]"])
            if not cell.replace("fails as expected", "fails").startswith(shown + numbers):
                wrong.append(f"{claim} on {subject}: README {cell[:60]!r}, shipped {shown + numbers!r}")
    assert not wrong, wrong
