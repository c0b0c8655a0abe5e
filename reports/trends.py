"""What ``<report dir>/trends.html`` shows (``reports.trend_page``): each record's deciding statistic night by night.

A *night* is one complete run of a replay command (the nightly history keeps 60); a *series* is one record
(claim × model × test × parameters, :func:`reports.records.record_key`) across the nights of one command. Each
reading keeps the record's headline check (the claim check that decides the verdict: statistic, interval,
threshold), its outcome, its procedure version and the weights digest of its model. What changed between two
nights is a *mark*: a procedure version bump or a new weights digest (per record), a new torch or transformers
version or another commit (per night).

The summary at the top of the page names the records whose *margin* shrank at every one of the last K runs
(:func:`drift`: "drifting toward its threshold", before its verdict flips) and those whose outcome changed within
them (:func:`flips`). A margin here is how far the interval's nearer end clears the threshold: positive on the
passing side (``Check.margin``), negative where the whole interval is on the failing side, zero where it
contains the threshold.

Only complete runs are nights (``RunDocument.complete``): an interrupted run's missing records would read as gaps,
as in ``reports.history``. Runs are read one at a time and only these readings kept (60 nights of 343 records
would otherwise hold every record's details in memory).
"""

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from reports.checks import Check
from reports.document import RunDocument
from reports.records import record_key
from reports.tables import claim_order, natural

LAST = 5  # the runs the summary looks back over: a margin shrinking at each of 4 steps is no accident of one night
PACKAGES = ("torch", "transformers")  # the versions whose change is marked on the plots


@dataclass(frozen=True)
class Reading:
    """One record of one night: its outcome, procedure version, its model's weights digest (None where the run
    does not record it, e.g. a group) and its headline check (None for a record without claim checks)."""

    outcome: str
    version: int
    weights: str | None
    headline: Check | None


@dataclass
class Night:
    """One complete run of a replay command, as the trends read it (:func:`night_of`)."""

    run_id: str
    created_utc: str
    replay: str
    git: str
    versions: dict[str, str]
    readings: dict[tuple, Reading]


@dataclass(frozen=True)
class Mark:
    """A change between a night and the one before it: ``kind`` "version" (procedure version bump), "weights"
    (another weights digest), "packages" (torch or transformers) or "commit"; ``night`` is the index of the night
    after the change; ``text`` says it in words, e.g. "weights 3f2a91c0 → 77b0e2d4"."""

    night: int
    kind: str
    text: str


@dataclass
class Series:
    """One record across the nights of one command: ``key`` is its :func:`reports.records.record_key`, ``readings``
    [(night index, reading)] oldest first (a night without the record is a gap)."""

    key: tuple
    readings: list[tuple[int, Reading]] = field(default_factory=list)

    @property
    def claim(self) -> str:
        """The claim id, e.g. "S0.3"."""
        return self.key[0]

    @property
    def model(self) -> str:
        """The subject's zoo name (a group name for a group claim)."""
        return self.key[1]

    @property
    def label(self) -> str:
        """The record in words: "S0.3 on tiny-w96", with its test function and parameters where the claim has
        several tests on the model ("… (test_x[restricted])")."""
        test, params = self.key[2], self.key[3]
        return f"{self.claim} on {self.model} ({test}{f'[{params}]' if params else ''})"

    @property
    def latest(self) -> Reading:
        """The newest reading."""
        return self.readings[-1][1]


def night_of(doc: RunDocument) -> Night:
    """The readings of a results document (``reports.document.RunDocument``), keyed by record."""
    models = doc.models or {}
    readings = {record_key(r): Reading(r.outcome, r.version, (models.get(r.model) or {}).get("weights_sha256"),
                                       r.headline) for r in doc.records}
    return Night(str(doc.run_id), doc.created_utc or "", doc.replay or "", doc.git or "",
                 {p: (doc.versions or {}).get(p, "") for p in PACKAGES}, readings)


def read_nights(base: Path) -> list[Night]:
    """The complete runs under ``base`` (its ``*/results.json``), oldest first, one read at a time; links (``latest``),
    unreadable or damaged documents and interrupted or incomplete runs are left out."""
    nights = []
    for path in sorted(base.glob("*/results.json")):
        if path.parent.is_symlink():
            continue
        try:
            doc = RunDocument.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if doc.complete:
            nights.append(night_of(doc))
    return sorted(nights, key=lambda n: (n.created_utc, n.run_id))


def by_command(nights: list[Night]) -> dict[str, list[Night]]:
    """{replay command: its nights, oldest first}, the command with the newest night first."""
    groups: dict[str, list[Night]] = {}
    for night in nights:
        groups.setdefault(night.replay, []).append(night)
    return dict(sorted(groups.items(), key=lambda kv: (kv[1][-1].created_utc, kv[1][-1].run_id), reverse=True))


def series_of(nights: list[Night]) -> list[Series]:
    """Every record of ``nights`` (one command's, oldest first) as a series, sorted as the report sorts them: claims
    by number (S0.10 after S0.9), models with numbers by value (tiny-w96 before tiny-w128), then test and parameters."""
    found: dict[tuple, Series] = {}
    for i, night in enumerate(nights):
        for key, reading in night.readings.items():
            found.setdefault(key, Series(key)).readings.append((i, reading))
    return [found[k] for k in sorted(found, key=lambda k: (claim_order(k[0]), natural(k[1]), k[2], k[3]))]


def night_marks(nights: list[Night]) -> list[Mark]:
    """The changes of torch, transformers and commit from each night to the next."""
    marks = []
    for i in range(1, len(nights)):
        before, now = nights[i - 1], nights[i]
        moved = [f"{p} {before.versions[p] or '?'} → {now.versions[p] or '?'}"
                 for p in PACKAGES if before.versions[p] != now.versions[p]]
        if moved:
            marks.append(Mark(i, "packages", ", ".join(moved)))
        if before.git != now.git:
            marks.append(Mark(i, "commit", f"commit {_short(before.git)} → {_short(now.git)}"))
    return marks


def series_marks(series: Series) -> list[Mark]:
    """A record's own changes from each of its readings to the next: procedure version bumps, new weights."""
    marks = []
    for (_, before), (i, now) in zip(series.readings, series.readings[1:]):
        if before.version != now.version:
            marks.append(Mark(i, "version", f"procedure version {before.version} → {now.version}"))
        if before.weights and now.weights and before.weights != now.weights:
            marks.append(Mark(i, "weights", f"weights {before.weights[:8]} → {now.weights[:8]}"))
    return marks


def _short(git: str) -> str:
    """A commit as the marks name it: its first 8 characters, and "+dirty" where the checkout had changes."""
    return git[:8] + ("+dirty" if git.endswith("+dirty") else "") if len(git) >= 40 else git


def margin(check: Check) -> float:
    """How far the interval's nearer end clears the threshold (``Check.margin``, in the statistic's unit) where it
    clears it; minus how far it stays short where the whole interval is on the failing side; 0 where the interval
    contains the threshold. NaN for a check that is not finite."""
    if not check.finite:
        return math.nan
    if check.margin > 0:
        return check.margin
    short = check.threshold - check.ci_high if check.comparison == ">" else check.ci_low - check.threshold
    return -short if short > 0 else 0.0


@dataclass(frozen=True)
class Drift:
    """A record whose margin shrank at every one of its last ``runs`` readings: ``margins`` from the oldest of them
    to the newest, and ``runs_left``, about how many more runs at the same pace (the mean shrink per run) bring its
    interval to the threshold."""

    series: Series
    margins: tuple[float, ...]
    runs_left: float


def drift(series: Series, last: int = LAST) -> Drift | None:
    """The series' drift toward its threshold over its readings in the last ``last`` nights of its command, or
    None: it needs at least 3 readings there (2 steps), every one with a finite headline, all on one side of the
    threshold (a change of side is a flip, :func:`flips`) and a margin closer to zero at each step.

    Args:
        series: one record's series.
        last: the runs looked back over (``LAST``); the window ends at the series' newest night.
    """
    end = series.readings[-1][0]
    window = [r for i, r in series.readings if i > end - last]
    if len(window) < 3 or any(r.headline is None for r in window):
        return None
    margins = [margin(r.headline) for r in window]
    if any(math.isnan(m) or m == 0 for m in margins) or len({m > 0 for m in margins}) != 1:
        return None
    distance = [abs(m) for m in margins]
    if not all(b < a * (1 - 1e-9) for a, b in zip(distance, distance[1:])):
        return None
    pace = (distance[0] - distance[-1]) / (len(distance) - 1)
    return Drift(series, tuple(margins), distance[-1] / pace)


@dataclass(frozen=True)
class Flip:
    """An outcome change of a record from one reading to the next, at night ``night`` (its run id ``run_id``)."""

    series: Series
    night: int
    run_id: str
    was: str
    now: str


def flips(series: Series, nights: list[Night], last: int = LAST) -> list[Flip]:
    """The series' outcome changes within the last ``last`` nights of ``nights`` (its command's), oldest first."""
    start = len(nights) - last
    return [Flip(series, i, nights[i].run_id, before.outcome, now.outcome)
            for (_, before), (i, now) in zip(series.readings, series.readings[1:])
            if i > start and before.outcome != now.outcome]
