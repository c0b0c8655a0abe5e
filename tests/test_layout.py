"""Modules a maintainer reads in one sitting (issue 57): no product module over ``MAX_LINES`` lines, and no claim
test function over ``MAX_TEST_LINES`` (issue 65, item 4)."""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 350
PRODUCT = ("claims", "fixtures", "models", "latent_instruments", "reports", "benchmarks")
MAX_TEST_LINES = 60  # a claim test function, decorators included: it wires the pool to measure and checks
KEPT_LONGER: set[str] = set()  # none (issue 65): records are keyed without their file, so a module can split


def long_modules(root: Path = REPO) -> dict[str, int]:
    """{repository path: lines} of the product modules over ``MAX_LINES`` lines, the allowed ones left out."""
    files = [root / "conftest.py", *(f for d in PRODUCT for f in (root / d).rglob("*.py"))]
    lines = {f.relative_to(root).as_posix(): len(f.read_text(encoding="utf-8").splitlines()) for f in files if f.exists()}
    return {f: n for f, n in lines.items() if n > MAX_LINES and f not in KEPT_LONGER}


def test_no_product_module_is_longer_than_a_sitting():
    assert long_modules() == {}, f"split these modules (at most {MAX_LINES} lines each): {long_modules()}"


def test_a_long_module_is_found(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "models" / "small.py").write_text("x = 1\n" * MAX_LINES)
    assert long_modules(tmp_path) == {"models/big.py": MAX_LINES + 1}


def test_no_self_test_imports_another_test_module():
    """Issue 65, item 1: what self-tests share is in tests/builders.py, tests/helpers.py or tests/cases_*.py, and
    what they measure with is a claim family's ``*_measures.py`` or ``*_checks.py``, never another test module, a
    claim test file included (whose edits would break its importers)."""
    import re

    modules = [*(REPO / "tests").glob("*.py"), *(REPO / "claims").rglob("*.py")]
    importers = sorted(p.relative_to(REPO).as_posix() for p in modules
                       if re.search(r"^\s*(from (tests|claims\.\w+)\.test_\w+ import|import (tests|claims\.\w+)\.test_)",
                                    p.read_text(encoding="utf-8"), re.MULTILINE))
    assert importers == [], f"these import a test module: {importers}"


def long_claim_functions(root: Path = REPO) -> dict[str, int]:
    """{file::function: lines} of the functions of claim test files (``claims/**/test_*.py``) over
    ``MAX_TEST_LINES`` lines, decorators included."""
    out = {}
    for path in sorted((root / "claims").rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if (lines := node.end_lineno - first + 1) > MAX_TEST_LINES:
                    out[f"{path.relative_to(root).as_posix()}::{node.name}"] = lines
    return out


def test_no_claim_test_function_is_longer_than_a_screen():
    """Issue 65, item 4: prose lives in the catalogue, details and figures in the test module's helpers, so a claim
    test reads as measure → estimates → checks → record."""
    assert long_claim_functions() == {}, (f"shorten these claim test functions (at most {MAX_TEST_LINES} lines): "
                                          f"{long_claim_functions()}")


def test_a_long_claim_function_is_found(tmp_path):
    (tmp_path / "claims" / "s9").mkdir(parents=True)
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_TEST_LINES - 1))
    (tmp_path / "claims" / "s9" / "test_long.py").write_text(f"@decorator\ndef test_long():\n{body}")
    (tmp_path / "claims" / "s9" / "test_short.py").write_text(f"def test_short():\n{body}")
    assert long_claim_functions(tmp_path) == {"claims/s9/test_long.py::test_long": MAX_TEST_LINES + 1}


def _is_claim_test(node: ast.FunctionDef) -> bool:
    """Whether a function is marked ``@pytest.mark.claim(...)``."""
    return any(isinstance(d, ast.Call) and ast.unparse(d.func) == "pytest.mark.claim" for d in node.decorator_list)


def _called(node: ast.AST) -> set[str]:
    """The names a function calls directly (``f(...)``, not ``x.f(...)``)."""
    return {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def claim_tests_without_a_measure(root: Path = REPO) -> list[str]:
    """file::function of the claim tests (``@pytest.mark.claim``) that call no ``measure_*`` function imported from
    a module that is not a test module, themselves or through a function of their own module they call (S3.4's
    ``check_depth``, shared by its trained and untrained tests)."""
    out = []
    for path in sorted((root / "claims").rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        measures = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                    and not node.module.rsplit(".", 1)[-1].startswith("test_") for alias in node.names
                    if alias.name.startswith("measure_")}
        local = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        for node in filter(_is_claim_test, local.values()):
            called = _called(node)
            called |= {name for helper in called & set(local) for name in _called(local[helper])}
            if not called & measures:
                out.append(f"{path.relative_to(root).as_posix()}::{node.name}")
    return out


def test_every_claim_test_wires_a_measure_to_its_checks():
    """Issue 65, item 1: a claim is measure(...) -> estimates, checks(estimates) -> [Check], and a test that wires the
    fixtures to the two; the measuring lives in the family's ``*_measures.py``, not in the test."""
    assert claim_tests_without_a_measure() == [], (
        "these claim tests measure inline: move the measurement into a measure_<what>(...) of the family's "
        f"<topic>_measures.py that returns the estimates: {claim_tests_without_a_measure()}")


def test_a_claim_test_measuring_inline_is_found(tmp_path):
    (tmp_path / "claims" / "s9").mkdir(parents=True)
    (tmp_path / "claims" / "s9" / "test_x.py").write_text(
        "import pytest\nfrom claims.s9.x_measures import measure_x\nfrom claims.s9.test_y import measure_y\n\n"
        "@pytest.mark.claim('S9.1', version=1)\ndef test_wired(claim):\n    claim.record(checks(measure_x()))\n\n"
        "@pytest.mark.claim('S9.2', version=1)\ndef test_shared(claim):\n    shared(claim)\n\n"
        "def shared(claim):\n    claim.record(checks(measure_x()))\n\n"
        "@pytest.mark.claim('S9.3', version=1)\ndef test_inline(claim):\n    claim.record(checks(claim.bootstrap(1)))\n\n"
        "@pytest.mark.claim('S9.4', version=1)\ndef test_from_a_test(claim):\n    claim.record(checks(measure_y()))\n")
    assert claim_tests_without_a_measure(tmp_path) == ["claims/s9/test_x.py::test_inline",
                                                       "claims/s9/test_x.py::test_from_a_test"]


def test_every_claim_test_file_is_named_after_its_topic():
    """Issue 79, item 4: a claim's files lead from one to the other, test_TOPIC[_PART].py beside TOPIC_checks.py (and
    TOPIC_measures.py where it measures), as docs/claims.md lists them."""
    from fixtures.docs_pages import topic_of

    unnamed = sorted(p.relative_to(REPO).as_posix() for p in REPO.glob("claims/s*/test_*.py") if topic_of(p) is None)
    assert unnamed == [], f"claim test files named after no TOPIC_checks.py beside them: {unnamed}"


def test_a_test_file_named_after_no_topic_is_found(tmp_path):
    from fixtures.docs_pages import claim_files, topic_of

    for name in ("residual_checks.py", "residual_measures.py", "test_residual_trained.py", "test_layernorm.py"):
        (tmp_path / name).write_text("")
    assert topic_of(tmp_path / "test_residual_trained.py") == "residual"
    assert topic_of(tmp_path / "test_layernorm.py") is None
    assert [p.name for p in claim_files(tmp_path / "test_residual_trained.py")] == [
        "test_residual_trained.py", "residual_measures.py", "residual_checks.py"]


CLAIM_SELF_TESTS = ("tests/test_s*_checks.py", "tests/test_attention.py", "tests/test_geometry.py")
WRITES_A_CHECK = r"\bCheck\.of\(|\bCheck\("


def claim_self_tests_writing_a_check(root: Path = REPO) -> list[str]:
    """file:line of each ``Check.of(`` or ``Check(`` in the claims' self-tests (``CLAIM_SELF_TESTS``)."""
    import re

    files = sorted({f for pattern in CLAIM_SELF_TESTS for f in root.glob(pattern)})
    return [f"{f.relative_to(root).as_posix()}:{i}" for f in files
            for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if re.search(WRITES_A_CHECK, line)]


def test_no_claim_self_test_writes_a_check():
    """Issue 79, item 5: a claim's self-tests call only the claim's own functions. A check built in the test, its
    comparator and threshold copied from the claim, stays green when the claim's checks function changes; the tests
    of the plumbing itself (reports, plugin, statistics) may build checks."""
    assert claim_self_tests_writing_a_check() == [], (
        "these claim self-tests build a check themselves: call the claim's own checks function "
        "(claims/<family>/<topic>_checks.py) instead, on estimates built as its measure builds them (a case's holding "
        "estimates in tests/cases_s*.py with one field replaced), and pick the check by its key: "
        f"{claim_self_tests_writing_a_check()}")


def test_a_self_test_writing_a_check_is_found(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_s9_checks.py").write_text("x = 1\nc = Check.of('x', e, 'u', '>', 0.0, 'd')\n")
    (tmp_path / "tests" / "test_geometry.py").write_text("c = Check('x', 1.0)\nr = ClaimCheck(1)\n")
    (tmp_path / "tests" / "test_reports.py").write_text("c = Check.of('x', e, 'u', '>', 0.0, 'd')\n")  # plumbing
    assert claim_self_tests_writing_a_check(tmp_path) == ["tests/test_geometry.py:1", "tests/test_s9_checks.py:2"]


def test_a_familys_conftest_holds_its_fixtures_only():
    """Issue 79, item 4: family code lives in named modules (model_spectra.py, block_vectors.py, heads.py), not in
    conftest.py; a conftest holds fixtures and their private helpers, and nothing imports from it."""
    found = []
    for path in sorted(REPO.glob("claims/*/conftest.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            fixture = isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list)
            named = getattr(node, "name", None) or ", ".join(ast.unparse(t) for t in getattr(node, "targets", []))
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Assign)) and not fixture and not named.startswith("_"):
                found.append(f"{path.relative_to(REPO)}: {named}")
    importers = sorted(p.relative_to(REPO).as_posix() for p in [*REPO.glob("claims/**/*.py"), *REPO.glob("tests/*.py")]
                       if re.search(r"from claims\.\w+\.conftest import", p.read_text(encoding="utf-8")))
    assert (found, importers) == ([], []), f"family code in conftest.py: {found}; modules importing a conftest: {importers}"


def measures_importing_checks(root: Path = REPO) -> list[str]:
    """The claims' ``*_measures.py`` modules that import a ``*_checks`` module (issue 79, item 3: measure → checks →
    record, one way: a measure returns estimates and never decides)."""
    pattern = re.compile(r"^\s*(from\s+\S*_checks\s+import|import\s+\S*_checks\b)", re.MULTILINE)
    return sorted(p.relative_to(root).as_posix() for p in (root / "claims").rglob("*_measures.py")
                  if pattern.search(p.read_text(encoding="utf-8")))


def test_no_measures_module_imports_a_checks_module():
    assert measures_importing_checks() == [], "move what these import (estimates, constants) into the measures or " \
        f"the topic's home: {measures_importing_checks()}"


def test_a_measures_module_importing_checks_is_found(tmp_path):
    (tmp_path / "claims" / "s9").mkdir(parents=True)
    (tmp_path / "claims" / "s9" / "x_measures.py").write_text("from claims.s9.x_checks import XEstimates\n")
    (tmp_path / "claims" / "s9" / "y_measures.py").write_text("from claims.s9.y_home import Y\n")
    assert measures_importing_checks(tmp_path) == ["claims/s9/x_measures.py"]
