"""Comparison of a run with an earlier results.json (``--baseline PATH``)."""

import json
from pathlib import Path


def _index(records: list[dict]) -> dict[tuple, dict]:
    return {(r["claim"], r["model"], r["test"]): r for r in records}


def compare(baseline_path: Path, records: list[dict]) -> dict:
    """What changed since the baseline run.

    A statistic "moved beyond its tolerance" when the change in value exceeds
    the sum of the two runs' interval half-widths (so exact statistics, whose
    interval is a point, flag any change). Where a claim test's procedure
    version changed, its numbers are not compared: the method changed.

    Args:
        baseline_path: an earlier run's results.json.
        records: this run's records, as in results.json.
    Returns:
        {"baseline": path, "baseline_run_id", "verdict_changes": [...] (outcome changes),
         "method_changed": [...], "moved": [...], "new": [...], "missing": [...]}
    Raises:
        ValueError: if the file is not a latent-claims results.json.
    """
    try:
        old = json.loads(Path(baseline_path).read_text(encoding="utf-8"))
        old_records = _index(old["records"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"--baseline {baseline_path} is not a latent-claims results.json ({err})") from None
    new_records = _index(records)
    out = {"baseline": str(baseline_path), "baseline_run_id": old.get("run_id"), "verdict_changes": [],
           "method_changed": [], "moved": [], "new": sorted(k[2] for k in new_records.keys() - old_records.keys()),
           "missing": sorted(k[2] for k in old_records.keys() - new_records.keys())}
    for key in sorted(new_records.keys() & old_records.keys()):
        new, was = new_records[key], old_records[key]
        if new.get("outcome") != was.get("outcome"):
            out["verdict_changes"].append({"claim": key[0], "model": key[1], "test": key[2],
                                           "was": was.get("outcome"), "now": new.get("outcome")})
        if new.get("version") != was.get("version"):
            out["method_changed"].append({"claim": key[0], "model": key[1], "test": key[2],
                                          "was": was.get("version"), "now": new.get("version")})
            continue
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
