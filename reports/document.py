"""The run document, results.json, as one typed object: every key of reports/SCHEMA.md is a field of
:class:`RunDocument` (``tests/test_document.py`` holds the two together).

A run (``reports.writer.results``) and a merge (``reports.merge.merge_runs``) both build one, field by field with
no defaults, so a key one builder forgets is a ``TypeError`` in the tests, not a document another reader chokes
on later (a merged nightly without ``source_scale`` once lost the run that took it as ``--baseline``).
:meth:`RunDocument.from_json` reads the schemas this version reads (4 to 7) and fills the keys an older one lacks
with what they meant before they existed; :meth:`RunDocument.to_json` gives the dict that is written.
"""

from dataclasses import dataclass, fields

from reports.results_file import SCHEMA

# What a key an older schema lacks meant before it existed (a key absent from this table is in every readable schema).
UPGRADE_DEFAULTS = {
    "zoo_build": None, "against_shipped": None, "max_prompts": None, "source_scale": None, "versions_off_lock": [],
    "user_groups": {}, "builds_agree": [], "builds_not_run": {}, "baseline": None, "benchmarks": None,
    "merged_from": [], "changes_since_last_run": None, "shard": None, "shards_missing": [], "models": {},
    "catalogue": {}, "versions": {}, "device": {}, "corpus": {}, "command": [], "replay": None, "created_utc": "",
    "interrupted": False, "exit_status": 0, "git": "unknown", "wall_seconds": 0.0, "peak_rss_mib": 0.0,
    "prompts": None, "seed": None, "zoo": None, "run_id": None,
}
# The facts that make two runs' numbers comparable: field -> the option that sets it (``--baseline``'s differences).
FACTS = {"seed": "--seed", "prompts": "--prompts", "max_prompts": "--max-prompts", "zoo": "--zoo",
         "corpus": "--corpus", "dtype": "--dtype", "source_scale": "--source-scale"}


@dataclass(kw_only=True)
class RunDocument:
    """One run's results.json (keys and meanings: reports/SCHEMA.md); records stay the dicts that are written."""

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
    records: list
    builds_agree: list
    builds_not_run: dict
    baseline: dict | None
    benchmarks: dict | None
    merged_from: list
    changes_since_last_run: dict | None
    shard: str | None
    shards_missing: list

    def to_json(self) -> dict:
        """The document as results.json holds it, keys in SCHEMA.md's order (a shallow dict: records are shared)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, doc: dict) -> "RunDocument":
        """A document read from results.json of any schema this version reads, upgraded to this one's fields.

        Keys an older schema lacks get ``UPGRADE_DEFAULTS``; keys this version does not know are dropped; the
        schema becomes this version's.

        Raises:
            ValueError: if ``doc`` is not a dict or has no list of records.
        """
        if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
            raise ValueError("not a results document: no list of 'records'")
        values = {f.name: doc.get(f.name, UPGRADE_DEFAULTS.get(f.name)) for f in fields(cls)}
        return cls(**{**values, "schema": SCHEMA})

    def facts(self) -> dict:
        """What makes two runs comparable, by ``FACTS`` name; None where the document does not record it."""
        return {"seed": self.seed, "prompts": self.prompts, "max_prompts": self.max_prompts, "zoo": self.zoo,
                "corpus": (self.corpus or {}).get("sha256"), "dtype": (self.device or {}).get("dtype"),
                "source_scale": self.source_scale}


def field_names() -> list[str]:
    """The top-level keys of results.json, in order (SCHEMA.md's table)."""
    return [f.name for f in fields(RunDocument)]
