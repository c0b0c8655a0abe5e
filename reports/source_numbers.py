"""The report's "source vs measured" table: the numbers a source reports on its own subject beside this run's.

The numbers are the catalogue's (each claim's home ``claims/<family>/<topic>.toml``, its ``source_numbers``, carried into
results.json's ``catalogue``); a claim test that measures the same quantity keeps its value beside the source's
(``ClaimRecord.beside_source``, by the number's ``quantity``). A number no record of the run measured is shown with
"—" under each model: the reader sees what the source reported, and that this run has nothing to set beside it.
"""

import re

from reports.checks import ClaimRecord
from reports.tables import label, num

NOTE = ("the numbers the source reports on its own subject (each claim's home, claims/<family>/<topic>.toml), and this run's value of the same "
        "quantity on each subject that measures it; a replica or a scaled form is no source's subject, so a "
        "difference there names where the models differ, not a verdict")


def source_rows(entry: dict, records: list[ClaimRecord]) -> tuple[list[str], list[list[str]]] | None:
    """The table of one claim: a row per source number, a column per subject that measured one.

    Args:
        entry: the claim's entry of results.json's ``catalogue`` (``fixtures.catalogue.catalogue_json``).
        records: the run's records of the claim.
    Returns:
        (header, rows): "quantity", "source", "where (the source's subject)", then one column per record with a
        ``beside_source``; None where the source gives no number for the claim.
    """
    numbers = entry.get("source_numbers") or []
    if not numbers:
        return None
    measured = [r for r in records if r.beside_source]
    header = ["quantity", "source", "where (the source's subject)"] + [label(r) for r in measured]
    rows = []
    for n in numbers:
        q = n["quantity"]
        rows.append([q, f"{num(n['value'], '.6g')} {n['unit']}".strip(), f"{n['where']} ({n['subject']})"]
                    + [num(r.beside_source[q]["measured"], ".4g") if q in r.beside_source else "—" for r in measured])
    return header, rows


def provenance(entry: dict, check_name: str, key: str = "") -> str:
    """Where a check's threshold comes from, as the catalogue records it ("source", "reading, before", "after"), or
    "" where the catalogue has no entry for it. The row is found by the check's key; by its name only for a check
    recorded without one (a run before schema 9).

    Args:
        entry: the claim's entry of results.json's ``catalogue``: ``thresholds`` [{check, key, provenance, ...}],
            whose ``check`` and ``key`` may hold "{...}" for the parts an f-string fills.
        check_name: the check's name as recorded; key: its key ("" where it has none).
    """
    rows = entry.get("thresholds") or []
    if key:
        keyed = [t for t in rows if t.get("key")]
        return next((keyed[i]["provenance"] for i in most_specific([t["key"] for t in keyed], key)), "")
    return next((t["provenance"] for t in rows if re.fullmatch(name_pattern(t["check"]), check_name)), "")


def most_specific(templates: list[str], key: str) -> list[int]:
    """The indices of the key templates that match ``key`` with the longest literal part: where two rows' keys match,
    the more specific names the check ("S4.7/mean-h-model-{}-distinct-models" before "S4.7/mean-h-model-{}"), for
    its derivation (``fixtures.catalogue_text.catalogued``) and its provenance (:func:`provenance`) alike.

    Returns:
        the indices, in the templates' order; empty where none matches, more than one where equally specific ones do.
    """
    matching = [i for i, t in enumerate(templates) if re.fullmatch(name_pattern(t), key)]
    literal = max((len(templates[i].replace("{}", "")) for i in matching), default=0)
    return [i for i in matching if len(templates[i].replace("{}", "")) == literal]


def name_pattern(template: str) -> str:
    """A regular expression for the check names a template stands for: each "{...}" matches what an f-string fills."""
    return re.sub(r"\\\{[^}]*\\\}", ".+", re.escape(template))
