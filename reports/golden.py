"""The shipped verdicts as golden values: a claims run on the shipped zoo at the shipped settings compared, record by
record, with ``models/shipped/verdicts.json`` (pytest-regressions' practice, issue 75).

Each record the run made is looked up by :func:`reports.records.record_id`; its outcome as measured
(:func:`reports.shipped_verdicts.measured`: the ledger's expectation left out) must equal the kept one, and its
headline's value, ci_low and ci_high must each be within the claim's tolerance of the kept ones, and its sample n
(the units its interval came from) equal to the kept one
(``models/shipped/tolerances.toml``: float noise across CPUs by default, a tolerance against its bound for a claim
whose statistic is rounding noise by design). A record the file does not keep, or keeps for another procedure
version, is not pinned, and fails the comparison as well: ``python -m reports shipped RUN --write`` (``--merge`` for
a partial run) is the one way to accept a new or moved value. Records the file keeps that the run did not make (a
run narrowed by ``--claim``, ``--shard``, ``-k``) are not compared and are no failure.

Which runs are compared is decided by the plugin (``fixtures.golden``): the shipped zoo, its shipped weights, the
shipped settings, no ``--model`` or ``--group``.
"""

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from reports.checks import ClaimRecord
from reports.records import record_id
from reports.shipped_verdicts import headline_numbers, measured

BOUNDS = ("value", "ci_low", "ci_high")  # the headline's numbers a verdicts record keeps, within tolerance
ACCEPT = "python -m reports shipped RUN --write"


@dataclass(frozen=True)
class Tolerance:
    """How far one claim's headline numbers may move: ``math.isclose(run, kept, rel_tol=rel, abs_tol=abs)``.

    Attributes:
        rel: relative tolerance (a fraction of the larger magnitude, ≥ 0).
        abs: absolute tolerance, in the statistic's own units (≥ 0).
        why: where the numbers come from, in a sentence.
    """

    rel: float
    abs: float
    why: str = ""

    def close(self, run: float | None, kept: float | None) -> bool:
        """Whether two numbers agree: both None (no headline, or not finite), or both numbers within tolerance."""
        if run is None or kept is None:
            return run is None and kept is None
        return math.isclose(run, kept, rel_tol=self.rel, abs_tol=self.abs)


@dataclass(frozen=True)
class Tolerances:
    """The tolerances file: a default and per-claim overrides (claim id → :class:`Tolerance`)."""

    default: Tolerance
    claims: dict = field(default_factory=dict)

    def of(self, claim: str) -> Tolerance:
        """The tolerance of ``claim`` (e.g. "S1.2"): its own where the file has one, else the default."""
        return self.claims.get(claim, self.default)


def tolerances_path() -> Path:
    """``models/shipped/tolerances.toml``, beside the verdicts file."""
    from models.shipped import VERDICTS  # here, not at import: models.shipped imports torch

    return VERDICTS.with_name("tolerances.toml")


def _tolerance(raw: dict, where: str) -> Tolerance:
    try:
        tol = Tolerance(rel=float(raw["rel"]), abs=float(raw["abs"]), why=str(raw.get("why", "")))
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{where}: needs rel = NUMBER and abs = NUMBER ({err!r})") from None
    if not (tol.rel >= 0 and tol.abs >= 0 and math.isfinite(tol.rel) and math.isfinite(tol.abs)):
        raise ValueError(f"{where}: rel and abs must be finite and ≥ 0, not {tol.rel!r} and {tol.abs!r}")
    return tol


def load_tolerances(path: Path | None = None) -> Tolerances:
    """The tolerances file (:func:`tolerances_path` unless ``path``).

    Raises:
        ValueError: naming the file and what is wrong (absent, not TOML, no ``[default]``, a table without ``rel``
            and ``abs`` or with a negative one); restore it with git.
    """
    path = path or tolerances_path()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ValueError(f"{path}: cannot be read as TOML ({err}); restore it with git") from None
    if "default" not in raw:
        raise ValueError(f"{path}: has no [default] table (rel, abs, why)")
    claims = {claim: _tolerance(table, f"{path} [claims.{claim!r}]") for claim, table in raw.get("claims", {}).items()}
    return Tolerances(_tolerance(raw["default"], f"{path} [default]"), claims)


@dataclass
class GoldenComparison:
    """What :func:`compare` found.

    Attributes:
        shipped_run: the verdicts file's run id.
        compared: records compared (present in both, same procedure version).
        beyond: one line per record whose outcome differs or a number moved beyond tolerance, naming the record and
            both values.
        not_pinned: one line per record the file does not keep, or keeps for another procedure version.
    """

    shipped_run: str | None
    compared: int = 0
    beyond: list = field(default_factory=list)
    not_pinned: list = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether the run differs from the golden values (a difference beyond tolerance, or a record not pinned)."""
        return bool(self.beyond or self.not_pinned)


def _moved(record: ClaimRecord, kept: dict, tol: Tolerance) -> list[str]:
    """The phrases saying how ``record`` differs from ``kept`` (empty where it agrees): the outcome, the headline's
    numbers beyond tolerance, and its sample size ``n``, exactly, where the file keeps one (a file written before
    it kept ``n`` is compared on the rest)."""
    out = []
    if measured(record.outcome) != kept.get("outcome"):
        out.append(f"outcome {measured(record.outcome)!r} (shipped {kept.get('outcome')!r})")
    mine = headline_numbers(record)
    for name in BOUNDS:
        if not tol.close(mine[name], kept.get(name)):
            out.append(f"{name} {mine[name]!r} (shipped {kept.get(name)!r})")
    if "n" in kept and mine["n"] != kept["n"]:
        out.append(f"sample n {mine['n']!r} (shipped {kept['n']!r}), which no tolerance covers")
    return out


def compare(records: list[ClaimRecord], shipped: dict, tolerances: Tolerances) -> GoldenComparison:
    """Every record of a run beside the shipped verdicts.

    Args:
        records: the run's records (only these are compared: a narrowed run is compared on what it made).
        shipped: :func:`reports.shipped_verdicts.load`'s document (``records`` keyed by record id).
        tolerances: :func:`load_tolerances`'s.
    Returns:
        the comparison; its ``beyond`` lines read "S1.2 test_x[tiny-w96]: value 0.5 (shipped 0.01), beyond
        abs 0.25 (why)".
    """
    out = GoldenComparison(shipped.get("run_id"))
    for r in sorted(records, key=record_id):
        key, kept = record_id(r), shipped["records"].get(record_id(r))
        if kept is None:
            out.not_pinned.append(f"{key}: not in the shipped verdicts")
            continue
        if kept.get("version") != r.version:
            out.not_pinned.append(f"{key}: procedure version {r.version}, the shipped verdicts' {kept.get('version')}")
            continue
        out.compared += 1
        tol = tolerances.of(r.claim)
        moved = _moved(r, kept, tol)
        if moved:
            out.beyond.append(f"{key}: {'; '.join(moved)}, beyond rel {tol.rel:g} abs {tol.abs:g} ({tol.why})")
    return out


def lines(comparison: GoldenComparison, verdicts: str = "models/shipped/verdicts.json") -> list[str]:
    """The terminal's lines for a comparison: a count, one line per record beyond tolerance or not pinned, and how
    to accept a change that is meant."""
    head = (f"golden values: {comparison.compared} records compared with {verdicts} (run {comparison.shipped_run}), "
            f"{len(comparison.beyond)} beyond tolerance, {len(comparison.not_pinned)} not pinned")
    out = [head, *(f"  BEYOND TOLERANCE {line}" for line in comparison.beyond),
           *(f"  NOT PINNED {line}" for line in comparison.not_pinned)]
    if comparison.failed:
        out.append(f"  a change that is meant is accepted by `{ACCEPT}` from a `make claims` run (--merge for a run of "
                   "some claims); tolerances: models/shipped/tolerances.toml")
    return out
