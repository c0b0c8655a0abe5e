"""What a claim test records: checks with statistic, uncertainty, threshold and margin; the record; the outcome names.

The one module the plugin (``fixtures``) and the reports (``reports``) share. The outcome vocabulary
(``OUTCOMES``) is the one the report, the terminal summary and results.json use; ``RED`` are the outcomes
that fail the run. Report-side analysis of records is in ``reports.records``.
"""

import math
from dataclasses import asdict, dataclass, field, fields, replace
from enum import StrEnum

from latent_instruments.stats import MIN_BOOTSTRAP_UNITS, Estimate, undecidable
from reports.node_ids import function_of

class Outcome(StrEnum):
    """A record's outcome (docs/outcomes.md); a ``str``, so a value read back from results.json equals it."""

    HOLDS = "holds"
    FAILS = "fails"
    FAILS_AS_EXPECTED = "fails as expected"
    INCONCLUSIVE = "inconclusive"
    HOLDS_UNEXPECTEDLY = "holds unexpectedly"
    CONTROL_FAILED = "control failed"
    NOT_INFORMATIVE = "not informative"
    ERROR = "error"


HOLDS, FAILS, FAILS_AS_EXPECTED = Outcome.HOLDS, Outcome.FAILS, Outcome.FAILS_AS_EXPECTED
HOLDS_UNEXPECTEDLY, CONTROL_FAILED, NOT_INFORMATIVE, ERROR = (
    Outcome.HOLDS_UNEXPECTEDLY, Outcome.CONTROL_FAILED, Outcome.NOT_INFORMATIVE, Outcome.ERROR)
INCONCLUSIVE = Outcome.INCONCLUSIVE
OUTCOMES = tuple(Outcome)
RED = frozenset({FAILS, HOLDS_UNEXPECTEDLY, CONTROL_FAILED, ERROR})  # INCONCLUSIVE too with --inconclusive=fail
PASSED, FAILED = "passed", "failed"  # a check's status, with INCONCLUSIVE
ROLES = ("claim", "control", "reading")  # a reading decides nothing: ``Check.role``


@dataclass(frozen=True)
class Check:
    """One comparison of a measured statistic with a threshold.

    Attributes:
        name: what is measured, e.g. "min over blocks of H(no FFN) / H(no attention)".
        value: the statistic on the full sample.
        ci_low, ci_high: its bootstrap interval (equal to value when exact).
        unit: e.g. "decades", "Hellinger", "fraction".
        comparison: ">" (holds when ci_low > threshold) or "<" (ci_high < threshold).
        threshold: the bound the statistic must clear.
        derivation: where the threshold comes from: the source's figure and the margin taken.
        role: "claim" for the claim itself, "control" for a check that a vacuous pass would fail, "reading" for a
            stricter reading of the source's words kept beside the verdict: shown like a check, deciding nothing.
        n: the sample the interval was estimated from (prompts, sequences, seeds: the bootstrap units); None
            where not given.
        confidence: the interval's level (0.95; 1 − 0.05/K at each look of a sequential test with K looks; 1.0
            for an exact statistic); None where not given.
        interval: how the interval was made (``Estimate.method``: "BCa bootstrap, 1000 resamples", "exact binomial
            (Clopper–Pearson)", "deterministic"); None in records made before it was recorded.
        guards_pass: for a control, whether it guards only against a vacuous *pass*: the claim's statistic
            against a null through the same estimator (e.g. position-shuffled states), which fails whenever the
            claim check does. It decides the outcome only where every claim check passed; elsewhere it is
            recorded and shown, and there is no pass for it to guard.
        convergence: for a control, whether it is a convergence control: a decided claim check's statistic again
            after a longer descent on the same units (S3: continued to 5N steps); where it does not stay, the record
            is inconclusive, "unconverged", never red (``fixtures.recording.ClaimRecorder.record``).
        key: the check's identity, e.g. "S4.3/block-{b + 1}-mean-cos-attention-output-ffn-output" filled in: what
            the catalogue's threshold rows and the baseline comparison pair it by, so that rewording ``name``
            unlinks nothing ("" in records made before keys).
    """

    name: str
    value: float
    ci_low: float
    ci_high: float
    unit: str
    comparison: str
    threshold: float
    derivation: str
    role: str = "claim"
    n: int | None = None
    confidence: float | None = None
    guards_pass: bool = False
    interval: str | None = None
    convergence: bool = False
    key: str = ""

    @property
    def margin(self) -> float:
        """How far the conservative end of the interval clears the threshold (negative: fails)."""
        return self.ci_low - self.threshold if self.comparison == ">" else self.threshold - self.ci_high

    @property
    def undecidable(self) -> str:
        """Why this check's interval cannot decide it whatever its margin, or "": a bootstrap from fewer than
        ``MIN_BOOTSTRAP_UNITS`` units, or a zero-width bootstrap interval from n > 1 units
        (``latent_instruments.stats.undecidable``)."""
        return undecidable(self.interval, self.n, self.ci_low, self.ci_high)

    @property
    def passed(self) -> bool:
        """Whether the interval clears the threshold (margin > 0) and is one that can decide."""
        return self.margin > 0 and not self.undecidable

    @property
    def status(self) -> str:
        """"passed" (the whole interval on the passing side), "failed" (the whole interval on the failing side) or
        "inconclusive" (the interval contains the threshold, or is one the sample cannot give: ``undecidable``).
        The same three values for a control: one left undecided leaves the measurement undecided (the record is
        inconclusive, "control undecided"), and only one whose whole interval lies on the failing side fails it.
        An exact, deterministic or per-unit statistic (a point interval) is never inconclusive.
        """
        if self.undecidable:
            return INCONCLUSIVE
        if self.passed:
            return PASSED
        return FAILED if self._beyond else INCONCLUSIVE

    @property
    def _beyond(self) -> bool:
        """Whether the whole interval lies on the failing side of the threshold."""
        return self.ci_high <= self.threshold if self.comparison == ">" else self.ci_low >= self.threshold

    @property
    def sample_factor(self) -> float | None:
        """For an inconclusive check, about how many times its sample would decide it: (h / d)², with d the
        distance of the statistic from the threshold and h the interval's half-width on the threshold's side,
        which shrinks as 1/√n; for a bootstrap from too few units at least 16 / n. None for a decided check; inf
        where the statistic sits on the threshold or the interval has zero width (the sample shows no spread).
        """
        if self.status != INCONCLUSIVE:
            return None
        distance = abs(self.value - self.threshold)
        half = self.value - self.ci_low if self.value > self.threshold else self.ci_high - self.value
        factor = math.inf if distance == 0 else (half / distance) ** 2
        if self.undecidable and self.n:  # at least the units a bootstrap decides from; a zero width tells nothing
            factor = max(factor, MIN_BOOTSTRAP_UNITS / self.n) if self.n < MIN_BOOTSTRAP_UNITS else math.inf
        return factor

    @property
    def finite(self) -> bool:
        """Whether value, interval and threshold are all finite numbers (NaN is never a verdict)."""
        return all(math.isfinite(x) for x in (self.value, self.ci_low, self.ci_high, self.threshold))

    @classmethod
    def of(cls, name: str, estimate: Estimate, unit: str, comparison: str, threshold: float, derivation: str,
           role: str = "claim", guards_pass: bool = False, convergence: bool = False, key: str = "") -> "Check":
        """A check from a bootstrap :class:`Estimate`.

        Raises:
            ValueError: for a comparison other than ">" or "<", a role other than "claim", "control" or "reading",
                or ``guards_pass`` or ``convergence`` on a check that is not a control.
        """
        if comparison not in (">", "<"):
            raise ValueError(f"comparison must be '>' or '<', got {comparison!r}")
        if role not in ROLES:
            raise ValueError(f"role must be 'claim', 'control' or 'reading', got {role!r}")
        if (guards_pass or convergence) and role != "control":
            raise ValueError("guards_pass and convergence are for a control")
        return cls(name, estimate.value, estimate.low, estimate.high, unit, comparison, threshold, derivation, role,
                   estimate.n, estimate.confidence, guards_pass, estimate.method, convergence, key)

    @classmethod
    def from_json(cls, raw: dict) -> "Check":
        """A check as results.json stores it (``ClaimRecord.to_json``), of any schema this version reads (4 to 9).

        The derived keys (``margin``, ``passed``, ``status``, ``sample_factor``, ``undecidable``) are recomputed,
        not read; a null number (the writer stores NaN and inf as null) reads as NaN, which no check passes; keys a
        hand-made or older check lacks take their defaults (unit and derivation "", comparison ">").

        Raises:
            KeyError: without ``name``.
            ValueError: naming the key, for a number that is not a JSON number or null (a string such as "0.62"
                reads as no number), a comparison other than ">" or "<", or a role this version does not know.
        """
        def number(key):
            value = raw.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"check {raw.get('name')!r}: {key} must be a number or null, got {value!r}")
            return math.nan if value is None else float(value)

        comparison, role = raw.get("comparison", ">"), raw.get("role", "claim")
        if comparison not in (">", "<") or role not in ROLES:
            raise ValueError(f"check {raw.get('name')!r}: comparison {comparison!r} (needs '>' or '<') or role {role!r} "
                             f"(needs one of {', '.join(ROLES)}) is not one this version reads")
        return cls(raw["name"], number("value"), number("ci_low"), number("ci_high"), raw.get("unit", ""),
                   comparison, number("threshold"), raw.get("derivation", ""),
                   role, raw.get("n"), raw.get("confidence"), bool(raw.get("guards_pass", False)),
                   raw.get("interval"), bool(raw.get("convergence", False)), raw.get("key", ""))


@dataclass
class ClaimRecord:
    """Everything the report shows of one claim test on one subject.

    Attributes:
        claim: claim id, e.g. "S0.3" (claims/catalogue.toml).
        version: the claim test's procedure version (``@pytest.mark.claim(id, version=N)``).
        model: the zoo name of the subject (a group name for group claims).
        test: the pytest node id (for display; records are identified by their fields, ``record_key``).
        params: the test's other parameters (e.g. {"variant": "restricted"}).
        function: the test function's name, e.g. "test_final_norm_removes_scale" (with ``claim``, ``model`` and
            ``params``, what identifies the record: ``record_key``).
        checks: the claim's checks and its controls.
        procedure: how the measurement was made and how it differs from the source's.
        scaled: where the source measured a much larger model (Mistral-7B, trained OPT-125m), what it
            measured and what this scaled form tests instead; shown next to the verdict. "" otherwise.
        details: further numbers shown in the report as tables (per layer, per block, per rung).
        plot: data for the report's figure (``reports.plots``), or None.
        expected: "holds"; "fails" where the ledger expects the claim to fail on this model.
        expected_reason: the ledger's reason.
        ledger_weights_sha256: the weights digest the ledger entry was measured on ("" without an entry, or
            where the entry does not record it).
        looks: for a sequential test (``sample="prompts"``), one entry per look at a growing sample:
            {"scale": prompts relative to the first look, "prompts": the largest n of its claim checks,
            "confidence": each interval's level, "outcome": that look's outcome}; empty for other tests.
        outcome: one of ``OUTCOMES``; set when the test ends (see ``fixtures.verdicts``).
        message: why, for every outcome but "holds": the failed checks, the skip reason or the error.
        wall_seconds: the test's wall time in seconds, from its first setup to its end, every look included (the
            first test of a model also loads, checks and captures it); None where it did not run to an end
            (a crashed worker).
        not_informative_checks: {check: why} for checks the claim has but this subject cannot inform (S4.4's
            seed-sibling floor on a model given no siblings); shown beside the verdict, never silent.
        interrupted: a sequential test interrupted (Ctrl-C, SIGTERM) during a later look before it measured
            anything: the record is the last finished look's (``fixtures.rounds``).
        beside_source: {quantity: {"source": the source's number on its own subject, "measured": this record's}}
            for the catalogue's ``source_numbers`` of the claim that the test measures (the report's "source vs
            measured" table); empty where it measures none.
    """

    claim: str
    version: int
    model: str
    test: str
    params: dict = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    procedure: str = ""
    details: dict = field(default_factory=dict)
    plot: dict | None = None
    expected: str = "holds"
    expected_reason: str = ""
    looks: list[dict] = field(default_factory=list)
    outcome: str = ""
    message: str = ""
    scaled: str = ""
    ledger_weights_sha256: str = ""
    wall_seconds: float | None = None
    not_informative_checks: dict = field(default_factory=dict)
    function: str = ""
    interrupted: bool = False
    beside_source: dict = field(default_factory=dict)

    def _with_status(self, role: str, status: str) -> list[Check]:
        """The checks of ``role`` with ``status``; a control that guards a pass (``Check.guards_pass``) counts
        only where every claim check passed; a convergence control (``Check.convergence``) is never among them
        (:meth:`unconverged`)."""
        claim_passed = all(c.passed for c in self.checks if c.role == "claim")
        return [c for c in self.checks if c.role == role and c.status == status and not c.convergence
                and (role == "claim" or claim_passed or not c.guards_pass)]

    def unconverged(self) -> list[Check]:
        """The convergence controls (``Check.convergence``) that did not pass: a longer descent reverses or blurs the
        decision of the claim check it continues, or its statistic is still moving (issue 77's plateau), so the record
        is inconclusive ("unconverged"), neither red nor a hold. Empty where a claim check's failure is confirmed (all
        its convergence controls, named after it, passed, or it has none): a failure that stays decides."""
        def confirmed(f: Check) -> bool:
            return all(c.status == PASSED for c in self.checks if c.convergence and c.name.startswith(f"{f.name}, "))
        if any(confirmed(f) for f in self._with_status("claim", FAILED)):
            return []
        return [c for c in self.checks if c.convergence and c.status != PASSED]

    def continuation(self, check: Check) -> Check | None:
        """The convergence control that continues ``check`` (its name, then ", after ..."), or None."""
        return next((c for c in self.checks if c.convergence and c.name.startswith(f"{check.name}, after ")), None)

    def longest(self, check: Check) -> Check:
        """``check`` at its longest descent: where a convergence control continues it, that control's value and
        interval compared as ``check`` is (a failure's control compares the other way), else ``check``; what decided
        the record (issue 64: S3.7's headline was the N value, the N check stays in ``checks``)."""
        control = self.continuation(check)
        return check if control is None else replace(control, comparison=check.comparison, role=check.role,
                                                      convergence=False, guards_pass=False)

    def failed(self, role: str) -> list[Check]:
        """The checks of ``role`` ("claim" or "control") that failed decisively: the whole interval on the failing
        side (a control that guards a pass only where every claim check passed)."""
        return self._with_status(role, FAILED)

    def inconclusive(self, role: str = "claim") -> list[Check]:
        """The checks of ``role`` whose interval contains their threshold ("control": the controls left undecided,
        which leave the whole record inconclusive)."""
        return self._with_status(role, INCONCLUSIVE)

    def readings(self, status: str | None = None) -> list[Check]:
        """The record's readings (role "reading": stricter readings of the source kept beside the verdict, which
        decide nothing), those of ``status`` only where given."""
        return [c for c in self.checks if c.role == "reading" and status in (None, c.status)]

    @property
    def headline(self) -> Check | None:
        """The claim check that decides the verdict (smallest margin among role "claim"), at its longest descent where
        a convergence control continues it (:meth:`longest`); None without one."""
        claim_checks = [c for c in self.checks if c.role == "claim"]
        return self.longest(min(claim_checks, key=lambda c: c.margin)) if claim_checks else None

    @classmethod
    def from_json(cls, raw: dict) -> "ClaimRecord":
        """A record as results.json stores it (:meth:`to_json`), of any schema this version reads (4 to 9).

        The derived keys (``headline``, a check's ``status`` and the like) are recomputed; the keys the report adds
        beside a record (``ledger_build``, ``ledger_quotes_disagree``: ``reports.document.RunDocument.to_json``)
        and keys this version does not know are dropped; ``function`` is read from the node id where a record of
        schema 6 or older lacks it.

        Raises:
            KeyError: without ``claim``, ``model`` or ``test``, or a check without ``name``.
            ValueError: naming the record and the key, for ``checks`` that is not a list (null included), an
                ``outcome`` that is not one of ``OUTCOMES`` (or "" for a record not yet decided), or a damaged check
                (:meth:`Check.from_json`).
        """
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in raw.items() if k in known}
        where = f"record {raw.get('claim')} on {raw.get('model')}"
        if not isinstance(raw.get("checks", []), list):
            raise ValueError(f"{where}: checks must be a list, got {raw.get('checks')!r}")
        if raw.get("outcome", "") not in ("", *OUTCOMES):
            raise ValueError(f"{where}: outcome {raw.get('outcome')!r} is not one of {', '.join(OUTCOMES)}")
        try:
            values["checks"] = [Check.from_json(c) for c in raw.get("checks", [])]
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        values["function"] = raw.get("function") or function_of(raw["test"])
        values.setdefault("version", 0)
        return cls(**values)

    def to_json(self) -> dict:
        """The record as results.json stores it (see reports/SCHEMA.md); ``interrupted`` and ``beside_source`` only
        where set."""
        out = asdict(self)
        for key in ("interrupted", "beside_source"):  # only where set: records without them read as before
            if not out[key]:
                del out[key]
        for check, raw in zip(self.checks, out["checks"]):
            raw["margin"] = check.margin
            raw["passed"] = check.passed
            raw["status"] = check.status
            raw["sample_factor"] = check.sample_factor
            raw["undecidable"] = check.undecidable
        head = self.headline
        out["headline"] = None if head is None else {"name": head.name, "value": head.value, "ci_low": head.ci_low,
                                                     "ci_high": head.ci_high, "unit": head.unit, "margin": head.margin}
        return out
