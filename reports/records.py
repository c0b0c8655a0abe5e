"""What a claim test records: checks with statistic, uncertainty, threshold, margin, verdict."""

from dataclasses import asdict, dataclass, field

from latent_instruments.stats import Estimate


@dataclass(frozen=True)
class Check:
    """One comparison of a measured statistic with a threshold.

    Attributes:
        name: what is measured, e.g. "straightening (RMS drop, embed+pos -> last block)".
        value: the statistic on the full sample.
        ci_low, ci_high: its bootstrap interval (equal to value when exact).
        unit: e.g. "decades", "Hellinger", "fraction".
        comparison: ">" (holds when ci_low > threshold) or "<" (ci_high < threshold).
        threshold: the bound the statistic must clear.
        derivation: where the threshold comes from: the source's figure and the margin taken.
        role: "claim" for the claim itself, "control" for a check that a vacuous pass would fail.
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

    @property
    def margin(self) -> float:
        """How far the conservative end of the interval clears the threshold (negative: fails)."""
        return self.ci_low - self.threshold if self.comparison == ">" else self.threshold - self.ci_high

    @property
    def passed(self) -> bool:
        """Whether the interval clears the threshold (margin > 0)."""
        return self.margin > 0

    @classmethod
    def of(cls, name: str, estimate: Estimate, unit: str, comparison: str, threshold: float, derivation: str,
           role: str = "claim") -> "Check":
        """A check from a bootstrap :class:`Estimate`."""
        if comparison not in (">", "<"):
            raise ValueError(f"comparison must be '>' or '<', got {comparison!r}")
        return cls(name, estimate.value, estimate.low, estimate.high, unit, comparison, threshold, derivation, role)


@dataclass
class ClaimRecord:
    """Everything the report shows of one claim on one model.

    Attributes:
        claim: claim id, e.g. "S0.3".
        source: the source section, e.g. "S0 Fig 2".
        model: the zoo name of the subject.
        test: the pytest node id.
        checks: the claim's checks and its controls; the verdict needs all.
        procedure: how the measurement differs from the source's, if at all.
        details: further numbers shown in the report (per-layer, per-block).
        plot: data for the HTML report's figure, or None.
        expected: "holds", or "fails" where the ledger expects it to fail.
        expected_reason: the ledger's reason.
    """

    claim: str
    source: str
    model: str
    test: str
    checks: list[Check]
    procedure: str = ""
    details: dict = field(default_factory=dict)
    plot: dict | None = None
    expected: str = "holds"
    expected_reason: str = ""

    @property
    def verdict(self) -> str:
        """"holds" if every check passed, else "fails"."""
        return "holds" if all(c.passed for c in self.checks) else "fails"

    @property
    def deciding(self) -> Check:
        """The check with the smallest margin: the one that decides the verdict."""
        return min(self.checks, key=lambda c: c.margin)

    def to_json(self) -> dict:
        """The record as results.json stores it (see reports/SCHEMA.md)."""
        out = asdict(self)
        out["verdict"] = self.verdict
        out["as_expected"] = self.verdict == self.expected
        out["worst_margin"] = self.deciding.margin
        for check, raw in zip(self.checks, out["checks"]):
            raw["margin"] = check.margin
            raw["passed"] = check.passed
        return out
