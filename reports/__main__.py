"""``python -m reports merge DIR... [--report-dir OUT]``: merge run folders made on several machines into one report.
``python -m reports ledger RUN [--write]``: write the measured part of each ledger why from a run's records.
``python -m reports journal FILE [--report-dir OUT]``: render the journal a killed run left (its records as they were
made) as a run folder, marked interrupted.
``python -m reports shipped RUN [--write]``: keep a run's verdicts on the shipped weights in models/shipped/verdicts.json
(what ``--zoo-build local`` runs are compared with).
``python -m reports trends RUNS_DIR [--out FILE] [--last K]``: write the trends page of a folder of run folders (each
record's deciding statistic run by run, the records drifting toward their threshold; default RUNS_DIR/trends.html).

Each DIR is a run folder (``<report dir>/<run id>/``, holding results.json) or
a results.json file, e.g. one per CI job when the claims are sharded by model
or GPU. The runs must share the results schema, ``--seed``, the code version
(git commit), ``--corpus`` and ``--zoo``; otherwise nothing is written and the
exit status is 2. The merged report is a new run folder under OUT (default
``runs``): results.json, report.md, report.html; ``OUT/latest`` points at
it and ``OUT/index.html`` lists it.
"""

import argparse
import json
import sys
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m reports``.

    Returns:
        the parser, with five subcommands, ``merge``, ``ledger``, ``shipped``, ``journal`` and ``trends``.
    """
    parser = argparse.ArgumentParser(prog="python -m reports", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="{merge,ledger,shipped,journal,trends}")
    m = commands.add_parser("merge", help="merge run folders made on different machines into one report",
                            description="Merge run folders (or results.json files) into one report, written as "
                                        "a new run folder under --report-dir.")
    m.add_argument("runs", nargs="+", metavar="DIR", help="a run folder holding results.json, or a results.json file")
    m.add_argument("--report-dir", default="runs", metavar="OUT",
                   help="folder under which the merged run folder and the 'latest' link are written (default: runs)")
    m.add_argument("--shards", metavar="FILE",
                   help="a JSON list of the shards that should have reported (pytest --list-shards FILE): the "
                        "merged report names each one without a run folder")
    led = _from_a_run(commands, "ledger", "write the measured part of each ledger why from a run's records",
                      "For each ledger entry the run measured (same claim, version, model, weights) and found failing "
                      "as expected, write the 'Measured on weights ...' part of its why from the record; list the "
                      "entries that must be measured again. Prints what it would change unless --write.",
                      "rewrite the ledger file in place (atomically)")
    led.add_argument("--ledger", default="claims/expected_verdicts.toml", metavar="FILE",
                     help="the ledger to refresh (default: claims/expected_verdicts.toml)")
    ship = _from_a_run(commands, "shipped", "keep a run's verdicts on the shipped weights (models/shipped/verdicts.json)",
                       "From a whole `make claims` run on the shipped weights, write the outcome and claim-check "
                       "statistic of every record to models/shipped/verdicts.json, which --zoo-build local runs are "
                       "compared with. A run that lacks records of the file is refused unless --merge. Prints a "
                       "summary unless --write.", "write models/shipped/verdicts.json (atomically)")
    ship.add_argument("--merge", action="store_true",
                      help="a partial run: replace only its own records in the file and keep the others")
    j = commands.add_parser("journal", help="render the journal of a run that was killed as a report",
                            description="A run appends each record to OUT/journal-*.jsonl as it is made and removes "
                                        "the file once its report is written; a run killed before that (SIGKILL, the "
                                        "OOM killer) leaves it. Render it as a new run folder under --report-dir, "
                                        "marked interrupted.")
    j.add_argument("journal", metavar="FILE", help="a journal-*.jsonl file a run left in its report folder")
    j.add_argument("--report-dir", default=None, metavar="OUT",
                   help="folder under which the run folder is written (default: the journal's own folder)")
    t = commands.add_parser("trends", help="write the trends page of a folder of run folders",
                            description="Plot each record's deciding statistic (interval, threshold, outcome) over the "
                                        "complete runs of each replay command under RUNS_DIR (a report folder, a "
                                        "checkout of the nightly-history branch), with the records whose margin shrank "
                                        "at each of the last K runs and those that flipped.")
    t.add_argument("runs_dir", metavar="RUNS_DIR", help="a folder of run folders (<run id>/results.json)")
    t.add_argument("--out", metavar="FILE", help="the page to write (default: RUNS_DIR/trends.html, or "
                                                 "RUNS_DIR/latent-claims-trends.html beside a trends.html of your own)")
    t.add_argument("--last", type=int, default=None, metavar="K",
                   help="the runs the summary looks back over (default: 5; at least 3)")
    return parser


def render_trends(runs_dir: str, out: str | None, last: int | None) -> int:
    """``python -m reports trends``: write the trends page (``reports.trend_page.write_trends``); print its path.

    Returns:
        0; 2 when RUNS_DIR is not a folder, --last is below 3, or the page cannot be written.
    """
    from reports.trend_page import write_trends
    from reports.trends import LAST

    base = Path(runs_dir)
    if not base.is_dir():
        print(f"error: {runs_dir}: not a folder of run folders", file=sys.stderr)
        return 2
    if last is not None and last < 3:
        print(f"error: --last {last}: a drift needs at least 3 runs", file=sys.stderr)
        return 2
    try:
        page = write_trends(base, out=Path(out) if out else None, last=last or LAST)
    except OSError as err:
        print(f"error: cannot write the trends page: {err}", file=sys.stderr)
        return 2
    print(page)
    return 0


def render_journal(path: str, report_dir: str | None) -> int:
    """``python -m reports journal``: write a run folder from a journal (``reports.journal.read``); print it.

    Returns:
        0, 1 when a stage of the report failed (results.json holds every record), 2 when the journal cannot be read,
        is of another schema, or was rendered under the same base folder before.
    """
    from reports import journal, writer

    try:
        doc = journal.read(Path(path))
    except (OSError, ValueError) as err:  # the message names the file (and the line)
        print(f"error: {err}" if str(path) in str(err) else f"error: {path}: {err}", file=sys.stderr)
        return 2
    base = Path(report_dir) if report_dir else Path(path).parent
    earlier = journal.rendered_as(Path(path), base)
    if earlier is not None:
        print(f"error: {path} was already rendered as {earlier}; nothing written (remove that folder to render it "
              "again)", file=sys.stderr)
        return 2
    try:
        folder = writer.write_doc(doc, base)
    except writer.ReportIncomplete as err:
        print(f"error: {err}", file=sys.stderr)
        print(err.folder)
        return 1
    except OSError as err:
        print(f"error: cannot write the report under {report_dir or Path(path).parent}: {err}", file=sys.stderr)
        return 2
    print(folder)
    return 0


def _from_a_run(commands, name: str, summary: str, description: str, writes: str) -> argparse.ArgumentParser:
    """A subcommand that reads one run (RUN) and writes a file only with --write."""
    sub = commands.add_parser(name, help=summary, description=description)
    sub.add_argument("run", metavar="RUN", help="a run folder holding results.json, or a results.json file")
    sub.add_argument("--write", action="store_true", help=writes)
    return sub


def _results_of(run: str):
    """The results document (``RunDocument``) of RUN: a run folder holding results.json, or the file
    (``read_results``' errors)."""
    from reports.document import RunDocument
    from reports.results_file import read_results

    folder = Path(run)
    return RunDocument.from_json(read_results(folder / "results.json" if folder.is_dir() else folder))


def keep_shipped_verdicts(run: str, write: bool, merge: bool = False) -> int:
    """``python -m reports shipped``: the run's verdicts file; with ``write``, kept in models/shipped/.

    Args:
        run: a run folder holding results.json, or the file.
        write: write models/shipped/verdicts.json.
        merge: a partial run: its records replace theirs in the file, the file's others stay. Without it, a run
            that lacks records the file has is refused (a one-claim run once replaced 343 records with 1).
    Returns:
        the exit status: 0, or 2 when the run cannot be read, did not test the shipped weights, or lacks records
        of the file without ``merge``.
    """
    from models.atomic_files import atomic_write_text
    from models.shipped import VERDICTS
    from reports.results_file import ResultsFileError
    from reports.shipped_verdicts import combine, outside_the_zoo, read, settings_differ, snapshot

    try:
        doc = _results_of(run)
        kept = snapshot(doc)
    except (ResultsFileError, ValueError, KeyError, TypeError) as err:  # KeyError/TypeError: a damaged document
        print(f"error: {run}: {err!r}" if isinstance(err, (KeyError, TypeError)) else f"error: {run}: {err}",
              file=sys.stderr)
        return 2
    print(f"{len(kept['records'])} records of run {kept['run_id']} (git {kept['git']}, {', '.join(kept['machines'])})")
    outside = outside_the_zoo(doc)
    if outside:
        print(f"note: left out {len(outside)} record{'s' if len(outside) > 1 else ''} on models that are not the "
              f"zoo's (e.g. {outside[0]}): the shipped verdicts hold the zoo's alone", file=sys.stderr)
    try:
        before = read()
    except ValueError as err:  # never read as empty, and never written over
        print(f"{'error' if write else 'warning'}: {err}; " + ("nothing written: " if write else "--write would "
              "refuse it: ") + "restore it (git checkout -- models/shipped/verdicts.json, or resolve the merge "
              "conflict) first", file=sys.stderr)
        return 2 if write else 0
    differ = settings_differ(doc, before)
    if differ:
        print(f"{'error' if write else 'note'}: run {kept['run_id']} was made with other settings than the shipped "
              f"verdicts: {'; '.join(differ)}; " + ("nothing written: run `make claims` (or the claims again with the "
              "shipped settings) and keep that run" if write else "--write would refuse it"), file=sys.stderr)
        if write:
            return 2
    before_records = (before or {}).get("records") or {}
    lacking = sorted(before_records.keys() - kept["records"].keys())
    if lacking and not merge:
        print(f"{'error' if write else 'note'}: run {kept['run_id']} lacks {len(lacking)} of the "
              f"{len(before_records)} records of {VERDICTS} (e.g. {', '.join(lacking[:3])}): "
              + ("write it from a whole `make claims` run, or pass --merge to replace only this run's records"
                 if write else "--write would refuse it; --merge --write would replace only this run's records"),
              file=sys.stderr)
        if write:
            return 2
    kept, kept_over = combine(before, kept, merge=merge and before is not None)
    for phrase in kept_over:
        print(f"{'note' if merge or not write else 'error'}: {phrase}", file=sys.stderr)
    if kept_over and not merge:
        print(("error: nothing written" if write else "note: --write would refuse it") + ": measure those records "
              "again, or pass --merge to keep the file's", file=sys.stderr)
        return 2 if write else 0
    if write:
        try:
            atomic_write_text(VERDICTS, json.dumps(kept, indent=1, sort_keys=True) + "\n")
        except OSError as err:
            print(f"error: cannot write {VERDICTS}: {err}", file=sys.stderr)
            return 2
        print(f"written: {VERDICTS}")
    return 0


def expected_shards(path: str | None) -> list[str] | None:
    """The --shards FILE list, or None without it.

    Raises:
        MergeError: for a file that cannot be read or is not a JSON list of names.
    """
    from reports.merge import MergeError

    if path is None:
        return None
    try:
        shards = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise MergeError(f"--shards {path}: cannot be read as JSON ({err}); write it with pytest --list-shards") from None
    if not (isinstance(shards, list) and all(isinstance(s, str) for s in shards)):
        raise MergeError(f"--shards {path}: not a JSON list of names; write it with pytest --list-shards")
    return shards


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: the arguments after ``python -m reports``; None for ``sys.argv[1:]``.

    Returns:
        the exit status: 0 when the merged report was written, 1 when it was written but a shard of --shards did
        not report or a stage of the report failed (results.json holds every record), 2 when an input is missing or unreadable, the inputs cannot be merged, or the report cannot be
        written (argparse also exits 2 on bad usage).
    """
    args = build_parser().parse_args(argv)
    if args.command == "ledger":
        from reports.ledger_file import refresh_ledger

        return refresh_ledger(args.run, args.ledger, args.write)
    if args.command == "shipped":
        return keep_shipped_verdicts(args.run, args.write, args.merge)
    if args.command == "journal":
        return render_journal(args.journal, args.report_dir)
    if args.command == "trends":
        return render_trends(args.runs_dir, args.out, args.last)
    from reports.merge import MergeError, merge  # after parsing: --help need not import torch
    from reports.writer import ReportIncomplete

    try:
        folder, warnings = merge(args.runs, args.report_dir, expected_shards(args.shards))
    except ReportIncomplete as err:  # the merged results.json holds every record; the report names what failed
        print(f"error: {err}", file=sys.stderr)
        print(err.folder)
        return 1
    except MergeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"error: cannot write the merged report under {args.report_dir}: {err}", file=sys.stderr)
        return 2
    for warning in warnings:
        print(warning, file=sys.stderr)
    print(folder)
    missing = json.loads((folder / "results.json").read_text())["shards_missing"]
    if missing:
        print(f"error: the merged report is incomplete: {len(missing)} of the --shards did not report "
              f"({', '.join(missing)}); it was written all the same, with exit_status 1", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
