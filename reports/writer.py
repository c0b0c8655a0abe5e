"""Writes a run's results.json, report.md and report.html, the history index, and the terminal summary.

Each run gets its own folder ``<report dir>/<run id>/``; ``<report dir>/latest``
is a symbolic link to the newest and ``<report dir>/index.html`` lists every
run with its outcome changes against the previous run of the same replay
command; ``<report dir>/trends.html`` (``reports.trend_page``) plots each
record's deciding statistic over those runs. Files are written atomically and readable by others (a CI's web
server), and an existing run folder is never overwritten. A run interrupted
part-way still writes what it measured (``"interrupted": true``).
"""

import html
import json
import math
import os
import re
import shlex
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from reports.ledger_keys import LEDGER
from models.atomic_files import atomic_write_bytes, atomic_write_text, publish_mode
from reports.confined import confined
from reports import baseline, benchmarks, history, render, shipped_verdicts, tables, trend_page
from models.recipes import seed_builds
from reports.document import RunDocument
from reports.run_facts import REPO, device_facts, git_revision, lock_differences, versions
from reports.records import builds_agree, test_name, zoo_build_of
from reports.checks import INCONCLUSIVE, NOT_INFORMATIVE, RED, ClaimRecord
from reports.results_file import SCHEMA


def replay_command(settings) -> str:
    """The claims command that reproduces this run's numbers and its selection of tests on the same machine, each
    word shell-quoted (``shlex.join``: a folder with spaces or non-ASCII letters pastes back whole; issue 67, case 11)."""
    device = settings.device.split(":")[0] if os.environ.get("PYTEST_XDIST_WORKER") else settings.device
    words = [*settings.selection, "--zoo", settings.zoo, "--device", device]
    words += ["--device-map", settings.device_map] if settings.device_map else []
    words += ["--ledger", str(settings.ledger)] if settings.ledger.resolve() != LEDGER.resolve() else []
    words += ["--prompts", f"{settings.prompts[0]}x{settings.prompts[1]}", "--max-prompts", str(settings.max_prompts)]
    words += ["--source-scale", "on" if settings.source_scale else "off"]
    words += ["--inconclusive", "fail"] if settings.inconclusive_fails else []
    words += ["--zoo-build", "local"] if settings.zoo_build == "local" else []
    words += ["--dtype", settings.dtype_name, "--seed", str(settings.seed)]
    words += ["--corpus", str(settings.corpus)] if settings.corpus else []
    for m in settings.models:
        words += ["--model", m]
    words += ["--shard", settings.shard] if settings.shard else []
    for g in settings.groups:
        words += ["--group", g.spec]
    return "pytest " + shlex.join(words)


def finite_json(value):
    """``value`` (nested dicts, lists, numbers) with every NaN and infinity as None: results.json and the journal
    (``reports.journal``) stay strict JSON (NaN only ever means an error)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def _corpus(settings) -> dict:
    from models.corpus import load_corpus

    corpus = load_corpus(settings.corpus)
    return {"name": corpus.name, "sha256": corpus.sha256, "characters": len(corpus.text)}


def sort_records(records: list[ClaimRecord]) -> list[ClaimRecord]:
    """Records in a fixed order (claim, model, test; numbers in names by value), whatever order processes sent them in."""
    return sorted(records, key=lambda r: (tables.claim_order(r.claim), tables.natural(r.model), r.test))


def results(settings, records: list[ClaimRecord], models: dict, exitstatus: int, peak_rss: float, catalogue: dict,
            gpu_peak: float = 0.0, selected: list[str] | None = None, incomplete: list[str] = ()) -> RunDocument:
    """The run's results document (reports/SCHEMA.md), without its run id, the baseline comparison and the changes
    since the last run (:func:`write_doc` adds them). ``selected``: the claim ids of the tests the run selected
    (None where the process does not know them: an xdist controller collects nothing); ``incomplete``: why the run
    is not a whole run of its replay command (``fixtures.collector.incomplete_reasons``)."""
    records = sort_records(records)
    return RunDocument(
        schema=SCHEMA,
        run_id=None,
        created_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=["pytest", *sys.argv[1:]],
        replay=replay_command(settings),
        interrupted=exitstatus == 2,
        exit_status=int(exitstatus),
        seed=settings.seed,
        zoo=settings.zoo,
        zoo_build=zoo_build_of(models),
        against_shipped=(shipped_verdicts.against_shipped(records, shipped_verdicts.load())
                         if settings.zoo_build == "local" else None),
        prompts=list(settings.prompts),
        max_prompts=settings.max_prompts,
        source_scale=settings.source_scale,
        corpus=_corpus(settings),
        versions=versions(),
        versions_off_lock=lock_differences(),
        git=git_revision(),
        device=device_facts(settings, gpu_peak),
        wall_seconds=round(time.perf_counter() - settings.started, 1),
        peak_rss_mib=peak_rss,
        models=models,
        catalogue=catalogue,
        user_groups={g.name: {"kind": g.kind, "members": list(g.members), "seeds": list(g.seeds)}
                     for g in settings.groups},
        records=records,
        builds_agree=builds_agree(records, seed_builds(settings.zoo)),
        builds_not_run={} if settings.models or settings.groups else {
            c: entry["not_on_siblings"] for c, entry in catalogue.items()
            if entry.get("not_on_siblings") and any(r.claim == c for r in records)},
        baseline=None,
        benchmarks=benchmarks.summarize(settings.report_dir / benchmarks.FILE),
        merged_from=[],
        changes_since_last_run=None,
        shard=settings.shard,
        shards_missing=[],
        claims_selected=None if selected is None else sorted(set(selected)),
        incomplete=list(incomplete),
    )


class ReportIncomplete(RuntimeError):
    """A stage of writing a report failed after results.json was written with every record.

    Attributes:
        folder: the run folder (results.json with the records; report.md and report.html name the failures).
        failures: one line per failed stage: "stage: ExceptionType: message".
    """

    def __init__(self, folder: Path, failures: list[str]):
        super().__init__(f"the report in {folder} is incomplete: " + "; ".join(failures))
        self.folder, self.failures = folder, failures


def _new_results(doc: RunDocument, base: Path) -> Path:
    """A new run folder under ``base`` with the document's results.json in it (``doc.run_id`` set); the folder.

    Raises:
        OSError: where ``base`` cannot take them.
    """
    doc.run_id, folder = _run_folder(base)
    atomic_write_text(folder / "results.json", _json(doc))
    return folder


def _run_folder(base: Path) -> tuple[str, Path]:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        run_id = stamp if n == 0 else f"{stamp}-{n}"
        folder = base / run_id
        try:
            folder.mkdir(parents=True)
            publish_mode(folder, directory=True)
            return run_id, folder
        except FileExistsError:
            continue
    raise RuntimeError(f"could not make a new run folder under {base}")


def _point_latest(base: Path, folder: Path) -> None:
    link, tmp = base / "latest", base / f".latest.{os.getpid()}"
    if link.exists() and not link.is_symlink():
        return  # a real folder of the user's: never replace it
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(folder.name)
    os.replace(tmp, link)


RUN_ID = re.compile(r"\d{8}T\d{6}Z(-\d+)?")  # a run folder's name: its UTC start, -N for a second run that second
OLD_BASE = "reports"  # where run folders went before version 0.4, beside the code of the reports package


def adopt_old_runs(base: Path, project: Path = REPO) -> list[str]:
    """Move run folders that a run before version 0.4 left in the project's ``reports/`` package folder into its
    default ``runs/``, so that the index and --baseline find them; a name ``base`` already has is left where it is.

    Only the project's own default adopts: ``base`` must be ``<project>/runs`` and the old folder
    ``<project>/reports``, the reports package (it holds ``__init__.py``). A user's folder named ``runs`` beside a
    ``reports`` of their own (one that ``python -m reports merge`` wrote, say) is never touched: no folder moves
    between a user's directories (issue 59).

    Args:
        base: the run folders' base folder.
        project: the project's root (the checkout this module is in).
    Returns:
        the run ids moved (the old ``reports/latest`` link and the suite's ``reports/index.html`` and
        ``reports/trends.html`` are removed: they are made again under ``base``).
    """
    old = project / OLD_BASE
    if base.resolve() != (project / "runs").resolve() or not (old / "__init__.py").is_file():
        return []
    moved = []
    for folder in sorted(old.iterdir()):
        if RUN_ID.fullmatch(folder.name) and folder.is_dir() and not folder.is_symlink() and not (base / folder.name).exists():
            base.mkdir(parents=True, exist_ok=True)
            os.replace(folder, base / folder.name)
            moved.append(folder.name)
    if moved:
        if (old / "latest").is_symlink():
            (old / "latest").unlink()
        for page in ("index.html", "trends.html"):
            if history.written_by_suite(old / page):
                (old / page).unlink()
        print(f"latent-claims: moved {len(moved)} earlier run folders from {old}/ to {base}/ (run folders now go to "
              f"{base}/, outside the package's code)", file=sys.stderr)
    return moved


def _incomplete_note(failures: list[str]) -> str:
    return ("REPORT INCOMPLETE: results.json holds every record, but these stages of writing the report failed: "
            + "; ".join(failures))


def _json(doc: RunDocument) -> str:
    """results.json's text: NaN and inf as null, strict JSON."""
    return json.dumps(finite_json(doc.to_json()), indent=1, default=float, allow_nan=False)


def write_doc(doc: RunDocument, base: Path, compare=None) -> Path:
    """Write a results document as a new run folder under ``base``, point ``latest`` at it, update the index
    (after :func:`adopt_old_runs`).

    The records are written first: results.json with the records and the facts known before reporting. Then, each
    a stage of its own, the baseline comparison (``compare``: doc -> the ``baseline`` entry, or None for none),
    the changes since the last run, results.json again with both, report.md, the figures, report.html, the
    ``latest`` link and the index; report.md and report.html are written last. A stage that raises leaves what
    the others wrote; report.md and report.html (a plain note where they could not be rendered) name the failure.

    Where ``base`` cannot take the run folder and its results.json (it was removed or replaced by a file while the
    run went on; the disk is full), the report goes to a new folder under the system's temporary directory, the
    terminal says where, and :class:`ReportIncomplete` names both, so that the run is not green and no record is lost.

    Returns:
        the run folder.
    Raises:
        ReportIncomplete: after writing all it could, when a stage failed or the report went to the fallback folder.
        OSError: when neither ``base`` nor the fallback folder can take results.json (the message names both).
    """
    failures: list[str] = []
    try:
        adopt_old_runs(base)
        folder = _new_results(doc, base)
    except OSError as err:
        fallback = Path(tempfile.mkdtemp(prefix="latent-claims-report-"))
        said = f"{base} could not take the report ({type(err).__name__}: {err})"
        print(f"latent-claims: {said}; writing it to {fallback} instead", file=sys.stderr)
        try:
            base, folder = fallback, _new_results(doc, fallback)
        except OSError as again:
            raise OSError(f"{said}, nor could {fallback} ({type(again).__name__}: {again}): the records of this run "
                          "are lost; free space or fix the folder and run again") from None
        failures.append(f"report folder: {said}; the report is in {folder}")
    run_id, results_file = doc.run_id, folder / "results.json"

    def stage(name: str, work) -> bool:
        try:
            work()
            return True
        except Exception as err:  # noqa: BLE001 - every stage's failure is reported; the records are kept
            failures.append(f"{name}: {type(err).__name__}: {err}")
            return False

    earlier: list[RunDocument] = []
    if compare is not None:
        def compared():
            doc.baseline = compare(doc)
        stage("baseline comparison", compared)

    def since_last_run():
        earlier[:] = history.runs(base, exclude=run_id)  # read once: the previous run and the index come from them
        previous = history.previous_run(earlier, doc.replay)
        skipped = history.interrupted_since(earlier, doc.replay, previous)
        doc.changes_since_last_run = ({"run_id": previous.run_id, "changes": history.changes(previous, doc),
                                       "interrupted_since": skipped} if previous else None)
    read_history = stage("changes since the last run", since_last_run)
    stage("results.json", lambda: atomic_write_text(results_file, _json(doc)))
    drawn: dict = {}
    stage("figures", lambda: drawn.update(render.figures(doc)))
    for name, png in drawn.items():
        if isinstance(png, bytes):
            stage(f"figure {name}", lambda name=name, png=png: atomic_write_bytes(
                confined(folder / "figures", name), png))
    rendered = {}
    stage("report.md", lambda: rendered.update(md=render.markdown(doc)))
    stage("report.html", lambda: rendered.update(html=render.to_html(doc, drawn)))
    stage("latest link", lambda: _point_latest(base, folder))
    if read_history:  # an index of this run alone would drop the earlier runs from it
        stage("index", lambda: history.write_index(base, [*earlier, doc]))
        stage("trends", lambda: trend_page.write_trends(base, [*earlier, doc]))
    if failures:  # written last, so that the note names every stage that failed
        note = _incomplete_note(failures)
        rendered["md"] = f"# latent-claims report\n\n**{note}**\n\n" + rendered.get("md", "")
        rendered["html"] = (f"<!doctype html><meta charset='utf-8'><title>latent-claims report (incomplete)</title>"
                            f"<p><b>{html.escape(note)}</b></p>" + rendered.get("html", ""))
    atomic_write_text(folder / "report.md", rendered["md"])
    atomic_write_text(folder / "report.html", rendered["html"])
    if failures:
        raise ReportIncomplete(folder, failures)
    return folder


def write_run(settings, records: list[ClaimRecord], models: dict, exitstatus: int, peak_rss: float, catalogue: dict,
              gpu_peak: float = 0.0, selected: list[str] | None = None, incomplete: list[str] = ()) -> Path:
    """Write this run's report folder (see :func:`write_doc`), with the ``--baseline`` comparison; return the folder.
    ``selected``, ``incomplete``: as :func:`results`.

    Raises:
        ReportIncomplete: as :func:`write_doc`, results.json holding every record.
    """
    doc = results(settings, records, models, exitstatus, peak_rss, catalogue, gpu_peak, selected, incomplete)
    compare = (lambda d: baseline.compare(settings.baseline, d, settings.baseline_map)) if settings.baseline else None
    return write_doc(doc, settings.report_dir, compare)


def summarize(terminal, records: list[ClaimRecord], folder: Path | None) -> None:
    """Print every claim test's outcome, red ones with their message, and where the report went."""
    if not records:
        return
    terminal.section("latent-claims outcomes")
    for r in sort_records(records):
        head = r.headline
        stat = f"{head.value:.4g} [{head.ci_low:.4g}, {head.ci_high:.4g}] ({head.name})" if head else ""
        line = f"{r.claim:6} {tables.label(r):30} {r.outcome:18} {stat} — {test_name(r)}"
        terminal.write_line(line, red=r.outcome in RED, bold=r.outcome in RED)
        if r.outcome in RED or r.outcome in (NOT_INFORMATIVE, INCONCLUSIVE):
            terminal.write_line(f"       {r.message[:300]}")
    if folder:
        terminal.write_line(f"report: {folder}/report.html (results.json, report.md beside it)")
