"""The one place that reads a pytest node id: a claim test's subject, other parameters and function.

Records carry these as fields (``model``, ``params``, ``function``), so nothing else parses node ids; they are read
here only where a node id is all there is: pytest-xdist's scheduling (``fixtures.scheduling``), a test whose worker
died before it made a record (``fixtures.crashes``), and a results.json of schema 6 or older, whose records have no
``function``.
"""

import re

_PARAMS = re.compile(r"\[(.*)\]$")


def _parts(params: str, name: str) -> tuple[str, str] | None:
    """(before, after) the subject's name in a parameter part "a-NAME-b", or None where it is not a part of it."""
    if params == name:
        return "", ""
    if params.startswith(f"{name}-"):
        return "", params[len(name) + 1:]
    if params.endswith(f"-{name}"):
        return params[: -len(name) - 1], ""
    if f"-{name}-" in params:
        before, after = params.split(f"-{name}-", 1)
        return before, after
    return None


def model_of(nodeid: str, names: list[str]) -> str | None:
    """The subject of a claim test's node id, e.g. "tiny-ladder" for ``...::test_x[tiny-ladder-restricted]``.

    Args:
        nodeid: a pytest node id.
        names: the run's subject names (``--model``, ``--group`` or the zoo's default names).
    Returns:
        the longest name that is one of the id's "-"-separated parameter parts, or None for a test without one.
    """
    found = _PARAMS.search(nodeid)
    if not found:
        return None
    return next((n for n in sorted(names, key=len, reverse=True) if _parts(found.group(1), n) is not None), None)


def params_besides(nodeid: str, model: str) -> str:
    """The parameter part of a node id without the model's name, e.g. "restricted" for ``...[tiny-w96-restricted]``
    and model "tiny-w96"; "" without parameters; the whole part where the model is not in it."""
    found = _PARAMS.search(nodeid)
    if not found:
        return ""
    parts = _parts(found.group(1), model) if model else None
    return found.group(1) if parts is None else "-".join(p for p in parts if p)


def function_of(nodeid: str) -> str:
    """The test function a node id names, e.g. "test_final_norm_removes_scale"."""
    return nodeid.split("::")[-1].split("[")[0]
