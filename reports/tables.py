"""The report's tables and lines, built from a run's :class:`reports.document.RunDocument` (reports/SCHEMA.md).

Each function returns plain data, (header, rows) or lines, that ``reports.render`` writes as markdown and as
HTML: the per-claim summary, the claims × subjects matrix grouped by kind of subject, the coverage of the
catalogue, each claim's subject table and details. The tables of run facts (builds, models, time) are
``reports.fact_tables``'; the run's header and baseline lines are ``reports.render``'s.
"""

import math
import re

from reports.checks import (
    CONTROL_FAILED, ERROR, FAILED, FAILS, FAILS_AS_EXPECTED, HOLDS, INCONCLUSIVE, RED, Check, ClaimRecord,
    Outcome,
)
from reports.document import RunDocument
from reports.budgets import budgets
from reports.records import (count_outcomes, ledger_build, ledger_quotes_disagree, settings_disagree, test_name,
                             variant)


def _missing(x) -> bool:
    """None, or a float that is not finite: a number the report cannot show (a NaN is an error, stored as null)."""
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def fmt(x) -> str:
    """A number as the report shows it: 4 significant digits, "—" for None, NaN and inf."""
    return "—" if _missing(x) else f"{x:.4g}" if isinstance(x, float) else str(x)


def num(x, spec: str = ".3g") -> str:
    """A number in a format spec, "—" where it is missing (None, NaN, inf)."""
    return "—" if _missing(x) else format(x, spec)


def natural(name: str) -> list:
    """Sort key that orders numbers in names by value: tiny-w96 < tiny-w128."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


def claim_order(claim_id: str) -> list:
    """Sort key of claim ids: S0.2 < S0.10 < S1.1."""
    return [int(p) if p.isdigit() else p for p in claim_id[1:].split(".")]


def display_name(model: str) -> str:
    """A model as the summary and the matrix name it: a local folder by its base name (``/a/b/ckpt:untrained`` →
    ``ckpt:untrained``), a hub model by its id without ``hf:``; zoo names as they are. The models table keeps the
    full path."""
    name, twin, suffix = model.rpartition(":untrained") if model.endswith(":untrained") else (model, "", "")
    if name.startswith(("/", ".", "~")):
        name = name.rstrip("/").rsplit("/", 1)[-1] or name
    return name.removeprefix("hf:") + twin + suffix


def label(record: ClaimRecord) -> str:
    """The subject of a record as the matrix names it: model (:func:`display_name`), plus the test's other
    parameters."""
    params = variant(record)
    return display_name(record.model) + (f" [{params}]" if params else "")


def deciding_check(record: ClaimRecord) -> Check | None:
    """The check a record's cell shows: for a claim that fails, the claim check that failed decisively; for an
    inconclusive one, the claim check whose interval holds its threshold; else the headline (the claim check of
    smallest margin). The headline alone could show a straddling check beside a decisive failure elsewhere."""
    if record.outcome in (FAILS, FAILS_AS_EXPECTED):
        chosen = record.failed("claim")
    elif record.outcome == INCONCLUSIVE:
        chosen = record.inconclusive("claim")
    else:
        chosen = []
    chosen = [c for c in chosen if not math.isnan(c.margin)]
    if not chosen:
        return record.headline
    return record.longest(min(chosen, key=lambda c: c.margin))


class OutcomeCell(str):
    """A table cell's text with the outcome it shows: the HTML report colours the cell by ``outcome``
    (``reports.render``), never by reading its words; elsewhere it is its text."""

    outcome: Outcome

    def __new__(cls, text: str, outcome: str) -> "OutcomeCell":
        made = super().__new__(cls, text)
        made.outcome = Outcome(outcome)
        return made


def cell(record: ClaimRecord, after: str = "") -> OutcomeCell:
    """The matrix cell: the outcome with the deciding check's statistic (:func:`deciding_check`), or what went
    wrong, then ``after``; coloured by the record's outcome (:class:`OutcomeCell`)."""
    return OutcomeCell(_cell_text(record) + after, record.outcome)


def _cell_text(record: ClaimRecord) -> str:
    head = deciding_check(record)
    value = f" {num(head.value)} [{num(head.ci_low)}, {num(head.ci_high)}]" if head else ""
    params = variant(record)
    suffix = f" ({params})" if params else ""
    controls = {"failed": [c.name for c in record.failed("control")],
                "inconclusive": [c.name for c in record.inconclusive("control")]}
    if record.outcome == CONTROL_FAILED:
        return f"CONTROL FAILED: {'; '.join(controls['failed'])}{suffix}"
    if record.outcome == INCONCLUSIVE and controls["inconclusive"]:
        return f"inconclusive (control undecided: {'; '.join(controls['inconclusive'])}){value}{suffix}"
    if record.outcome == INCONCLUSIVE and record.unconverged():
        return f"inconclusive (unconverged: {'; '.join(c.name for c in record.unconverged())}){value}{suffix}"
    if record.outcome == ERROR:
        first = record.message.strip().splitlines()[0] if record.message.strip() else ""
        return f"ERROR{': ' + first[:120] if first else ''}{'…' if len(first) > 120 else ''}{suffix}"
    word = record.outcome.upper() if record.outcome in RED else record.outcome
    missing = record.not_informative_checks or {}
    unmeasured = f" (not informative: {'; '.join(missing)})" if missing else ""
    disagree = " (S3's own setting disagrees)" if settings_disagree(record) else ""
    return f"{word}{value}{unmeasured}{_readings(record)}{disagree}{suffix}"


def _readings(record: ClaimRecord) -> str:
    """" (readings beside it: 2 failed, 1 inconclusive)": how many of the record's readings (``ClaimRecord
    .readings``, stricter readings that decide nothing) do not pass, or ""; the claim's section names them."""
    said = [f"{len(record.readings(status))} {status}" for status in (FAILED, INCONCLUSIVE) if record.readings(status)]
    return f" (readings beside it: {', '.join(said)})" if said else ""


SUBJECT_GROUPS = (("trained zoo", ("trained",)), ("untrained twins", ("untrained",)),
                  ("random-init references", ("reference",)), ("your models", ("hf", "user group")))
OTHER_GROUP = "groups of models"  # the ladder, the seed siblings, the mixer pair: subjects with no facts of their own


def column_groups(doc: RunDocument) -> list[tuple[str, list[str]]]:
    """The matrix's subjects grouped by kind, trained zoo first: [(group name, [model names])], empty groups left
    out; a user's group (``user_groups``) goes with "your models", the zoo's groups to ``OTHER_GROUP``."""
    models = sorted(dict.fromkeys(r.model for r in doc.records), key=natural)
    role = {m: "user group" if m in (doc.user_groups or {}) else (doc.models or {}).get(m, {}).get("role")
            for m in models}
    groups = [(name, [m for m in models if role[m] in roles]) for name, roles in SUBJECT_GROUPS]
    known = {r for _, roles in SUBJECT_GROUPS for r in roles}
    groups.insert(3, (OTHER_GROUP, [m for m in models if role[m] not in known]))
    return [(name, members) for name, members in groups if members]


def matrix(doc: RunDocument) -> tuple[list[str], list[list[str]]]:
    """Claims × subjects: one cell per (claim, subject), several tests joined by line breaks; the subjects in the
    order of :func:`column_groups`. A recipe's main model whose seed siblings ran too reads its recipe's verdict
    beside its own ("recipe: fails on 4 of 4 builds", the builds-agree table's summary), so that a verdict on the
    edge shows as such rather than by the luck of one training; where one build holds and another fails, every
    build's cell says "seed-unstable (holds on k of n builds)" (issue 77)."""
    claims = sorted({r.claim for r in doc.records}, key=claim_order)
    models = [m for _, members in column_groups(doc) for m in members]
    cells: dict[tuple[str, str], list[OutcomeCell]] = {}
    several = {c for c in claims if len({test_name(r) for r in doc.records if r.claim == c}) > 1}
    recipes = {(b["claim"], b["test"], b["params"], b["recipe"]): b["summary"] for b in doc.builds_agree or ()}
    unstable = {(b["claim"], b["test"], b["params"], m): b["seed_unstable"] for b in doc.builds_agree or ()
                if b.get("seed_unstable") for m in b["builds"]}
    for r in doc.records:
        suffix = f" — {test_name(r)}" if r.claim in several else ""
        recipe = recipes.get((r.claim, test_name(r), variant(r), r.model))
        builds = f" · recipe: {recipe}" if recipe else ""
        shaky = unstable.get((r.claim, test_name(r), variant(r), r.model))
        builds += f" · {shaky}" if shaky else ""  # every build of a recipe whose builds disagree (issue 77)
        cells.setdefault((r.claim, r.model), []).append(cell(r, builds + suffix))
    names = {c: c + (" (implementation check)" if is_implementation(doc, c) else "") for c in claims}

    def joined(shown: list[OutcomeCell]) -> OutcomeCell:  # a subject's records, coloured by the first one's outcome
        return OutcomeCell("<br>".join(shown), shown[0].outcome)
    return ["claim"] + models, [[names[c]] + [joined(cells[c, m]) if (c, m) in cells else "·" for m in models]
                                for c in claims]


NAMED = (FAILS, FAILS_AS_EXPECTED, INCONCLUSIVE)  # outcomes the summary names the subjects of (red ones too)


def summary_rows(doc: RunDocument) -> tuple[list[str], list[list[str]]]:
    """One line per claim that ran, for the top of the report: on how many subjects it holds, where it fails
    (as the ledger expects, or not), is inconclusive, not informative or red, and which verdicts changed since the
    last run of the same command (``changes_since_last_run``) or since the baseline."""
    since = doc.changes_since_last_run or {}
    changed = (doc.baseline or {}).get("verdict_changes") or since.get("changes") or []
    rows = []
    for claim_id, entry, records in claims_of(doc):
        counts = count_outcomes(r.outcome for r in records)
        parts = [f"holds on {counts.get(HOLDS, 0)} of {len(records)}"]
        for outcome, n in counts.items():
            if outcome == HOLDS:
                continue
            names = f": {', '.join(label(r) for r in records if r.outcome == outcome)}" \
                if outcome in NAMED or outcome in RED else ""
            parts.append(f"{outcome.upper() if outcome in RED else outcome} on {n}{names}")
        parts += [f"{b['seed_unstable']} of {display_name(b['recipe'])}" for b in doc.builds_agree or ()
                  if b["claim"] == claim_id and b.get("seed_unstable")]  # siblings disagree: not a finding
        moved = [f"{label_of(c)}: {c['was']} → {c['now']}" for c in changed if c["claim"] == claim_id]
        rows.append([claim_id, short(entry.get("statement", "")), "; ".join(parts), "; ".join(moved) or "—"])
    skipped = since.get("interrupted_since") or []
    passed_over = (f" (the last complete one; interrupted since: {', '.join(skipped)})"
                   if skipped and not doc.baseline else "")
    return ["claim", "statement", "verdicts", "changed since " + ("the baseline" if doc.baseline else
                                                                 f"run {since['run_id']}" if since.get("run_id")
                                                                 else "the last run") + passed_over], rows


def label_of(change: dict) -> str:
    """The subject of a verdict change: its model, with the test's parameters where the test id has them."""
    params = change["test"].partition("[")[2].removesuffix("]").removeprefix(change["model"]).lstrip("-")
    return display_name(change["model"]) + (f" [{params}]" if params else "")


def short(text: str, length: int = 90) -> str:
    """A statement cut to ``length`` characters, with "…" where it was cut."""
    return text[:length] + ("…" if len(text) > length else "")


def claims_of(doc: RunDocument):
    """(claim id, catalogue entry, its records) for every claim that ran, in claim order."""
    for claim_id in sorted({r.claim for r in doc.records}, key=claim_order):
        yield claim_id, (doc.catalogue or {}).get(claim_id, {}), [r for r in doc.records if r.claim == claim_id]


IMPLEMENTATION_NOTE = ("Implementation check: the claim is an identity of the mechanism, true for any weights, trained "
                       "or random. 'holds' says that the captured activations are what the source's algebra says "
                       "they are on this architecture and dtype (its controls show the check sees a violation), not "
                       "that the model learned anything.")


def is_implementation(doc: RunDocument, claim_id: str) -> bool:
    """Whether the catalogue marks a claim as an implementation check (an identity, S1.1-S1.3)."""
    return (doc.catalogue or {}).get(claim_id, {}).get("kind") == "implementation"


def coverage(doc: RunDocument) -> tuple[list[str], list[list[str]]]:
    """Every catalogued claim: its tests, the models they ran on, and the outcomes."""
    rows = []
    for claim_id, entry in sorted((doc.catalogue or {}).items(), key=lambda kv: claim_order(kv[0])):
        records = [r for r in doc.records if r.claim == claim_id]
        tests = sorted({test_name(r) for r in records})
        counts = count_outcomes(r.outcome for r in records)
        kind = "[implementation check] " if entry.get("kind") == "implementation" else ""
        rows.append([claim_id, kind + short(entry["statement"]),
                     ", ".join(tests) or _not_run(doc, claim_id),
                     ", ".join(dict.fromkeys(r.model for r in records)) or "—",
                     ", ".join(f"{n} {o}" for o, n in counts.items()) or "—"])
    return ["claim", "statement", "tests", "models run", "outcomes"], rows


def _not_run(doc: RunDocument, claim_id: str) -> str:
    """Why a catalogued claim has no record: the run was interrupted before it recorded one, it was selected and
    recorded nothing, or it was not selected (``claims_selected``; unknown for older runs and xdist controllers)."""
    selected = doc.claims_selected
    if selected is not None and claim_id in selected:
        if doc.interrupted:
            return "INTERRUPTED: selected, stopped before it recorded"
        if doc.incomplete:
            return f"INCOMPLETE RUN ({'; '.join(doc.incomplete)}): selected, no record"
        return "selected, no record (deselected by a marker or skipped at collection)"
    if selected is None and doc.interrupted:
        return "not run (the run was interrupted; whether it was selected is not recorded)"
    return "not run (not selected in this run)"


def subject_rows(records: list[ClaimRecord], models: dict) -> tuple[list[str], list[list[str]]]:
    """One claim's table: per subject the claim check's statistic, interval, threshold, margin, outcome, why.

    Args:
        records: the claim's records.
        models: the run's ``models`` (for the ledger's build: ``reports.records.ledger_build``).
    """
    header = ["subject", "test", "outcome", "claim check", "value", "interval (level, n)", "threshold", "margin",
              "descent budgets", "note"]
    rows = []
    for r in records:
        head = r.headline
        note = r.message if r.outcome != HOLDS else ""
        for name, why in r.not_informative_checks.items():
            note = f"(not informative here: {name}: {why}) {note}".strip()
        for c in r.readings():
            if c.status != "passed":
                note = (f"(reading {c.status}: {c.name} = {num(c.value, '.4g')} [{num(c.ci_low, '.4g')}, "
                        f"{num(c.ci_high, '.4g')}], needs {c.comparison} {fmt(c.threshold)}) {note}").strip()
        if r.scaled:
            note = f"scaled form: {r.scaled} {note}".strip()
        if r.expected != HOLDS and r.outcome != FAILS_AS_EXPECTED:
            note = f"{note} (ledger: {r.expected_reason})".strip()
        build = ledger_build(r, models)
        if build == "another build":
            note = f"{note} (ledger measured on another build)".strip()
        stale = ledger_quotes_disagree(r, models)
        if stale:
            note = f"{note} (the ledger's why does not match this run: {'; '.join(stale)})".strip()
        if len(r.looks) > 1:
            note = f"looked at {' → '.join(str(look['prompts']) for look in r.looks)} prompts. {note}".strip()
        rows.append([label(r), test_name(r), OutcomeCell(r.outcome, r.outcome), head.name if head else "—", fmt(head and head.value),
                     f"[{fmt(head.ci_low)}, {fmt(head.ci_high)}]{_level(head)}" if head else "—",
                     f"{head.comparison} {fmt(head.threshold)}" if head else "—",
                     num(head.margin, "+.4g") if head else "—", budgets(r), note[:400]])
    return header, rows


def _level(check: Check) -> str:
    """" (98.3 %, n = 128, BCa bootstrap, 1000 resamples)": an interval's level, sample and how it was made, where
    the record has them (schema 5; ``interval`` later)."""
    if check.confidence is None:
        return ""
    n = f", n = {check.n}" if check.n else ""
    how = f", {check.interval}" if check.interval else ""
    return f" ({check.confidence:.1%}{n}{how})"


def thresholds(records: list[ClaimRecord]) -> list[tuple[str, str, str, str, str]]:
    """Each distinct check of a claim once: (role, name, "name comparison threshold unit", derivation, key)."""
    seen: dict[str, tuple[str, str, str, str, str]] = {}
    for r in records:
        for c in r.checks:
            seen.setdefault(c.name, (c.role, c.name, f"{c.name} {c.comparison} {fmt(c.threshold)} {c.unit}",
                                     c.derivation, c.key))
    return list(seen.values())


def detail_tables(details: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """A record's details as (title, header, rows) tables.

    Shapes understood: {key: scalar} (one table of scalars), {key: {label: scalar}} (one row per label),
    {key: {label: {field: scalar}}} and {key: [{field: scalar}]} (one row per item), {key: [scalars]}.
    """
    tables, scalars = [], []
    for key, value in details.items():
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            fields = list(dict.fromkeys(f for v in value.values() for f in v))
            tables.append((key, ["", *fields], [[str(k), *(fmt(v.get(f)) for f in fields)] for k, v in value.items()]))
        elif isinstance(value, dict):
            tables.append((key, ["", "value"], [[str(k), fmt(v)] for k, v in value.items()]))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            fields = list(dict.fromkeys(f for v in value for f in v))
            tables.append((key, ["#", *fields], [[str(i + 1), *(fmt(v.get(f)) for f in fields)] for i, v in enumerate(value)]))
        elif isinstance(value, list):
            tables.append((key, [str(i + 1) for i in range(len(value))], [[fmt(v) for v in value]]))
        else:
            scalars.append([key, fmt(value)])
    return ([("details", ["", "value"], scalars)] if scalars else []) + tables
