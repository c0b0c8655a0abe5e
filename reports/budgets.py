"""A decision's statistic at each descent budget (issue 77): S3's convergence controls continue a descent from N to
5N steps, and the subject table shows both values, as text and (report.html) as a small curve."""

import re

from reports.checks import ClaimRecord


def _num(x: float) -> str:
    return f"{x:.3g}"


class Budgets(str):
    """A cell with a decision's statistic at each descent budget (issue 77): the text "0.465 at 200 → 0.234 at
    1000 steps", and ``points`` [(steps, value)] with ``threshold`` for report.html's small curve
    (``reports.render``)."""

    points: list[tuple[int, float]]
    threshold: float

    def __new__(cls, points: list[tuple[int, float]], threshold: float) -> "Budgets":
        made = super().__new__(cls, " → ".join(f"{_num(v)} at {n}" for n, v in points) + " steps")
        made.points, made.threshold = points, threshold
        return made


def budgets(record: ClaimRecord) -> Budgets | str:
    """The headline claim check's value at each budget where a convergence control continued its descent
    (N, then 5N: the claim check's value, then its continuation's), or "" where it was not continued."""
    claim_checks = [c for c in record.checks if c.role == "claim"]
    if not claim_checks:
        return ""
    first = min(claim_checks, key=lambda c: c.margin)
    later = record.continuation(first)
    steps = re.search(r"after (\d+)N = (\d+) steps$", later.name) if later else None
    if not steps:
        return ""
    times, total = int(steps.group(1)), int(steps.group(2))
    return Budgets([(total // times, first.value), (total, later.value)], first.threshold)
