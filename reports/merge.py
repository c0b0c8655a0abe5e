"""Merge run folders made on different machines (one CI job per model or per GPU) into one report.

Each input is a run folder (holding ``results.json``) or a ``results.json``
path. The inputs must agree on what makes their numbers comparable — the
results ``schema``, the ``seed`` (``--seed``), the code version ``git`` (the
commit hash; a ``+dirty`` input is allowed, with a warning), the corpus
(``corpus.sha256``, ``--corpus``) and the ``zoo`` (``--zoo``) — else the merge
is refused and nothing is written.

The merged document: records concatenated (a (claim, model, function, params) record in
two inputs is refused) and sorted as :func:`reports.writer.sort_records` does,
``models`` united, ``peak_rss_mib`` and ``wall_seconds`` the largest,
``interrupted`` when any input was, ``exit_status`` the largest,
``merged_from`` the input run ids, ``created_utc`` now, ``command`` the merge's own,
``versions_off_lock`` united; ``schema`` this version's (the inputs share one, and their
records are read and written by this version); the rest (``seed``, ``zoo``, ``prompts``,
``max_prompts``, ``source_scale``, ``corpus``, ``versions``, ``git``, ``catalogue``,
``device``, ``replay``) taken from the inputs, the first where they differ; the
``replay`` without a shard's ``--shard NAME``, since the shards together are a
whole run. The document is a :class:`reports.document.RunDocument`, as a run's is. With ``--shards``, ``shards_missing`` names each
expected shard that sent no run. It is written through
:func:`reports.writer.write_doc` as a new run folder.
"""

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from models.recipes import PROFILES, seed_builds
from reports import render, shipped_verdicts, writer
from reports.checks import ClaimRecord
from reports.confined import unknown_claims
from reports.replay_words import replay_option, whole_run
from reports.records import add_model_facts, builds_agree, record_key, zoo_build_of
from reports.document import RunDocument
from reports.results_file import SCHEMA, ResultsFileError, read_results

DIRTY = "+dirty"


class MergeError(ValueError):
    """Inputs that cannot be merged: missing, unreadable, not a results.json, or not comparable."""


@dataclass(frozen=True)
class Run:
    """One input: its results document (upgraded to this version's fields), the schema it was written with, and
    where it was read from."""

    path: Path  # the results.json file
    doc: RunDocument
    schema: str  # as the file has it: the inputs of one merge must share it

    @property
    def name(self) -> str:
        """The run as messages name it: its run id and its results.json path."""
        return f"run {self.doc.run_id or '?'} ({self.path})"


@dataclass
class Merged:
    """What :func:`merge_runs` makes: the merged document and the warnings to show the user."""

    doc: RunDocument
    warnings: list[str] = field(default_factory=list)


def load_run(path: str | Path) -> Run:
    """Read one input.

    Args:
        path: a run folder holding ``results.json``, a ``results.json`` file, or a killed run's
            ``journal-*.jsonl`` (``reports.journal.read``: its records, the run marked interrupted).

    Returns:
        the :class:`Run` (its path is the results.json file).

    Raises:
        MergeError: when the path does not exist, a folder has no results.json, the file cannot be read
            or is not JSON, or it is not a latent-claims results document.
    """
    path = Path(path)
    file = path / "results.json" if path.is_dir() else path
    if not path.exists():
        raise MergeError(f"{path}: no such run folder or results.json")
    if not file.is_file():
        raise MergeError(f"{path}: a folder without results.json; pass a run folder (e.g. runs/20261122T031500Z)")
    if file.suffix == ".jsonl":  # a killed run's journal (issue 74, case 6): its records, marked interrupted
        from reports import journal

        try:
            doc = journal.read(file)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise MergeError(f"{file}: not a readable journal ({type(err).__name__}: {err})") from None
        raw = {"schema": doc.schema}
    else:
        try:
            raw = read_results(file)
            doc = RunDocument.from_json(raw)  # an older schema's keys filled in, its records read by this version
        except ResultsFileError as err:
            raise MergeError(f"{file}: {err}") from None
    unknown = unknown_claims(doc.records)
    if unknown:
        raise MergeError(f"{file}: {unknown}")
    return Run(file, doc, raw["schema"])



def _code_version(run: Run) -> str:
    return str(run.doc.git).removesuffix(DIRTY)


# (field as results.json names it, the option or meaning that sets it, how two values are compared)
CHECKS = (
    ("schema", "results format", lambda r: r.schema),
    ("seed", "--seed", lambda r: r.doc.seed),
    ("git", "code version: commit hash, '+dirty' ignored", _code_version),
    ("corpus.sha256", "--corpus", lambda r: (r.doc.corpus or {}).get("sha256")),
    ("zoo", "--zoo", lambda r: r.doc.zoo),
    ("prompt batch", "--prompts", lambda r: r.doc.prompts),
    ("max_prompts", "--max-prompts", lambda r: r.doc.max_prompts),
    ("device.dtype", "--dtype", lambda r: (r.doc.device or {}).get("dtype")),
    ("source_scale", "--source-scale", lambda r: r.doc.source_scale),
    # they change verdicts, not measurements: one report must judge every record by the same rules (issue 67, case 4)
    ("--inconclusive", "--inconclusive (an inconclusive record red or green)",
     lambda r: replay_option(r, "--inconclusive", "skip")),
    ("--ledger", "--ledger (the expected verdicts)", lambda r: replay_option(r, "--ledger")),
)


def check_comparable(runs: list[Run]) -> list[str]:
    """Check that the runs measured the same thing, so that their records can share one report.

    Args:
        runs: the inputs, at least one.

    Returns:
        warnings for the user (runs made from a checkout with uncommitted changes).

    Raises:
        MergeError: naming the field and its option, the two values and the two runs, when ``schema``,
            ``seed``, ``git`` (without "+dirty"), ``corpus.sha256``, ``zoo`` or ``device.dtype`` differ; or when one
            results.json is given twice.
    """
    seen: dict[Path, Run] = {}
    for run in runs:
        key = run.path.resolve()
        if key in seen:
            raise MergeError(f"{run.name} is given twice (also as {seen[key].path}); pass each run folder once "
                             "(not a run folder and the 'latest' link to it)")
        seen[key] = run
    first = runs[0]
    for run in runs[1:]:
        for name, meaning, value in CHECKS:
            a, b = value(first), value(run)
            if a != b and not (name == "source_scale" and None in (a, b)):  # None: a run before it was recorded
                shown = (first.doc.git, run.doc.git) if name == "git" else (a, b)
                what = meaning if meaning.startswith(name) else f"{name} ({meaning})"  # an option names itself once
                raise MergeError(f"cannot merge: {what} differs: {shown[0]!r} in {first.name}, "
                                 f"{shown[1]!r} in {run.name}; the runs of one report must share "
                                 f"{', '.join(n for n, _, _ in CHECKS)}: run them again with the same options")
    return [f"warning: {run.name} was made from code with uncommitted changes (git {run.doc.git}); "
            "the merged report cannot be replayed from a commit"
            for run in runs if str(run.doc.git or "").endswith(DIRTY)]


def _merge_baselines(runs: list[Run], records: list[ClaimRecord]) -> dict | None:
    cmps = [r.doc.baseline for r in runs if r.doc.baseline]
    if not cmps:
        return None
    tests = {r.test for r in records}

    def joined(key):
        return "; ".join(dict.fromkeys(str(c.get(key)) for c in cmps))

    def concat(key):
        return [item for c in cmps for item in c.get(key) or []]

    return {"baseline": joined("baseline"), "baseline_run_id": joined("baseline_run_id"),
            "differences": list(dict.fromkeys(concat("differences"))), "models": concat("models"),
            "retrained_in_place": concat("retrained_in_place"),
            "reconfigured_in_place": concat("reconfigured_in_place"), "measured_changes": concat("measured_changes"),
            "ledger_changes": concat("ledger_changes"),
            "verdict_changes": concat("verdict_changes"), "method_changed": concat("method_changed"),
            "moved": concat("moved"), "new": list(dict.fromkeys(concat("new"))),
            # a test one shard did not run may have run in another shard
            "missing": [t for t in dict.fromkeys(concat("missing")) if t not in tests]}




def merge_runs(runs: list[Run], shards: list[str] | None = None) -> Merged:
    """Merge results documents into one (its ``run_id`` left None for the writer to set).

    Args:
        runs: the inputs, at least one, as :func:`load_run` returns them.
        shards: the subjects that should each have sent a run (``pytest --list-shards``); those with neither a run
            made for them (``--shard``) nor records of their own in the inputs (a run made with ``--model``) are
            named in ``shards_missing`` and in a warning. None: not checked.

    Returns:
        :class:`Merged`: the document and warnings (uncommitted changes, differing package versions).

    Raises:
        MergeError: for no inputs, inputs that are not comparable (see :func:`check_comparable`), or a
            (claim, model, function, params) record present in two inputs (naming both runs).
    """
    if not runs:
        raise MergeError("nothing to merge: pass at least one run folder")
    warnings = check_comparable(runs)
    owner: dict[tuple, Run] = {}
    records: list[ClaimRecord] = []
    for run in runs:
        for r in run.doc.records:
            key = record_key(r)
            if key in owner:
                raise MergeError(f"cannot merge: duplicate record (claim, model, function, params) = ({', '.join(key)}) in "
                                 f"{owner[key].name} and in {run.name}; each claim test on a model must come "
                                 "from one run (one shard per model)")
            owner[key] = run
            records.append(r)
    first = runs[0].doc
    for run in runs[1:]:
        if run.doc.versions != first.versions:
            differ = sorted(k for k in {*(first.versions or {}), *(run.doc.versions or {})}
                            if (first.versions or {}).get(k) != (run.doc.versions or {}).get(k))
            warnings.append(f"warning: package versions differ between {runs[0].name} and {run.name}: "
                            f"{', '.join(differ)}; the report shows the first's")
    models: dict = {}
    catalogue: dict = {}
    for run in runs:
        add_model_facts(models, run.doc.models or {})
        for claim_id, entry in (run.doc.catalogue or {}).items():
            catalogue.setdefault(claim_id, entry)
    git = first.git
    if any(str(r.doc.git or "").endswith(DIRTY) for r in runs) and not str(git).endswith(DIRTY):
        git = f"{git}{DIRTY}"
    # a shard reported where a run was made for it (--shard NAME) or holds records of it (a run made with --model NAME)
    reported = {r.doc.shard for r in runs} | {rec.model for r in runs for rec in r.doc.records}
    missing = [s for s in shards if s not in reported] if shards is not None else []
    doc = RunDocument(
        schema=SCHEMA,  # the inputs share theirs (check_comparable); their records are read and written by this version
        run_id=None,
        created_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=["python", "-m", "reports", "merge", *(str(r.path) for r in runs)],
        replay=whole_run(runs),
        interrupted=any(bool(r.doc.interrupted) for r in runs),
        # an incomplete merge must not pass for a complete one
        exit_status=max([int(r.doc.exit_status or 0) for r in runs] + [1 if missing else 0]),
        seed=first.seed,
        zoo=first.zoo,
        zoo_build=zoo_build_of(models),
        against_shipped=(shipped_verdicts.against_shipped(records, shipped_verdicts.load())
                         if zoo_build_of(models) in ("local", "mixed") and first.zoo == "tiny" else None),
        prompts=first.prompts,
        max_prompts=first.max_prompts,
        source_scale=first.source_scale,
        corpus=first.corpus,
        versions=first.versions,
        versions_off_lock=list(dict.fromkeys(v for r in runs for v in r.doc.versions_off_lock or [])),
        git=git,
        device=first.device,
        wall_seconds=max(float(r.doc.wall_seconds or 0.0) for r in runs),
        peak_rss_mib=max(float(r.doc.peak_rss_mib or 0.0) for r in runs),
        models=models,
        catalogue=catalogue,
        user_groups={k: v for r in runs for k, v in (r.doc.user_groups or {}).items()},
        records=writer.sort_records(records),
        builds_agree=builds_agree(records, seed_builds(first.zoo) if first.zoo in PROFILES else {}),
        builds_not_run={k: v for r in runs for k, v in (r.doc.builds_not_run or {}).items()},
        baseline=_merge_baselines(runs, records),
        benchmarks=next((r.doc.benchmarks for r in runs if r.doc.benchmarks), None),
        merged_from=[r.doc.run_id for r in runs],
        changes_since_last_run=None,
        shard=None,
        shards_missing=missing,
        claims_selected=(None if any(r.doc.claims_selected is None for r in runs)
                         else sorted({c for r in runs for c in r.doc.claims_selected})),
        incomplete=list(dict.fromkeys(reason for r in runs for reason in r.doc.incomplete)),
    )
    warnings += [f"warning: shard {s} did not report (no run folder with --shard {s})" for s in missing]
    return Merged(doc, warnings)


def merge(inputs: list[str | Path], report_dir: str | Path = "runs",
          shards: list[str] | None = None) -> tuple[Path, list[str]]:
    """Merge run folders into a new run folder under ``report_dir``.

    Args:
        inputs: run folders or results.json files, at least one.
        report_dir: the base folder of run folders; the new folder is made there, ``latest`` is pointed
            at it and ``index.html`` updated (:func:`reports.writer.write_doc`).
        shards: the shards expected to report (see :func:`merge_runs`), or None.

    Returns:
        (the new run folder, warnings for the user).

    Raises:
        MergeError: for a missing or unreadable input, inputs that are not comparable, a duplicate record,
            records the report cannot show, or a ``report_dir`` inside an input run's folder; nothing is written then.
        OSError: when the report folder cannot be written.
    """
    base = Path(report_dir).resolve()
    for p in inputs:
        run = Path(p).resolve()
        run = run.parent if run.name == "results.json" else run  # a run's results.json names its run folder
        if run.is_dir() and (base == run or run in base.parents):
            raise MergeError(f"--report-dir {report_dir} is inside the input run {p}: the merged run would be written "
                             "into a run folder; give a base folder of run folders, e.g. runs/ (the default)")
    merged = merge_runs([load_run(p) for p in inputs], shards)
    try:  # render once before writing, so that a malformed input leaves no half-written folder
        render.markdown(replace(merged.doc, run_id="check"))
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise MergeError(f"cannot merge: the inputs' records or facts cannot be rendered "
                         f"({type(err).__name__}: {err})") from None
    return writer.write_doc(merged.doc, Path(report_dir)), merged.warnings
