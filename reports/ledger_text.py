"""The measured part of each ledger why, written from a run's records (``python -m reports ledger RUN``).

A ledger entry's ``why`` (claims/expected_verdicts.toml) is a finding in words followed by what was measured:
"Measured on weights <sha> (<cpu>, torch <v>)[, <n> prompts]: <claim check> = v [low, high] <unit> (needs <op> t).
Builds of this recipe (the model and its seed siblings): <summary>." That second part is generated here from
the record of the same claim, version, test and model on the same weights, so that it cannot disagree with the
measurement; the words before it stay the maintainer's. An entry whose record is not "fails as expected" on the
entry's weights is listed, never rewritten: it must be measured again, or removed.
"""

import json
import re
import tomllib
from dataclasses import dataclass

from reports.checks import FAILS_AS_EXPECTED, ClaimRecord
from reports.document import RunDocument
from reports.ledger_keys import find
from reports.records import test_name, variant

MEASURED = "Measured on weights "  # where the generated part of a why begins
BUILDS = "Builds of this recipe"  # where its builds-agree summary begins
UNSTABLE = re.compile(r"^Seed-unstable \(holds on \d+ of \d+ builds\): [^.]*\. ")  # the prefix of a why whose
# recipe's builds disagree (issue 77): never a finding about the model


@dataclass(frozen=True)
class Refresh:
    """One entry's outcome: the new why ("" when it is not rewritten) and what to tell the maintainer."""

    entry: str  # "S3.11 on tiny-w192 (test_attention_residual_carries_self_token_identity)"
    why: str
    note: str


def measured_sentence(record: ClaimRecord, model: dict, builds: str = "") -> str:
    """The generated part of a why, from a record and its model's facts.

    Args:
        record: a record of outcome "fails as expected".
        model: the run's ``models[record.model]``: ``weights_sha256`` and ``build``.
        builds: the builds-agree summary of the record's recipe (e.g. "fails on 2 of 2 builds"), or "".
    Raises:
        ValueError: if the record has no failed claim check.
    """
    failed = record.failed("claim")
    if not failed:
        raise ValueError(f"{record.claim} on {record.model}: no failed claim check to quote")
    build = model.get("build") or {}
    prompts = f", {record.looks[-1]['prompts']} prompts" if len(record.looks) > 1 else ""
    checks = "; ".join(f"{c.name} = {c.value:.4g} [{c.ci_low:.4g}, {c.ci_high:.4g}] {c.unit} "
                       f"(needs {c.comparison} {c.threshold:.4g})" for c in failed)
    text = (f"{MEASURED}{model['weights_sha256'][:12]} ({build.get('cpu') or build.get('gpu') or build.get('device')}, "
            f"torch {build.get('torch')}){prompts}: {checks}.")
    if builds:
        text += f" {BUILDS} (the model and its seed siblings): {builds}."
    return text


def refresh(entries: list[dict], doc: RunDocument) -> list[Refresh | None]:
    """The whys of ledger entries with their measured part written from a run.

    Args:
        entries: the ledger's ``[[expected]]`` tables, in file order.
        doc: a results.json document (one run, or a merged one).
    Returns:
        per entry, in order, a :class:`Refresh`, or None where the run did not measure it (same claim, model,
        variant and test).
    """
    return [_refresh(e, doc) for e in entries]


def _refresh(e: dict, doc: RunDocument) -> Refresh | None:
    entry = {(e["claim"], e["model"], e.get("variant", ""), e.get("test", "")): e}  # matched as the plugin does
    records = [r for r in doc.records if find(entry, r.claim, r.model, variant(r), test_name(r))]
    if not records:
        return None
    r, name = records[0], f"{e['claim']} on {e['model']}" + (f" ({e['test']})" if e.get("test") else "")
    model = (doc.models or {}).get(r.model, {})
    if r.version != e["version"]:
        return Refresh(name, "", f"measured with version {r.version}, the entry is version {e['version']}: "
                                 "measure it again and set the version")
    if model.get("weights_sha256") != e.get("weights_sha256"):
        return Refresh(name, "", "the run measured other weights than the entry's: not rewritten")
    if r.outcome != FAILS_AS_EXPECTED:
        return Refresh(name, "", f"the run says {r.outcome!r}, not 'fails as expected': measure again, or "
                                 "remove the entry")
    row = next((b for b in doc.builds_agree or ()
                if b["claim"] == r.claim and r.model in b["builds"] and b["test"] == test_name(r)), {})
    builds, unstable = row.get("summary", ""), row.get("seed_unstable", "")
    if not builds and BUILDS in e["why"]:
        return Refresh(name, "", "the entry says how the recipe's builds agree, and the run did not measure the seed "
                                 "siblings: not rewritten (run the recipe and its siblings, e.g. the whole zoo)")
    prose = UNSTABLE.sub("", e["why"].split(MEASURED)[0].rstrip())
    if unstable:  # one build holds where this one fails: the recipe's instability, said first
        prose = (f"{unstable[0].upper()}{unstable[1:]}: another build of the recipe holds where this one fails, so "
                 f"this is no finding about the model. {prose[:1].upper()}{prose[1:]}")
    why = f"{prose} {measured_sentence(r, model, builds)}".strip()
    return Refresh(name, why if why != e["why"] else "", "rewritten" if why != e["why"] else "unchanged")


def rewrite(text: str, doc: RunDocument) -> tuple[str, list[Refresh]]:
    """A ledger file's text with the refreshed whys put in place, and the refreshes of the entries the run measured.

    Only the ``why = "..."`` line of a rewritten entry changes; comments and order stay.

    Raises:
        ValueError: if an entry lacks its claim, model, version or why (naming the entry), or does not have exactly
            one ``why = "..."`` line, or if the new text would not read
            back as the same entries with only those whys changed (a why written over several lines, say).
    """
    entries = tomllib.loads(text).get("expected", [])
    for i, e in enumerate(entries):
        lacking = [k for k in ("claim", "model", "version", "why") if k not in e]
        if lacking:
            raise ValueError(f"the ledger's entry {i + 1} ({e.get('claim', '?')} on {e.get('model', '?')}) has no "
                             f"{', '.join(lacking)}: every entry names its claim, model, why and the procedure "
                             "version it was measured with (version = N, as @pytest.mark.claim(id, version=N))")
    lines = text.split("\n")
    why_lines = [i for i, line in enumerate(lines) if line.startswith("why = ")]
    if len(why_lines) != len(entries):
        raise ValueError(f"the ledger has {len(entries)} entries but {len(why_lines)} lines starting 'why = ': "
                         "write each entry's why on one line")
    refreshes = refresh(entries, doc)
    for i, done in zip(why_lines, refreshes):
        if done and done.why:
            lines[i] = "why = " + json.dumps(done.why, ensure_ascii=False)
    new = "\n".join(lines)
    expected = [dict(e, why=done.why) if done and done.why else e for e, done in zip(entries, refreshes)]
    try:
        same = tomllib.loads(new).get("expected", []) == expected
    except tomllib.TOMLDecodeError:
        same = False
    if not same:
        raise ValueError("rewriting the whys would change more than the whys (is a why written over several "
                         "lines?): nothing written")
    return new, [r for r in refreshes if r]
