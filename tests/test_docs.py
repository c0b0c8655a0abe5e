"""The README and docs/ stay true to the code (issues 37, 57 and 79): the generated pages are what the code makes, the
options page is what `pytest --help` shows, the README's verdict excerpt is models/shipped/verdicts.json's, every link
resolves, every command names a make target, module and option that exist, and the measurements table names every
tested claim once with the file that tests it."""

import copy
import importlib.util
import json
import re
import shlex
from pathlib import Path

import pytest

from fixtures.catalogue import load_catalogue
from fixtures.docs_pages import declared_options, pages
from fixtures.ledger import load_ledger
from fixtures.readme_excerpt import END, START, VERDICTS, excerpt, excerpt_cells, readme, shown_excerpt

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


def test_the_readmes_excerpt_equals_verdicts_json():
    """Issue 79, item 6: the README's excerpt of the matrix is what ``fixtures.readme_excerpt`` makes from
    models/shipped/verdicts.json (and the ledger), cell by cell."""
    shown = shown_excerpt((REPO / "README.md").read_text(encoding="utf-8"))
    assert shown == excerpt(), ("README.md's verdict excerpt differs from models/shipped/verdicts.json: run "
                                "`python -m fixtures.docs_pages --write` and commit it")


def test_a_changed_verdicts_record_changes_the_excerpt():
    """The excerpt's cells follow the file: a record's outcome and numbers changed in a copy of verdicts.json show in
    the excerpt made from it, and the ledger's expectation turns "fails" into "fails as expected" only at its
    version."""
    verdicts = json.loads(VERDICTS.read_text(encoding="utf-8"))
    ledger = load_ledger()
    changed = copy.deepcopy(verdicts)
    changed["records"]["S4.5|test_final_norm_removes_scale[tiny-bpe-w96]"].update(
        outcome="fails", value=0.0484, ci_low=0.0455, ci_high=0.0524)
    changed["records"]["S0.6|test_untrained_attention_residuals_are_nearly_straight[ref-opt-125m]"].update(
        outcome="inconclusive")
    cells = excerpt_cells(changed, ledger)
    assert cells["S4.5", "tiny-bpe-w96"] == "fails as expected 0.0484 [0.0455, 0.0524]"
    assert cells["S0.6", "ref-opt-125m"] == "inconclusive 0.0689 [0.052, 0.0875]"
    assert excerpt(changed, ledger) != excerpt(verdicts, ledger)
    changed["records"]["S4.5|test_final_norm_removes_scale[tiny-bpe-w96]"]["version"] += 1  # the ledger's no more
    assert excerpt_cells(changed, ledger)["S4.5", "tiny-bpe-w96"] == "FAILS 0.0484 [0.0455, 0.0524]"
    del changed["records"]["S4.2|test_ffn_output_dominates_each_block[tiny-w96-seed88]"]  # one build fewer
    assert "recipe: holds on 3 of 3 builds" in excerpt_cells(changed, ledger)["S4.2", "tiny-w96"]
    del changed["records"]["S4.2|test_ffn_output_dominates_each_block[tiny-w96]"]
    assert "| S4.2 | fails as expected 0.387 [0.357, 0.421] | · |" in excerpt(changed, ledger)


def test_a_readme_without_the_excerpts_markers_is_refused():
    with pytest.raises(ValueError, match="verdict excerpt"):
        readme("# a README\n\n| claim | tiny-w96 |\n")
    with pytest.raises(ValueError, match="each once"):
        readme(f"{END}\n{START}\n")
