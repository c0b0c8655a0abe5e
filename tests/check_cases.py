"""The claims' own checks driven to hold and to fail (issue 65, items 1 and 2), and their mutants.

Each claim's checks are a pure function of its estimates in a non-test module of its family (``claims/<family>/
*_checks.py``), which the claim test calls. A :class:`Case` gives that function estimates on which the claim holds
(every check passes); :func:`problems` then drives each check to fail by moving the estimate it reads wholly to the
failing side of its own threshold, the others kept, and says what did not fail. :func:`mutants` rewrites the
function's module (each ``Check.of`` call: comparator flipped, threshold moved past every value, threshold moved so
that nothing fails it) and :func:`survivors` names the mutants the same case does not kill. ``tests/
test_claim_checks.py`` runs both over every registered case: a flipped comparator turns ``pytest tests`` red.
"""

import ast
import inspect
import math
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

from latent_instruments.stats import Estimate
from reports.checks import FAILED, PASSED, Check

FAR = 1e9  # a mutant's threshold moved by this much: past every value a check here reads


@dataclass(frozen=True)
class Case:
    """One claim's checks function with estimates on which the claim holds.

    Attributes:
        claim: the claim id ("S4.5"), for the test's id.
        checks: the claim's pure checks function (``claims/<family>/*_checks.py``), called as
            ``checks(holding, **context)``.
        holding: its estimates (a dataclass whose fields are Estimates, lists of them, or other numbers) on which
            every check passes; each Estimate distinct in (value, low, high), so a check names the one it reads.
        context: the function's other arguments (labels, counts), fixed.
        label: what tells two cases of one claim apart ("" for one case).
    """

    claim: str
    checks: Callable[..., list[Check]]
    holding: Any
    context: dict = field(default_factory=dict)
    label: str = ""

    @property
    def id(self) -> str:
        return f"{self.claim}{'-' + self.label if self.label else ''}"


def all_cases() -> list[Case]:
    """Every ``tests/cases_<family>.py``'s ``CASES``, found rather than listed (issue 79, item 5): a new family adds
    its file and nothing else."""
    import importlib
    from pathlib import Path

    return [case for path in sorted(Path(__file__).resolve().parent.glob("cases_*.py"))
            for case in importlib.import_module(f"tests.{path.stem}").CASES]


def check_of(cases: list[Case], key: str, context: dict | None = None, **fields) -> Check:
    """The check keyed ``key`` as its claim's own checks function gives it (issue 79, item 5: a claim's self-tests
    call only the claim's functions): the first of ``cases`` whose function gives that key, on its holding estimates
    with ``fields`` in their place and its context updated by ``context``; the claim's comparator and threshold
    decide, not the self-test's.

    Raises:
        LookupError: where no case's checks function gives a check keyed ``key``.
    """
    for case in cases:
        if any(c.key == key for c in case.checks(case.holding, **case.context)):
            checks = case.checks(replace(case.holding, **fields), **{**case.context, **(context or {})})
            [check] = [c for c in checks if c.key == key]
            return check
    raise LookupError(f"no case's checks function gives a check keyed {key!r}")


def beyond(check: Check, like: Estimate) -> Estimate:
    """An estimate of ``like``'s sample and method whose whole interval lies on the failing side of ``check``'s
    threshold, one unit of the threshold's size past it."""
    step = 1.0 + abs(check.threshold)
    sign = -1.0 if check.comparison == ">" else 1.0
    centre = check.threshold + sign * 2 * step
    return replace(like, value=centre, low=centre - step / 2, high=centre + step / 2)


def _estimates(holding) -> Iterator[tuple[str, Any, Estimate]]:
    """(field, index or key or None, Estimate) of every Estimate in a dataclass of estimates: a field, or an item
    of a list, tuple or dict field."""
    for f in fields(holding):
        value = getattr(holding, f.name)
        if isinstance(value, Estimate):
            yield f.name, None, value
        elif isinstance(value, list | tuple | dict):
            for i, item in (value.items() if isinstance(value, dict) else enumerate(value)):
                if isinstance(item, Estimate):
                    yield f.name, i, item


def _reads(check: Check, estimate: Estimate) -> bool:
    return (check.value, check.ci_low, check.ci_high) == (estimate.value, estimate.low, estimate.high)


def failing(case: Case, check: Check):
    """``case.holding`` with every estimate that ``check`` reads moved wholly to its failing side (:func:`beyond`).

    Raises:
        LookupError: where no estimate of the case is the one the check reads.
    """
    moved, found = case.holding, False
    for name, index, estimate in _estimates(case.holding):
        if not _reads(check, estimate):
            continue
        found, new = True, beyond(check, estimate)
        if index is None:
            moved = replace(moved, **{name: new})
        elif isinstance(getattr(moved, name), dict):
            moved = replace(moved, **{name: {**getattr(moved, name), index: new}})
        else:
            items = list(getattr(moved, name))
            items[index] = new
            moved = replace(moved, **{name: type(getattr(moved, name))(items)})
    if not found and check.convergence and ", moved from " in check.name:  # a plateau control reads the move
        decided = check.name.rsplit(", moved from ", 1)[0]  # between two estimates: move the continued one past
        continued = next(c for c in case.checks(case.holding, **case.context)  # its decision (far past the plateau)
                         if c.convergence and c.name.startswith(f"{decided}, after "))
        return failing(case, continued)
    if not found:
        raise LookupError(f"{case.id}: no estimate of the case is the one check {check.name!r} reads")
    return moved


def problems(case: Case, checks: Callable[..., list[Check]] | None = None, own: list[Check] | None = None
             ) -> list[str]:
    """What the case shows wrong with ``checks`` (default: the case's own; a mutant of it): a check that does not
    pass on the holding estimates, a check that does not fail on estimates moved past the case's own threshold of
    it (:func:`failing` of the case's function, so that a mutant's threshold does not move them), a NaN; [] where
    none. ``own``: the case's own checks on the holding estimates, where a mutant is in place of a helper."""
    checks = checks or case.checks
    if not is_dataclass(case.holding):
        return [f"{case.id}: the holding estimates are not a dataclass"]
    try:
        held = checks(case.holding, **case.context)
    except Exception as err:  # a mutant may break the function: that kills it
        return [f"{case.id}: raised {type(err).__name__}: {err}"]
    found = [f"{case.id}: {c.name!r} is {c.status} on the holding estimates" for c in held if c.status != PASSED]
    found += [f"{case.id}: {c.name!r} is not finite" for c in held if not c.finite]
    own = own if own is not None else case.checks(case.holding, **case.context)
    if len(own) != len(held):
        return [*found, f"{case.id}: {len(held)} checks where the claim's function gives {len(own)}"]
    for i, check in enumerate(own):
        try:
            after = checks(failing(case, check), **case.context)
        except Exception as err:
            found.append(f"{case.id}: {check.name!r}: raised {type(err).__name__}: {err}")
            continue
        if len(after) != len(held) or after[i].status != FAILED:
            found.append(f"{case.id}: {check.name!r} does not fail with its estimate moved past {check.threshold:g}")
    return found


def _calls(tree: ast.AST) -> list[ast.Call]:
    """The ``Check.of(...)`` calls of a module, in source order."""
    return sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and n.func.attr == "of" and isinstance(n.func.value, ast.Name) and n.func.value.id == "Check"),
                  key=lambda n: (n.lineno, n.col_offset))


def _argument(call: ast.Call, position: int, keyword: str) -> tuple[Callable[[ast.expr], None], ast.expr]:
    """(setter, node) of a ``Check.of`` argument given by position or keyword."""
    if len(call.args) > position:
        return (lambda node: call.args.__setitem__(position, node)), call.args[position]
    for kw in call.keywords:
        if kw.arg == keyword:
            return (lambda node, kw=kw: setattr(kw, "value", node)), kw.value
    raise LookupError(f"line {call.lineno}: Check.of without {keyword}")


def _expr(text: str, **parts: ast.expr) -> ast.expr:
    node = ast.parse(text, mode="eval").body
    for name, part in parts.items():
        for n in ast.walk(node):
            for f, value in ast.iter_fields(n):
                if isinstance(value, ast.Name) and value.id == name:
                    setattr(n, f, part)
    return node


MUTATIONS = {  # what each does to one Check.of call; C its comparison, T its threshold
    "comparator flipped": lambda c, t: ("comparison", _expr("{'>': '<', '<': '>'}[C]", C=c)),
    "threshold past every value": lambda c, t: ("threshold", _expr(f"T + ({FAR} if C == '>' else -{FAR})", C=c, T=t)),
    "threshold nothing fails": lambda c, t: ("threshold", _expr(f"T - ({FAR} if C == '>' else -{FAR})", C=c, T=t)),
}


def mutants(module: types.ModuleType) -> Iterator[tuple[str, types.ModuleType]]:
    """Each mutant of ``module``: (description, the module rewritten with one ``Check.of`` call mutated by one of
    :data:`MUTATIONS`), loaded as a module of its own (the original is untouched)."""
    source = inspect.getsource(module)
    for k in range(len(_calls(ast.parse(source)))):
        for what, mutate in MUTATIONS.items():
            tree = ast.parse(source)
            call = _calls(tree)[k]
            _, comparison = _argument(call, 3, "comparison")
            _, threshold = _argument(call, 4, "threshold")
            key, node = mutate(comparison, threshold)
            set_node, _ = _argument(call, 3 if key == "comparison" else 4, key)
            set_node(node)
            ast.fix_missing_locations(tree)
            name = f"{module.__name__}__mutant"
            mutant = types.ModuleType(name)
            mutant.__file__ = module.__file__
            sys.modules[name] = mutant  # dataclasses look their module up while the class is made
            try:
                exec(compile(tree, module.__file__, "exec"), mutant.__dict__)
            finally:
                del sys.modules[name]
            yield f"{module.__name__}:{call.lineno} {what}", mutant


def survivors(cases: list[Case], helpers: tuple[types.ModuleType, ...] = ()) -> tuple[int, list[str]]:
    """(mutants tried, the ones no case kills) over the modules of ``cases``' checks functions and the ``helpers``
    modules whose functions they call (``claims.s3_inversion.convergence``' check, ``scope``'s control): a mutant is
    killed where :func:`problems` finds anything for a case run with the mutant's functions in place of the module's
    (the checks function itself, or the helpers it imported by name).
    """
    modules = {c.checks.__module__: sys.modules[c.checks.__module__] for c in cases}
    modules.update({m.__name__: m for m in helpers})
    tried, alive = 0, []
    for module in modules.values():
        for what, mutant in mutants(module):
            tried += 1
            if not any(_killed(case, module, mutant) for case in cases):
                alive.append(what)
    return tried, alive


def _killed(case: Case, module: types.ModuleType, mutant: types.ModuleType) -> bool:
    """Whether ``case`` notices ``mutant`` of ``module``: its checks function run with every function of ``module``
    that its own module's namespace names replaced by the mutant's."""
    own = case.checks(case.holding, **case.context)
    if case.checks.__module__ == module.__name__:
        return bool(problems(case, getattr(mutant, case.checks.__name__), own))
    space = case.checks.__globals__
    swapped = {name: value for name, value in space.items() if isinstance(value, types.FunctionType)
               and value.__module__ == module.__name__ and hasattr(mutant, name)}
    if not swapped:
        return False  # the case does not reach the module
    try:
        space.update({name: getattr(mutant, name) for name in swapped})
        return bool(problems(case, case.checks, own))
    finally:
        space.update(swapped)


def estimate(value: float, half: float = 0.01, n: int = 64, method: str = "BCa bootstrap, 1000 resamples") -> Estimate:
    """A constructed estimate: ``value`` ± ``half`` over ``n`` units by ``method`` (a bootstrap by default)."""
    if not math.isfinite(value):
        raise ValueError("a constructed estimate is finite")
    return Estimate(value, value - half, value + half, 0.95, n, method)


def per_unit(value: float, n: int = 16) -> Estimate:
    """A constructed per-unit decision: the worst of n units, no interval (``latent_instruments.stats.per_unit``)."""
    return Estimate(value, value, value, 1.0, n, "per unit")


def exact(value: float, n: int = 16, half: float = 0.1) -> Estimate:
    """A constructed exact binomial interval's shape: ``value`` ± ``half`` over n units."""
    return Estimate(value, value - half, value + half, 0.95, n, "exact binomial (Clopper–Pearson)")
