"""The report's content as one section model, which ``reports.render`` writes twice: report.md and report.html
(issue 65, item 5). What a report says is decided here, once; how it looks, in the two backends.

A report is a list of :class:`Section`; a section holds blocks: :class:`Lines` (facts, notes, lists, paragraphs),
:class:`Table` (cells are strings or ``reports.tables.OutcomeCell``, which the HTML colours by outcome),
:class:`Figures` (the claim's figures; report.md has none) and nested sections (a subject's details).
"""

from dataclasses import dataclass, field

from reports import shipped_verdicts
from reports.checks import ClaimRecord
from reports.document import RunDocument
from reports.fact_tables import BUILDS_NOTE, builds_rows, model_rows, time_rows
from reports.records import count_outcomes, ledger_quotes_disagree
from reports.source_numbers import NOTE as SOURCE_NOTE, provenance, source_rows
from reports.tables import (IMPLEMENTATION_NOTE, claims_of, column_groups, coverage, detail_tables, is_implementation,
                            label, matrix, num, subject_rows, summary_rows, thresholds)

ZOO_BUILDS = {"shipped": "the shipped weights of models/shipped/", "local": "trained on this machine, not shipped",
              "mixed": "shipped weights and models trained on this machine", None: "no trained zoo model"}
MATRIX_NOTE = ("claims × subjects; each cell: the outcome and the claim check's statistic with its interval: 95 %, or "
               "the lower-α level its claim table gives (with n) where the claim is sequential over prompts")


class Italic(str):
    """A part of a line set in italics (a check's name in its claim's list of thresholds)."""


@dataclass(frozen=True)
class Lines:
    """Lines of text, each a string or a tuple of strings and :class:`Italic` parts.

    ``style``: "meta" (run facts and notes, small), "items" (a bulleted list), "text" (a paragraph each),
    "label" (a bold line naming what follows), "note" (an emphasised paragraph).
    """

    lines: list[str | tuple[str, ...]]
    style: str = "text"


@dataclass(frozen=True)
class Table:
    """A table: header and rows of cells (str, or ``reports.tables.OutcomeCell``).

    Attributes:
        groups: a header row above the header, [(label, columns spanned)], the first column not counted.
        links: the first column's cells link to the claim sections ("S0.1" → "#S0.1").
        colour: colour the cells that show an outcome (off where a cell lists several).
        wide: scrolls sideways with its first column fixed (report.html).
    """

    header: list[str]
    rows: list[list]  # cells: str, or reports.tables.OutcomeCell
    groups: list[tuple[str, int]] | None = None
    links: bool = False
    colour: bool = True
    wide: bool = False


@dataclass(frozen=True)
class Figures:
    """A claim's figures: (index of the record in the run, the record) of each record with a plot."""

    records: list[tuple[int, ClaimRecord]]
    claim: str


@dataclass(frozen=True)
class Section:
    """A titled part of the report: ``blocks`` in order; ``anchor`` its id (a claim's); ``collapsed`` folded until
    the reader opens it (report.html); ``level`` 2 for the report's sections, 3 for one nested in a claim's."""

    title: str
    blocks: list["Lines | Table | Figures | Section"] = field(default_factory=list)
    anchor: str = ""
    collapsed: bool = False
    level: int = 2


def _zoo_build(doc: RunDocument) -> str:
    """Where the run's trained zoo models came from; a run that stopped before any says so (not "no trained zoo
    model", which would read as a run without one)."""
    if doc.zoo_build is None and not doc.complete:
        return "no trained zoo model measured before the run stopped"
    return ZOO_BUILDS.get(doc.zoo_build, doc.zoo_build)


def header_lines(doc: RunDocument) -> list[str]:
    """The run facts: what makes the run replayable, and how it ended."""
    v, device, counts = doc.versions, doc.device, count_outcomes(r.outcome for r in doc.records)
    lines = [
        f"run {doc.run_id} · {doc.created_utc} · git {doc.git} · exit status {doc.exit_status} · "
        f"errors {counts.get('error', 0)}" + (" · INTERRUPTED" if doc.interrupted else "")
        + (" · INCOMPLETE: " + "; ".join(doc.incomplete) if doc.incomplete else ""),
        "outcomes: " + ", ".join(f"{n} {o}" for o, n in counts.items()),
        f"zoo {doc.zoo} ({_zoo_build(doc)}) · device {device['device']} ({device.get('gpu', device['platform'])}) · "
        f"dtype {device['dtype']} · seed {doc.seed} · wall {doc.wall_seconds} s · "
        f"peak RSS {doc.peak_rss_mib} MiB" + _planned(doc.models or {}),
        f"python {v['python']} · torch {v['torch']} · transformers {v['transformers']} · tokenizers {v['tokenizers']}"
        + (" · NOT THE LOCK: " + "; ".join(doc.versions_off_lock) if doc.versions_off_lock else ""),
        "replay: " + doc.replay,
    ]
    stale = [f"{r.claim} on {label(r)}" for r in doc.records
             if ledger_quotes_disagree(r, doc.models or {})]
    if stale:
        lines.append(f"LEDGER OUT OF DATE: the why of {len(stale)} ledger entries quotes a decision this run did not "
                     f"reach on the same weights, or other numbers on the machine it names ({', '.join(stale)}): "
                     "measure them again and rewrite the why (claims/expected_verdicts.toml)")
    redrawn = {name: m["prompt_windows_redrawn"] for name, m in (doc.models or {}).items()
               if m.get("prompt_windows_redrawn")}
    if redrawn:
        lines.append("prompt windows redrawn as not text (mostly whitespace, or one token repeated; batch n × length: "
                     "windows): " + "; ".join(f"{name} " + ", ".join(f"{k}: {v}" for k, v in shapes.items())
                                              for name, shapes in redrawn.items()))
    if doc.merged_from:
        lines.append("merged from runs: " + ", ".join(map(str, doc.merged_from)))
    lines += [f"MISSING: shard {s} did not report; its claims are not in this report" for s in doc.shards_missing or ()]
    bench = doc.benchmarks
    if bench:
        lines.append(f"benchmarks ({bench['file']}, {bench['created']}): " + "; ".join(bench["lines"]))
    return lines


def _planned(models: dict) -> str:
    """" (largest capture planned: 812 MiB, ref-opt-125m)": the estimate ``fixtures.memory_estimate`` made of the
    largest first capture, beside the measured peak; "" where no model has one (runs before it was recorded)."""
    planned = {name: m["capture_estimate_mib"] for name, m in models.items() if m.get("capture_estimate_mib")}
    if not planned:
        return ""
    name = max(planned, key=planned.get)
    return f" (largest capture planned: {planned[name]:,.0f} MiB, {name})"


def _digest(value) -> str:
    return str(value)[:12] if value else "not recorded"


def _statuses(statuses: dict) -> str:
    return ", ".join(f"{name}: {status}" for name, status in statuses.items()) or "no claim check"


def baseline_lines(doc: RunDocument) -> list[str]:
    """What changed since the baseline run, most important first: what makes the comparison unlike, which weights
    were compared, then measured changes apart from changes of the ledger or the procedure."""
    cmp = doc.baseline
    lines = [f"Compared with {cmp['baseline']} (run {cmp['baseline_run_id']}):"]
    lines += [f"NOT LIKE FOR LIKE: {d}" for d in cmp.get("differences", [])]
    lines += [f"RETRAINED IN PLACE: {m['new']} has the same name but other weights (sha256 "
              f"{_digest(m['old_weights_sha256'])} → {_digest(m['new_weights_sha256'])})"
              for m in cmp.get("retrained_in_place", [])]
    lines += [f"RECONFIGURED IN PLACE: {m['new']} has the same name and weights but another config (config.json: "
              f"sha256 {_digest(m['old_config_sha256'])} → {_digest(m['new_config_sha256'])}); changes below may "
              "come from the config" for m in cmp.get("reconfigured_in_place", [])]
    lines += [f"compared {m['old']} (weights {_digest(m['old_weights_sha256'])}) with {m['new']} "
              f"(weights {_digest(m['new_weights_sha256'])})" for m in cmp.get("models", [])
              if m["old"] != m["new"]]
    changes = [f"MEASURED {c['claim']} on {c['model']}: {_statuses(c['was'])} → {_statuses(c['now'])} "
               f"(outcome {c['outcome_was']} → {c['outcome_now']}; {c['test']})" for c in cmp.get("measured_changes", [])]
    changes += [f"ledger only: {c['claim']} on {c['model']}: {c['was']} → {c['now']}, the claim checks measured the "
                f"same ({c['test']})" for c in cmp.get("ledger_changes", [])]
    changes += [f"method changed: {c['claim']} on {c['model']}: version {c['was']} → {c['now']}, numbers not compared"
                for c in cmp.get("method_changed", [])]
    changes += [f"moved: {m['claim']} on {m['model']}, {m['check']}: {num(m['was'], '.4g')} → {num(m['now'], '.4g')} "
                f"(tolerance {num(m['tolerance'])})" for m in cmp["moved"]]
    changes += [f"new test: {t}" for t in cmp["new"]] + [f"no longer run: {t}" for t in cmp["missing"]]
    return lines + (changes or ["no outcome changed and no statistic moved beyond its tolerance"])


def _from(entry: dict, name: str, key: str = "") -> str:
    """" (threshold: source)": where a check's threshold comes from (the catalogue's ``thresholds``), or ""."""
    found = provenance(entry, name, key)
    return f" (threshold: {found})" if found else ""


def source_line(entry: dict, records: list[ClaimRecord]) -> str:
    """A claim section's first line: its source and section, the source's figures, the procedure versions."""
    return (f"Source: {entry.get('source', '')}; {entry.get('section', '')}. "
            + (f"Source's figures: {entry['figures']}. " if entry.get("figures") else "")
            + f"Procedure version {', '.join(sorted({str(r.version) for r in records}))}.")


def claim_section(doc: RunDocument, claim_id: str, entry: dict, records: list[ClaimRecord]) -> Section:
    """One claim's section: statement and source once, each threshold's derivation once, a table of subjects, the
    source's numbers beside ours, the procedures, the figures, and each subject's details (collapsed)."""
    blocks = [Lines([source_line(entry, records)], "meta")]
    if is_implementation(doc, claim_id):
        blocks.append(Lines([IMPLEMENTATION_NOTE], "note"))
    blocks.append(Lines([(f"{role} check ", Italic(shown), f"{_from(entry, name, key)}: {derivation}")
                         for role, name, shown, derivation, key in thresholds(records)], "items"))
    blocks.append(Table(*subject_rows(records, doc.models or {}), wide=True))
    beside = source_rows(entry, records)
    if beside:
        blocks += [Lines(["Source vs measured"], "label"), Lines([SOURCE_NOTE], "meta"),
                   Table(*beside, colour=False, wide=True)]
    blocks.append(Lines([f"Procedure: {p}" for p in dict.fromkeys(r.procedure for r in records if r.procedure)]))
    index = {id(r): i for i, r in enumerate(doc.records)}
    blocks.append(Figures([(index[id(r)], r) for r in records if r.plot], claim_id))
    for r in records:
        tables = detail_tables(r.details)
        if tables:
            blocks.append(Section(f"{label(r)}: details", [b for title, header, rows in tables
                                                            for b in (Lines([title], "label"), Table(header, rows))],
                                  collapsed=True, level=3))
    return Section(f"{claim_id} — {entry.get('statement', '')}", blocks, anchor=claim_id)


def report_sections(doc: RunDocument) -> list[Section]:
    """The whole report after its title: the run facts, what changed, the summary, the matrix, the coverage, the
    builds, the models, the time, then one section per claim (``reports.render`` writes them as md and HTML)."""
    out = [Section("", [Lines(header_lines(doc), "meta")])]
    if doc.against_shipped:
        out.append(Section("This machine's builds against the shipped weights",
                           [Lines(shipped_verdicts.lines(doc.against_shipped), "items")]))
    if doc.baseline:
        compared, *changes = baseline_lines(doc)
        out.append(Section("Changes since the baseline", [Lines([compared]), Lines(changes, "items")]))
    out.append(Section("Summary", [Table(*summary_rows(doc), links=True, colour=False)]))
    groups = [(name, len(members)) for name, members in column_groups(doc)]
    out.append(Section("Outcomes", [Lines([MATRIX_NOTE], "meta"),
                                    Table(*matrix(doc), groups=groups, links=True, wide=True)]))
    out.append(Section("Coverage of the catalogue", [Table(*coverage(doc))], collapsed=True))
    if doc.builds_agree:
        out.append(Section("Agreement between builds", [
            Lines([BUILDS_NOTE], "meta"), Table(*builds_rows(doc)),
            Lines([f"not run on the seed siblings: {c}: {why}" for c, why in (doc.builds_not_run or {}).items()],
                  "items")], collapsed=True))
    out.append(Section("Models", [Table(*model_rows(doc))], collapsed=True))
    out.append(Section("Where the time goes", [Table(*time_rows(doc), colour=False)], collapsed=True))
    return out + [claim_section(doc, claim_id, entry, records) for claim_id, entry, records in claims_of(doc)]
