"""Comparison of a run with an earlier results.json (``--baseline PATH``, ``--baseline-map OLD=NEW``).

Records are paired by (claim, model, test). After a model upgrade the new checkpoint usually has a new name (a new
folder): ``--baseline-map OLD_NAME=NEW_NAME`` pairs the old model's records with the new model's, its name
replaced in the test id too. Each pair of models is described by both weight digests and both config digests, and
a model whose name is the same but whose weights are not is flagged on its own ("retrained in place"), as is one whose
weights are the same but whose config is not ("reconfigured in place": a config.json edited under the weights).

Changes are sorted by what caused them:

- ``measured_changes``: a check's status (passed / failed / inconclusive; a control's too) changed, or the outcome
  changed with the ledger's expectation the same (an error that came or went): the weights, the config, the library
  or the machine now give another measurement (the models' pairs say whether weights or config changed).
- ``ledger_changes``: the outcome changed, every check's status is the same, and the ledger's expectation
  changed (e.g. "fails" became "fails as expected").
- ``method_changed``: the claim test's procedure version changed: its numbers are not compared.
- ``moved``: a statistic changed by more than the two runs' interval half-widths together, and by more than float
  noise (``FLOAT_NOISE`` of its size): an exact statistic (a zero-width interval) that differs in its seventh digit
  has not moved.

A baseline made with another seed, prompt batch, dtype, zoo or corpus is compared all the same, but
``differences`` names what differs and the report says so first.
"""

import json
from pathlib import Path

from reports.checks import CONTROL_FAILED, ERROR, FAILED, INCONCLUSIVE, ClaimRecord
from reports.document import FACTS, RunDocument
from reports.records import record_key

FLOAT_NOISE = 1e-5  # relative: float32 rounds at 6e-8, sums over a batch and another machine's kernels add a little


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


def _outcome(record: ClaimRecord) -> str:
    """A record's outcome as this version would decide it from the same checks: a "control failed" whose controls
    all straddled (before schema 6) is "inconclusive" now."""
    controls = [c.status for c in record.checks if c.role == "control"]
    if record.outcome == CONTROL_FAILED and controls and FAILED not in controls:
        return INCONCLUSIVE
    return record.outcome


def _statuses(record: ClaimRecord) -> dict[str, str]:
    """Every check's status by name, the controls' marked "(control)" and the readings' "(reading)": what was measured, whatever the ledger. A
    baseline's checks are read by this version (``ClaimRecord.from_json``), so their statuses follow today's rules:
    before schema 6 a control whose interval straddled was stored as "failed", before schema 8 a bootstrap from
    fewer than 16 units or of zero width decided; neither is a change of measurement."""
    return {c.name + (f" ({c.role})" if c.role != "claim" else ""): c.status for c in record.checks}


def _statuses_by_key(record: ClaimRecord) -> dict[str, str]:
    """Every keyed check's status by its key (``Check.key``) as it reads now (a baseline's former key read through
    its row's ``was``, issue 79, item 2); {} for a record made before keys."""
    return {_now(c.key): c.status for c in record.checks if c.key}


def _now(key: str) -> str:
    """A check's key as the catalogue names it now (``fixtures.check_keys.current_key``)."""
    from fixtures.check_keys import current_key

    return current_key(key)


def read_baseline(path: Path) -> RunDocument:
    """The baseline run's document.

    Raises:
        ValueError: if the file is not a latent-claims results.json.
    """
    try:
        return RunDocument.from_json(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"--baseline {path} is not a latent-claims results.json ({err})") from None


def compare(baseline_path: Path, doc: RunDocument, mapping: dict[str, str] | None = None) -> dict:
    """What changed since the baseline run.

    Args:
        baseline_path: an earlier run's results.json.
        doc: this run's document: its records, ``models`` (name -> facts with ``weights_sha256``) and the facts
            that make two runs comparable (seed, prompts, zoo, corpus, dtype: ``RunDocument.facts``).
        mapping: {old model name: new model name} (``--baseline-map``); unmapped names pair with themselves.
    Returns:
        {"baseline", "baseline_run_id", "differences": [...], "models": [{old, new, old_weights_sha256,
         new_weights_sha256, same_weights, old_config_sha256, new_config_sha256, same_config (None where either
         run did not record it)}], "retrained_in_place": [...], "reconfigured_in_place": [...] (same weights, another
         config), "measured_changes": [...],
         "ledger_changes": [...], "verdict_changes": [...] (every outcome change), "method_changed": [...],
         "moved": [...], "new": [...], "missing": [...]}.
    Raises:
        ValueError: if the file is not a latent-claims results.json.
    """
    mapping = mapping or {}
    old = read_baseline(baseline_path)
    old_records = {record_key(r, mapping.get(r.model, r.model)): r for r in old.records}
    new_records = {record_key(r): r for r in doc.records}
    out = {"baseline": str(baseline_path), "baseline_run_id": old.run_id, "differences": [], "models": [],
           "retrained_in_place": [], "reconfigured_in_place": [], "measured_changes": [], "ledger_changes": [], "verdict_changes": [],
           "method_changed": [], "moved": [],
           "new": sorted(new_records[k].test for k in new_records.keys() - old_records.keys()),
           "missing": sorted(old_records[k].test for k in old_records.keys() - new_records.keys())}
    was, now = old.facts(), doc.facts()
    out["differences"] = [f"{FACTS[k]}: {was[k]!r} in the baseline, {now[k]!r} here" for k in FACTS
                          if was[k] is not None and was[k] != now[k]]  # None: an older run did not record it
    if not old.complete:  # its missing records are not verdicts that went away
        out["differences"].append("the baseline is not a whole run: " + "; ".join(
            (["interrupted"] if old.interrupted else []) + list(old.incomplete)))
    old_models, models = old.models or {}, doc.models or {}
    for was_name, now_name in sorted((o, mapping.get(o, o)) for o in old_models if mapping.get(o, o) in models):
        a = (old_models.get(was_name) or {}).get("weights_sha256")
        b = (models.get(now_name) or {}).get("weights_sha256")
        ca = (old_models.get(was_name) or {}).get("config_sha256")
        cb = (models.get(now_name) or {}).get("config_sha256")
        pair = {"old": was_name, "new": now_name, "old_weights_sha256": a, "new_weights_sha256": b,
                "same_weights": None if not (a and b) else a == b, "old_config_sha256": ca,
                "new_config_sha256": cb, "same_config": None if not (ca and cb) else ca == cb}
        out["models"].append(pair)
        if was_name == now_name and pair["same_weights"] is False:
            out["retrained_in_place"].append(pair)
        elif was_name == now_name and pair["same_config"] is False:
            out["reconfigured_in_place"].append(pair)
    for key in sorted(new_records.keys() & old_records.keys()):
        new, was = new_records[key], old_records[key]
        where = {"claim": key[0], "model": key[1], "test": new.test}
        if new.outcome != was.outcome:
            out["verdict_changes"].append({**where, "was": was.outcome, "now": new.outcome})
        if new.version != was.version:
            out["method_changed"].append({**where, "was": was.version, "now": new.version})
            continue
        if was.outcome != ERROR and not all(c.finite for c in was.checks):  # null numbers, yet an outcome
            out["differences"].append(f"the baseline's {key[0]} on {key[1]} ({new.test}) has statistics that are "
                                      "not numbers (null) beside its outcome: not compared (a damaged file?)")
            continue
        before, after = _statuses(was), _statuses(new)
        same = before == after or _statuses_by_key(was) == _statuses_by_key(new) != {}  # a reworded name is no change
        if same and new.outcome != was.outcome and new.expected != was.expected:
            out["ledger_changes"].append({**where, "was": was.outcome, "now": new.outcome,
                                          "expected_was": was.expected, "expected_now": new.expected})
        elif not same or _outcome(new) != _outcome(was):  # a check, or an error that has none
            out["measured_changes"].append({**where, "was": before, "now": after, "outcome_was": was.outcome,
                                            "outcome_now": new.outcome})
        by_key, by_name = {_now(c.key): c for c in was.checks if c.key}, {c.name: c for c in was.checks}
        for check in new.checks:  # paired by key (schema 9), by name with a baseline made before keys
            prior = by_key.get(check.key) if check.key and by_key else by_name.get(check.name)
            if prior is None or not (prior.finite and check.finite):
                continue  # a NaN (stored as null) is an error of its run, not a movement
            tolerance = max((prior.ci_high - prior.ci_low) / 2 + (check.ci_high - check.ci_low) / 2,
                            FLOAT_NOISE * max(abs(prior.value), abs(check.value)))
            if abs(check.value - prior.value) > tolerance:
                out["moved"].append({"claim": key[0], "model": key[1], "check": check.name,
                                     "was": prior.value, "now": check.value, "tolerance": tolerance})
    return out
