"""Every claim's own checks function holds on estimates built to hold and fails each check on estimates built to
fail it, and every mutant of its comparators and thresholds is killed (issue 65, items 1 and 2;
``tests/check_cases.py``). The cases of each family are in ``tests/cases_<family>.py``.
"""

import re
from pathlib import Path

import pytest

from claims.s3_inversion import convergence, scope, source_setting
from tests.check_cases import all_cases, problems, survivors

REPO = Path(__file__).resolve().parents[1]
CASES = all_cases()  # every tests/cases_<family>.py's, found rather than listed (issue 79, item 5)
HELPERS = (convergence, scope, source_setting)  # modules of checks the claims' checks functions call


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_claims_checks_hold_where_built_to_and_each_fails_where_its_estimate_is_moved_past_its_threshold(case):
    assert problems(case) == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_check_has_a_stable_key_of_its_claim_unique_in_its_record(case):
    """Issue 65, item 3: a check's key, not its display name, is what the catalogue and the baselines pair it by."""
    keys = [c.key for c in case.checks(case.holding, **case.context)]
    assert all(k.startswith(f"{case.claim}/") for k in keys), keys
    assert len(set(keys)) == len(keys), keys


def test_every_mutant_of_every_registered_checks_module_is_killed():
    """Each Check.of call of each checks module, with its comparator flipped, its threshold past every value, or its
    threshold where nothing fails it: some case of that module must notice."""
    tried, alive = survivors(CASES, HELPERS)
    assert tried >= 3 * len(CASES) and alive == [], f"{len(alive)} of {tried} mutants survive: {alive}"


def test_no_claim_test_writes_its_checks_inline():
    """Issue 65, item 1: a claim test measures and wires; its checks are a function of a checks module of its family
    (with a case in tests/cases_<family>.py), never ``Check.of`` or ``Check(...)`` in the test file."""
    inline = sorted(p.relative_to(REPO).as_posix() for p in REPO.glob("claims/*/test_*.py")
                    if re.search(r"\bCheck\.of\(|\bCheck\(", p.read_text(encoding="utf-8")))
    assert inline == [], f"checks written inline, not in a checks module: {inline}"


def test_every_checks_module_has_a_case():
    modules = {p.relative_to(REPO).with_suffix("").as_posix().replace("/", ".")
               for p in REPO.glob("claims/*/*_checks.py")}
    missing = sorted(modules - {c.checks.__module__ for c in CASES})
    assert missing == [], ("checks modules with no case: " + ", ".join(missing) + ". Add a Case (tests/check_cases.py) "
                           "for each checks function to CASES in tests/cases_<family>.py (a new family: a new file "
                           "of that name with CASES = [...]; it is found, not registered)")


def test_a_check_that_cannot_fail_or_does_not_hold_is_named():
    """The harness itself: a checks function that ignores its estimates (a hard-coded measurement) cannot be driven
    to fail, and one whose constructed estimates do not hold says so."""
    from dataclasses import dataclass

    from latent_instruments.stats import Estimate
    from reports.checks import Check
    from tests.check_cases import Case, estimate

    @dataclass(frozen=True)
    class One:
        x: Estimate

    def hard_coded(e: One) -> list[Check]:
        return [Check.of("x", estimate(1.0), "u", ">", 0.0, "d")]

    def honest(e: One) -> list[Check]:
        return [Check.of("x", e.x, "u", ">", 0.0, "d")]

    assert problems(Case("T", hard_coded, One(estimate(2.0)))) != []
    assert problems(Case("T", honest, One(estimate(2.0)))) == []
    assert any("is failed on the holding" in p for p in problems(Case("T", honest, One(estimate(-2.0)))))
