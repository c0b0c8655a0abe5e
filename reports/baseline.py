"""Comparison of a run with an earlier results.json (``--baseline PATH``, ``--baseline-map OLD=NEW``).

Records are paired by (claim, model, test). After a model upgrade the new checkpoint usually has a new name (a new
folder): ``--baseline-map OLD_NAME=NEW_NAME`` pairs the old model's records with the new model's, its name
replaced in the test id too. Each pair of models is described by both weight digests, and a model whose name is
the same but whose weights are not is flagged on its own ("retrained in place").

Changes are sorted by what caused them:

- ``measured_changes``: a check's status (passed / failed / inconclusive; a control's too) changed, or the outcome
  changed with the ledger's expectation the same (an error that came or went): the weights, the library or the
  machine now give another measurement.
- ``ledger_changes``: the outcome changed, every check's status is the same, and the ledger's expectation
  changed (e.g. "fails" became "fails as expected").
- ``method_changed``: the claim test's procedure version changed: its numbers are not compared.
- ``moved``: a statistic changed by more than the two runs' interval half-widths together.

A baseline made with another seed, prompt batch, dtype, zoo or corpus is compared all the same, but
``differences`` names what differs and the report says so first.
"""

import json
from pathlib import Path

from reports.document import FACTS, RunDocument
from reports.records import record_key
from reports.checks import Check



def parse_map(pairs: list[str]) -> dict[str, str]:
    """``["OLD=NEW", ...]`` as {old: new}.

    Raises:
        ValueError: for an item without "=" or with an empty side, or an old name mapped twice.
    """
    out: dict[str, str] = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            raise ValueError(f"--baseline-map {pair!r}: write OLD_NAME=NEW_NAME (the model's name in the baseline, "
                             "then in this run)")
        if old in out:
            raise ValueError(f"--baseline-map names {old!r} twice")
        out[old] = new
    return out


def _status(check: dict) -> str:
    """A check's status as this version decides it, from its interval, threshold, n and interval method: before
    schema 6 a control whose interval straddled its threshold was stored as "failed", now "inconclusive"; before
    schema 8 a bootstrap from fewer than 16 units or of zero width decided, now it does not; a baseline must not
    call either a change of measurement."""
    try:
        return Check(check["name"], check["value"], check["ci_low"], check["ci_high"], check["unit"],
                     check["comparison"], check["threshold"], "", check["role"], n=check.get("n"),
                     interval=check.get("interval")).status
    except (KeyError, TypeError):  # a check without its interval or threshold (a NaN stored as null): as stored
        return check["status"]


def _outcome(record: dict) -> str:
    """A record's outcome as this version would decide it from the same checks: a "control failed" whose controls
    all straddled (before schema 6) is "inconclusive" now."""
    controls = [_status(c) for c in record["checks"] if c["role"] == "control"]
    if record["outcome"] == "control failed" and controls and "failed" not in controls:
        return "inconclusive"
    return record["outcome"]


def _statuses(record: dict) -> dict[str, str]:
    """Every check's status by name, the controls' marked "(control)": what was measured, whatever the ledger."""
    return {c["name"] + (" (control)" if c["role"] == "control" else ""): _status(c) for c in record["checks"]}


def _facts(doc: dict) -> dict:
    """The comparison facts of any readable results document (``RunDocument.facts``; None where not recorded)."""
    return RunDocument.from_json(doc).facts()


def compare(baseline_path: Path, records: list[dict], models: dict | None = None, facts: dict | None = None,
            mapping: dict[str, str] | None = None) -> dict:
    """What changed since the baseline run.

    Args:
        baseline_path: an earlier run's results.json.
        records: this run's records, as in results.json.
        models: this run's ``models`` (name -> facts with ``weights_sha256``), or None.
        facts: this run's document (its seed, prompts, zoo, corpus, device), or None not to compare them.
        mapping: {old model name: new model name} (``--baseline-map``); unmapped names pair with themselves.
    Returns:
        {"baseline", "baseline_run_id", "differences": [...], "models": [{old, new, old_weights_sha256,
         new_weights_sha256, same_weights}], "retrained_in_place": [...], "measured_changes": [...],
         "ledger_changes": [...], "verdict_changes": [...] (every outcome change), "method_changed": [...],
         "moved": [...], "new": [...], "missing": [...]}.
    Raises:
        ValueError: if the file is not a latent-claims results.json.
    """
    mapping = mapping or {}
    try:
        old = json.loads(Path(baseline_path).read_text(encoding="utf-8"))
        old_records = {}
        for r in old["records"]:
            old_records[record_key({**r, "model": mapping.get(r["model"], r["model"])})] = r
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"--baseline {baseline_path} is not a latent-claims results.json ({err})") from None
    new_records = {record_key(r): r for r in records}
    out = {"baseline": str(baseline_path), "baseline_run_id": old.get("run_id"), "differences": [], "models": [],
           "retrained_in_place": [], "measured_changes": [], "ledger_changes": [], "verdict_changes": [],
           "method_changed": [], "moved": [],
           "new": sorted(new_records[k]["test"] for k in new_records.keys() - old_records.keys()),
           "missing": sorted(old_records[k]["test"] for k in old_records.keys() - new_records.keys())}
    if facts is not None:
        was, now = _facts(old), _facts(facts)
        out["differences"] = [f"{FACTS[k]}: {was[k]!r} in the baseline, {now[k]!r} here" for k in FACTS
                              if was[k] is not None and was[k] != now[k]]  # None: an older run did not record it
    old_models, models = old.get("models") or {}, models or {}
    for was_name, now_name in sorted((o, mapping.get(o, o)) for o in old_models if mapping.get(o, o) in models):
        a = (old_models.get(was_name) or {}).get("weights_sha256")
        b = (models.get(now_name) or {}).get("weights_sha256")
        pair = {"old": was_name, "new": now_name, "old_weights_sha256": a, "new_weights_sha256": b,
                "same_weights": None if not (a and b) else a == b}
        out["models"].append(pair)
        if was_name == now_name and pair["same_weights"] is False:
            out["retrained_in_place"].append(pair)
    for key in sorted(new_records.keys() & old_records.keys()):
        new, was = new_records[key], old_records[key]
        where = {"claim": key[0], "model": key[1], "test": new["test"]}
        if new.get("outcome") != was.get("outcome"):
            change = {**where, "was": was.get("outcome"), "now": new.get("outcome")}
            out["verdict_changes"].append(change)
        if new.get("version") != was.get("version"):
            out["method_changed"].append({**where, "was": was.get("version"), "now": new.get("version")})
            continue
        before, after = _statuses(was), _statuses(new)
        if before == after and new["outcome"] != was["outcome"] and new["expected"] != was["expected"]:
            out["ledger_changes"].append({**where, "was": was["outcome"], "now": new["outcome"],
                                          "expected_was": was["expected"], "expected_now": new["expected"]})
        elif before != after or _outcome(new) != _outcome(was):  # a check, or an error that has none
            out["measured_changes"].append({**where, "was": before, "now": after, "outcome_was": was["outcome"],
                                            "outcome_now": new["outcome"]})
        old_checks = {c["name"]: c for c in was["checks"]}
        for check in new["checks"]:
            prior = old_checks.get(check["name"])
            if prior is None or None in (prior["value"], check["value"], prior["ci_low"], prior["ci_high"],
                                         check["ci_low"], check["ci_high"]):
                continue  # a NaN (stored as null) is an error of its run, not a movement
            tolerance = (prior["ci_high"] - prior["ci_low"]) / 2 + (check["ci_high"] - check["ci_low"]) / 2
            if abs(check["value"] - prior["value"]) > tolerance:
                out["moved"].append({"claim": key[0], "model": key[1], "check": check["name"],
                                     "was": prior["value"], "now": check["value"], "tolerance": tolerance})
    return out
