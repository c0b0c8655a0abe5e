"""The shipped weights' verdicts, and a local build's verdicts beside them (``--zoo-build local``).

``models/shipped/verdicts.json`` keeps, for every record of a ``make claims`` run on the shipped weights, its
outcome and claim-check statistic (``python -m reports shipped RUN --write`` writes it). A run on this machine's
own trainings of the same recipes (``pytest claims -m gpu --zoo-build local``) is compared with it record by
record, so that a verdict that differs between builds is named ("holds on the shipped weights, fails on this
machine's build") rather than red by surprise.

Only records of the same claim, model, test and procedure version are compared; the ledger's part of an outcome is
left out ("fails as expected" counts as "fails", "holds unexpectedly" as "holds"): the comparison is of what was
measured.

What the file may hold (issue 74, case 4): records on the zoo's models only (a mixed run's records on a user's
folder are left out, named); never an error record over a good one, nor an older procedure version over a newer
one (:func:`combine` keeps the file's and names it); its header's ``machines`` every machine whose records it
holds. A file that exists but cannot be read (a merge-conflict line) is never written over (:func:`read`).
"""

import json
import math
from pathlib import Path

from reports.checks import ERROR, FAILS, FAILS_AS_EXPECTED, HOLDS, HOLDS_UNEXPECTEDLY, ClaimRecord
from reports.document import RunDocument
from reports.records import path_free, record_id

MEASURED = {FAILS_AS_EXPECTED: FAILS, HOLDS_UNEXPECTEDLY: HOLDS}  # an outcome without the ledger's expectation
# The settings of `make claims` on a CPU, which the shipped verdicts and the ledger's whys were measured with
# (``RunDocument.facts``); a verdicts file written since records its own (``settings``), which wins.
SHIPPED_SETTINGS = {"seed": 0, "prompts": [32, 128], "max_prompts": 128, "zoo": "tiny", "dtype": "float32",
                    "source_scale": False}




def headline_numbers(record: ClaimRecord) -> dict:
    """The headline's value and interval as the file keeps them (null where there is none or it is not finite), and
    its sample ``n``, the units its interval was estimated from (null where there is no headline or it has none): a
    change of sample size moves the measurement even where the value barely moves (issue 75)."""
    head = record.headline
    numbers = {k: (v if head is not None and math.isfinite(v := getattr(head, k)) else None)
               for k in ("value", "ci_low", "ci_high")}
    return numbers | {"n": None if head is None or head.n is None else int(head.n)}


def measured(outcome: str) -> str:
    """An outcome as measured, whatever the ledger expected: "fails as expected" → "fails", "holds unexpectedly"
    → "holds"."""
    return MEASURED.get(outcome, outcome)


def snapshot(doc: RunDocument) -> dict:
    """The verdicts file of a run on the shipped weights: its run id, commit and machine, and per record (keyed by
    :func:`reports.records.record_id`, "CLAIM|FUNCTION[PARAMETERS]", no file path) the procedure version, measured
    outcome and claim-check statistic.

    Raises:
        ValueError: for a run that did not test the shipped weights (``zoo_build`` other than "shipped"), or an
            interrupted one. (Settings other than the shipped verdicts' are refused by the writer:
            :func:`settings_differ`.)
    """
    if doc.zoo_build != "shipped":  # every trained zoo model of the run loaded from models/shipped/
        raise ValueError(f"run {doc.run_id} tested zoo build {doc.zoo_build!r}, not the shipped weights "
                         "alone: write the verdicts file from a `make claims` run")
    if doc.incomplete:
        raise ValueError(f"run {doc.run_id} is incomplete ({'; '.join(doc.incomplete)}): its verdicts are not a whole run")
    if doc.interrupted:
        raise ValueError(f"run {doc.run_id} was interrupted: its verdicts are incomplete")
    machines = sorted({(m.get("build") or {}).get("cpu") or (m.get("build") or {}).get("gpu") or ""
                       for m in (doc.models or {}).values() if "error" not in m} - {""})
    records = {record_id(r): {"version": r.version, "outcome": measured(r.outcome), **headline_numbers(r)} for r in doc.records
               if on_the_zoo(r.model)}
    return {"run_id": doc.run_id, "git": doc.git, "machines": machines, "settings": doc.facts(),
            "torch": (doc.versions or {}).get("torch"), "records": records}


def on_the_zoo(model: str) -> bool:
    """Whether a record's model is one of the zoo's (a trained model, its ``:untrained`` twin, a group or a
    reference): not a user's folder, hub id or --group, whose records the shipped verdicts never hold."""
    from models.zoo import TWIN_SUFFIX, ZOO

    return model.removesuffix(TWIN_SUFFIX) in ZOO


def outside_the_zoo(doc: RunDocument) -> list[str]:
    """The record ids (:func:`reports.records.record_id`) of a run's records on models outside the zoo, which
    :func:`snapshot` leaves out."""
    return [record_id(r) for r in doc.records if not on_the_zoo(r.model)]


def combine(before: dict | None, kept: dict, merge: bool) -> tuple[dict, list[str]]:
    """The file to write: ``kept`` (:func:`snapshot`), or with ``merge`` the file ``before`` with ``kept``'s records
    replacing theirs, its header kept and the run named under ``updated_by``.

    Either way a record of the file is not replaced by an error record, nor by an older procedure version: the
    file's stays, and is named in the returned list ("kept the file's ID (holds) over this run's error"). The
    header's ``machines`` are every machine whose records the file holds after a merge (both runs').

    Args:
        before: the file as :func:`read` gives it, or None where there is none.
        kept: the run's :func:`snapshot`.
        merge: a partial run merged into the file.
    Returns:
        (the document to write, one phrase per record of the file kept over the run's).
    """
    old = (before or {}).get("records") or {}
    records, kept_over = dict(kept["records"]), []
    for key, new in kept["records"].items():
        was = old.get(key)
        if was is None:
            continue
        if new["outcome"] == ERROR and was.get("outcome") != ERROR:
            kept_over.append(f"kept the file's {key} ({was.get('outcome')}) over this run's error")
            records[key] = was
        elif new["version"] < was.get("version", 0):
            kept_over.append(f"kept the file's {key} (version {was['version']}) over this run's older version "
                             f"{new['version']}")
            records[key] = was
    if not merge:
        return {**kept, "records": records}, kept_over
    update = {"run_id": kept["run_id"], "git": kept["git"], "machines": kept["machines"],
              "records": sorted(k for k in kept["records"] if records[k] is kept["records"][k])}
    machines = sorted({*before.get("machines", []), *kept["machines"]})
    return {**before, "machines": machines, "records": {**old, **records},
            "updated_by": [*before.get("updated_by", []), update]}, kept_over


def settings_differ(doc: RunDocument, shipped: dict | None) -> list[str]:
    """How a run's settings differ from those the shipped verdicts were measured with: one phrase per setting, e.g.
    "--seed 3 (the shipped verdicts': 0)"; empty where they agree (the corpus compared only where both record it).

    Args:
        doc: the run.
        shipped: :func:`load`'s document (its ``settings``, else ``SHIPPED_SETTINGS``), or None.
    """
    from reports.document import FACTS

    wanted = {**SHIPPED_SETTINGS, **((shipped or {}).get("settings") or {})}
    facts = doc.facts()
    out = []
    for name, value in wanted.items():
        mine = facts.get(name)
        if name == "corpus" and (mine is None or value is None):
            continue
        if (list(mine) if isinstance(mine, tuple) else mine) != value:
            out.append(f"{FACTS[name]} {mine!r} (the shipped verdicts': {value!r})")
    return out


def read(path: Path | None = None) -> dict | None:
    """The shipped verdicts file (``models.shipped.VERDICTS`` unless ``path``), or None where there is none.

    Raises:
        ValueError: for a file that exists but cannot be read, or is not a verdicts file (not JSON, e.g. a
            ``<<<<<<< HEAD`` line of a merge conflict in it; not an object with a ``records`` object), saying so.
    """
    if path is None:
        from models.shipped import VERDICTS  # here, not at import: models.shipped imports torch

        path = VERDICTS
    if not path.exists():
        return None
    try:
        shipped = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot read {path} ({err})") from None
    if not isinstance(shipped, dict) or not isinstance(shipped.get("records"), dict):
        raise ValueError(f"cannot read {path}: not a verdicts file (a JSON object with a 'records' object)")
    shipped["records"] = {path_free(key): kept for key, kept in shipped["records"].items()}
    return shipped


def load(path: Path | None = None) -> dict | None:
    """:func:`read`, or None where the file is absent or cannot be read (the report then says it cannot compare)."""
    try:
        return read(path)
    except ValueError:
        return None


def against_shipped(records: list[ClaimRecord], shipped: dict | None) -> dict | None:
    """A local-build run's records beside the shipped weights' verdicts.

    Args:
        records: the run's records.
        shipped: :func:`load`'s document, or None.
    Returns:
        {"shipped_run": run id, "shipped_git", "compared": n, "differ": [{claim, model, test, shipped, local,
        shipped_value, local_value}], "not_compared": n (another version, or no shipped record)}; without a
        verdicts file, "shipped_run" is None and nothing is compared.
    """
    if shipped is None:
        return {"shipped_run": None, "shipped_git": None, "compared": 0, "differ": [], "not_compared": len(records)}
    differ, compared = [], 0
    for r in records:
        kept = shipped["records"].get(record_id(r))
        if kept is None or kept["version"] != r.version:
            continue
        compared += 1
        if kept["outcome"] != measured(r.outcome):
            differ.append({"claim": r.claim, "model": r.model, "test": r.test, "shipped": kept["outcome"],
                           "local": measured(r.outcome), "shipped_value": kept.get("value"),
                           "local_value": headline_numbers(r)["value"]})
    return {"shipped_run": shipped["run_id"], "shipped_git": shipped["git"], "compared": compared,
            "differ": differ, "not_compared": len(records) - compared}


def lines(comparison: dict) -> list[str]:
    """The report's lines for :func:`against_shipped`'s result: a count, then one line per record that differs."""
    if comparison["shipped_run"] is None:
        return ["NOT COMPARED: there is no models/shipped/verdicts.json (or it cannot be read), so this machine's "
                "builds cannot be set beside the shipped weights' verdicts; restore it with git"]
    out = [f"{len(comparison['differ'])} of {comparison['compared']} records differ between this machine's builds and "
           f"the shipped weights (run {comparison['shipped_run']}, git {comparison['shipped_git']}); "
           f"{comparison['not_compared']} not compared (another procedure version, or not run there)"]
    for d in comparison["differ"]:
        out.append(f"{d['claim']} on {d['model']}: {d['shipped']} on the shipped weights, {d['local']} on this "
                   f"machine's build ({d['test'].rsplit('::', 1)[-1]})")  # the node id shown, not parsed
    return out
