"""The run document, results.json, as one typed object: every key of reports/SCHEMA.md is a field of
:class:`RunDocument` (``tests/test_document.py`` holds the two together).

A run (``reports.writer.results``) and a merge (``reports.merge.merge_runs``) both build one, field by field with
no defaults, so a key one builder forgets is a ``TypeError`` in the tests, not a document another reader chokes
on later (a merged nightly without ``source_scale`` once lost the run that took it as ``--baseline``).
:meth:`RunDocument.from_json` reads the schemas this version reads (4 to 7) and fills the keys an older one lacks
with what they meant before they existed; :meth:`RunDocument.to_json` gives the dict that is written.

Records are :class:`reports.checks.ClaimRecord` objects from the test that made them until ``to_json``: the report
reads their fields, never string keys, and derived values (a check's status, the headline) are computed by the
one code that decides them, also for a document read from a file.
"""

from dataclasses import dataclass, fields

from reports.checks import ClaimRecord
from reports.records import ledger_build, ledger_quotes_disagree
from reports.results_file import SCHEMA

# What a key an older schema lacks meant before it existed (a key absent from this table is in every readable schema).
UPGRADE_DEFAULTS = {
    "zoo_build": None, "against_shipped": None, "max_prompts": None, "source_scale": None, "versions_off_lock": [],
    "user_groups": {}, "builds_agree": [], "builds_not_run": {}, "baseline": None, "benchmarks": None,
    "merged_from": [], "changes_since_last_run": None, "shard": None, "shards_missing": [], "claims_selected": None,
    "incomplete": [],
    "models": {},
    "catalogue": {}, "versions": {}, "device": {}, "corpus": {}, "command": [], "replay": None, "created_utc": "",
    "interrupted": False, "exit_status": 0, "git": "unknown", "wall_seconds": 0.0, "peak_rss_mib": 0.0,
    "prompts": None, "seed": None, "zoo": None, "run_id": None,
}
# The facts that make two runs' numbers comparable: field -> the option that sets it (``--baseline``'s differences).
FACTS = {"seed": "--seed", "prompts": "--prompts", "max_prompts": "--max-prompts", "zoo": "--zoo",
         "corpus": "--corpus", "dtype": "--dtype", "source_scale": "--source-scale"}


@dataclass(kw_only=True)
class RunDocument:
    """One run's results.json (keys and meanings: reports/SCHEMA.md), its records as :class:`ClaimRecord` objects."""

    schema: str
    run_id: str | None
    created_utc: str
    command: list
    replay: str | None
    interrupted: bool
    exit_status: int
    seed: int | None
    zoo: str | None
    zoo_build: str | None
    against_shipped: dict | None
    prompts: list | None
    max_prompts: int | None
    source_scale: bool | None
    corpus: dict
    versions: dict
    versions_off_lock: list
    git: str
    device: dict
    wall_seconds: float
    peak_rss_mib: float
    models: dict
    catalogue: dict
    user_groups: dict
    records: list[ClaimRecord]
    builds_agree: list
    builds_not_run: dict
    baseline: dict | None
    benchmarks: dict | None
    merged_from: list
    changes_since_last_run: dict | None
    shard: str | None
    shards_missing: list
    claims_selected: list | None
    incomplete: list

    @property
    def complete(self) -> bool:
        """Whether this is a whole run of its replay command: not interrupted, not stopped early (``-x``,
        ``--maxfail``), not narrowed by an option the replay does not repeat (``--lf``, ``--deselect``, ``--sw``).
        Only a complete run is a previous run to compare with, or verdicts to ship (issue 67, case 5)."""
        return not self.interrupted and not self.incomplete

    def to_json(self) -> dict:
        """The document as results.json holds it, keys in SCHEMA.md's order: each record as
        :meth:`ClaimRecord.to_json` gives it, with the ledger's ``ledger_build`` and ``ledger_quotes_disagree``
        (from the record and this run's ``models``); the other values shared, not copied; NaN left as NaN (the
        writer stores it as null)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["records"] = [self.record_json(r) for r in self.records]
        return out

    def record_json(self, record: ClaimRecord) -> dict:
        """One record as results.json holds it (see :meth:`to_json`)."""
        build = ledger_build(record, self.models or {})
        return {**record.to_json(), "ledger_build": build,
                "ledger_quotes_disagree": ledger_quotes_disagree(record, self.models or {})}

    @classmethod
    def from_json(cls, doc: dict) -> "RunDocument":
        """A document read from results.json of any schema this version reads, upgraded to this one's fields.

        Keys an older schema lacks get ``UPGRADE_DEFAULTS``; keys this version does not know are dropped; the
        schema becomes this version's; records become :class:`ClaimRecord` objects (``ClaimRecord.from_json``:
        their derived values recomputed by this version's rules).

        Raises:
            ValueError: if ``doc`` is not a dict or has no list of records.
            KeyError, TypeError: for a damaged record (``reports.results_file.read_results`` says which).
        """
        if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
            raise ValueError("not a results document: no list of 'records'")
        values = {f.name: doc.get(f.name, UPGRADE_DEFAULTS.get(f.name)) for f in fields(cls)}
        records = [ClaimRecord.from_json(r) for r in doc["records"]]
        return cls(**{**values, "schema": SCHEMA, "records": records})

    def facts(self) -> dict:
        """What makes two runs comparable, by ``FACTS`` name; None where the document does not record it."""
        return {"seed": self.seed, "prompts": self.prompts, "max_prompts": self.max_prompts, "zoo": self.zoo,
                "corpus": (self.corpus or {}).get("sha256"), "dtype": (self.device or {}).get("dtype"),
                "source_scale": self.source_scale}


def field_names() -> list[str]:
    """The top-level keys of results.json, in order (SCHEMA.md's table)."""
    return [f.name for f in fields(RunDocument)]
