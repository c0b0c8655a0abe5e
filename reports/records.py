"""The report side of records (:class:`reports.checks.ClaimRecord`): their identity, model facts, outcome counts,
the ledger's build and quotes, the agreement between builds. What a claim test records is in ``reports.checks``.
"""

import re
from dataclasses import replace
from decimal import Decimal, InvalidOperation

from reports.checks import FAILED, FAILS, FAILS_AS_EXPECTED, HOLDS, HOLDS_UNEXPECTEDLY, OUTCOMES, PASSED, ClaimRecord
from reports.node_ids import function_of


def record_key(record: ClaimRecord, model: str | None = None) -> tuple[str, str, str, str]:
    """A record's identity: (claim id, model name, test function, other parameters), read from its fields; the
    node id is for display. One run never has two records with one key; the baseline, the history and the merge
    pair records of two runs by it (a baseline's renamed model: pass its new name as ``model``)."""
    return record.claim, model or record.model, test_name(record), variant(record)


def record_id(record: ClaimRecord) -> str:
    """A record's identity as one string, "CLAIM|FUNCTION[PARAMETERS]" (e.g. "S0.6|test_untrained_attention_residuals_
    are_nearly_straight[ref-opt-125m]"): its node id without the file path, so that moving a claim test to another
    file keys the same shipped verdict (``reports.shipped_verdicts``); the ledger and the baselines key on the same
    fields (:func:`record_key`)."""
    return f"{record.claim}|{record.test.rsplit('::', 1)[-1]}"


def path_free(key: str) -> str:
    """A shipped-verdicts key of a file written before keys were path-free ("CLAIM|path::FUNCTION[...]") as
    :func:`record_id` writes it; a path-free key unchanged."""
    claim, _, test = key.partition("|")
    return f"{claim}|{test.rsplit('::', 1)[-1]}"


def test_name(record: ClaimRecord) -> str:
    """The test function of a record, e.g. "test_final_norm_removes_scale" (from the node id for a record made
    without ``function``)."""
    return record.function or function_of(record.test)


def variant(record: ClaimRecord) -> str:
    """The test's other parameters of a record, joined as in its test id and a ledger entry's ``variant``
    (e.g. "restricted"), or ""."""
    return "-".join(record.params.values())


def add_model_facts(models: dict[str, dict], more: dict[str, dict]) -> None:
    """Add one process's (or one shard's) model facts to ``models``, {model name: facts}, in place.

    Two xdist workers or two nightly shards may both load a model (a twin that a trained model's test reads). A
    load that succeeded replaces one that failed (``error``), never the reverse; otherwise the facts first given are
    kept, and a fact they left empty (None, {}, []) is taken from the later only where both loaded the same weights
    on the same build. The prompt windows redrawn are united, as each process draws its own batches
    ({"n × length": count}, the same count for the same batch: the draw is seeded).
    """
    for name, facts in more.items():
        kept = models.setdefault(name, dict(facts))
        if kept is facts or kept == facts:
            continue
        redrawn = {**(facts.get("prompt_windows_redrawn") or {}), **(kept.get("prompt_windows_redrawn") or {})}
        if "error" in kept and "error" not in facts:
            kept.clear()
            kept.update(facts)
        elif "error" not in facts and all(kept.get(k) == facts.get(k) for k in ("weights_sha256", "build")):
            for key, value in facts.items():
                if kept.get(key) in (None, {}, []):
                    kept[key] = value
        if redrawn:
            kept["prompt_windows_redrawn"] = redrawn


def count_outcomes(outcomes) -> dict[str, int]:
    """{outcome: how many} of an iterable of outcome strings, in the order of ``OUTCOMES`` (others after them, as
    first met); outcomes with no occurrence are left out."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    order = {o: i for i, o in enumerate(OUTCOMES)}
    return dict(sorted(counts.items(), key=lambda kv: order.get(kv[0], len(order))))
def zoo_build_of(models: dict[str, dict]) -> str | None:
    """Where a run's trained zoo models came from, by their facts' ``zoo_build``: "shipped" (all from
    ``models/shipped/``), "local" (all trained on this machine), "mixed", or None where no trained zoo model ran."""
    builds = {m.get("zoo_build") for m in models.values() if m.get("role") == "trained" and m.get("zoo_build")}
    return builds.pop() if len(builds) == 1 else ("mixed" if builds else None)


def ledger_build(record: ClaimRecord, models: dict) -> str | None:
    """For a record the ledger expects to fail: "same build" where the entry was measured on the weights this run
    tested, "another build" where on other weights of the same fingerprint (the entry still applies), "not
    recorded" where the entry names no weights; None for a record without a ledger entry.

    Args:
        record: a record.
        models: results.json's ``models`` (name -> facts with ``weights_sha256``).
    """
    if record.expected != FAILS:
        return None
    measured = record.ledger_weights_sha256 or ""
    tested = (models.get(record.model, {}) or {}).get("weights_sha256") or ""
    if not measured or not tested:
        return "not recorded"
    return "same build" if measured == tested else "another build"


def _agrees(quoted: str, value: float) -> bool:
    """Whether a number as the ledger prints it ("0.116", "-3.3e-05") is ``value`` rounded: within half a unit of
    its last printed digit, or 1 % of it."""
    try:
        printed = Decimal(quoted)
    except InvalidOperation:
        return False
    half_digit = 0.5 * 10.0 ** printed.as_tuple().exponent
    return abs(float(printed) - value) <= max(half_digit, 0.01 * abs(float(printed)))


def machine_of(facts: dict | None) -> str:
    """The machine a model ran on, as results.json's ``models[NAME].build`` names it (its CPU, else its GPU, else
    its device), or "" where the facts do not say."""
    build = (facts or {}).get("build") or {}
    return build.get("cpu") or build.get("gpu") or build.get("device") or ""


def ledger_machine(why: str) -> str:
    """The machine a ledger why says it was measured on: the "(MACHINE, torch V)" of its generated part
    ("Measured on weights <sha> (<machine>, torch <v>)", ``reports.ledger_text.measured_sentence``), or ""."""
    match = re.search(r"Measured on weights \S+ \((.+?), torch [^)]*\)", why or "")
    return match.group(1) if match else ""


def ledger_quotes_disagree(record: ClaimRecord, models: dict) -> list[str]:
    """Where an expected failure's why quotes a check of this record ("NAME = v [low, high]") that this run's
    measurement contradicts: the why was written for other weights, another model or another procedure.

    Only records whose ledger entry was measured on the weights this run tested (:func:`ledger_build` "same
    build") are compared, and a quote of a check the record does not have is not a disagreement. A quote
    disagrees where its interval decides the check otherwise than this run's (passed, failed or inconclusive
    against the check's own threshold): the decision changed, on any machine. Where the decision is the same, the
    numbers must agree (to the printed digits) only on the machine the why names (:func:`ledger_machine`): the
    same weights give other last digits on another CPU's kernels (S3's descents end a little differently on AVX2
    than on AVX-512), which is no reason to measure the ledger again.

    Args:
        record: a record.
        models: the run's ``models`` (name -> facts with ``weights_sha256`` and ``build``).
    Returns:
        one line per disagreeing quote: 'NAME: the ledger quotes v [low, high] (failed), this run measured
        v' [low', high'] (inconclusive)' where the decision changed, or '... this run measured v' [low', high'] on
        the machine the ledger names (MACHINE)' where only the numbers did.
    """
    if ledger_build(record, models) != "same build":
        return []
    why = record.expected_reason or ""
    machine = machine_of(models.get(record.model))
    same_machine = bool(machine) and ledger_machine(why) == machine
    out = []
    for check in record.checks:
        match = re.search(re.escape(check.name) + r" = (\S+) \[(\S+), (\S+?)\]", why)
        if match is None:
            continue
        quoted = _numbers(match.groups())
        measured = (check.value, check.ci_low, check.ci_high)
        was = replace(check, value=quoted[0], ci_low=quoted[1], ci_high=quoted[2]).status if quoted else None
        said = (f"{check.name}: the ledger quotes {match.group(1)} [{match.group(2)}, {match.group(3)}]"
                + (f" ({was})" if was and was != check.status else ""))
        now = f"{measured[0]:.4g} [{measured[1]:.4g}, {measured[2]:.4g}]"
        if was is None or was != check.status:
            out.append(f"{said}, this run measured {now} ({check.status})")
        elif same_machine and not all(_agrees(q, v) for q, v in zip(match.groups(), measured)):
            out.append(f"{said}, this run measured {now} on the machine the ledger names ({machine})")
    return out


def _numbers(quoted: tuple[str, ...]) -> tuple[float, ...] | None:
    """The ledger's printed numbers as floats, or None where one is not a number."""
    try:
        return tuple(float(Decimal(q)) for q in quoted)
    except InvalidOperation:
        return None


def builds_agree(records: list[ClaimRecord], siblings: dict[str, str]) -> list[dict]:
    """Per claim test, the outcomes on every build of a recipe: the model and its seed siblings.

    Args:
        records: the run's records.
        siblings: {sibling name: model name} (``models.recipes.seed_builds``).
    Returns:
        one row per (claim, test function, other parameters, recipe) with at least two builds run:
        {"claim", "test", "params", "recipe", "builds": {name: outcome}, "summary": e.g.
        "holds on 3 of 4 builds, inconclusive on 1", "seed_unstable": :func:`seed_unstable`'s words or ""};
        "fails as expected" counts as "fails" and "holds unexpectedly" as "holds": the table compares
        measurements, not the ledger.
    """
    rows: dict[tuple, dict] = {}
    for r in records:
        recipe = siblings.get(r.model, r.model)
        if recipe not in siblings.values():
            continue
        test, params = test_name(r), variant(r)
        row = rows.setdefault((r.claim, test, params, recipe), {"claim": r.claim, "test": test, "params": params,
                                                                "recipe": recipe, "builds": {}})
        row["builds"][r.model] = r.outcome
    out = []
    for row in rows.values():
        if len(row["builds"]) < 2:
            continue
        measured = {FAILS_AS_EXPECTED: FAILS, HOLDS_UNEXPECTEDLY: HOLDS}  # the measurement, whatever the ledger said
        counts = count_outcomes(measured.get(o, o) for o in row["builds"].values())
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], OUTCOMES.index(kv[0])))
        first, *rest = ranked
        row["summary"] = ", ".join([f"{first[0]} on {first[1]} of {len(row['builds'])} builds",
                                    *(f"{o} on {n}" for o, n in rest)])
        row["seed_unstable"] = seed_unstable(counts, len(row["builds"]))
        out.append(row)
    return out


def seed_unstable(counts: dict, n_builds: int) -> str:
    """"seed-unstable (holds on k of n builds)" where a recipe's builds disagree, one holding and another failing
    (issue 77: a verdict that a seed turns is the recipe's instability, not a finding about any one model); ""
    where they agree or none is decided both ways. ``counts``: measured outcomes over the builds, "fails as
    expected" counted as "fails"."""
    if not (counts.get(HOLDS) and counts.get(FAILS)):
        return ""
    return f"seed-unstable (holds on {counts[HOLDS]} of {n_builds} builds)"


SOURCE_SETTING = "/source-setting"  # the key suffix of a reading that is a claim check again in the source's own
# setting (S3's descent setting beside the better one a CPU decides with: claims/s3_inversion/source_setting.py)


def settings_disagree(record: ClaimRecord) -> str:
    """Where a claim check and its reading in the source's own setting (its key + ``SOURCE_SETTING``) are decided
    opposite ways: "S3's own setting disagrees: <reading> <status> (...) where the headline setting <status>",
    naming each; else "" (issue 77: said in the record's message and its cell)."""
    said = []
    for reading in record.readings():
        decided = next((c for c in record.checks if c.role == "claim" and c.key
                        and reading.key == f"{c.key}{SOURCE_SETTING}"), None)
        if decided and {decided.status, reading.status} == {PASSED, FAILED}:
            said.append(f"{reading.name} {reading.status} ({reading.value:.4g} [{reading.ci_low:.4g}, "
                        f"{reading.ci_high:.4g}], needs {reading.comparison} {reading.threshold:g}) where the "
                        f"headline setting {decided.status}")
    return f"S3's own setting disagrees: {'; '.join(said)}" if said else ""
