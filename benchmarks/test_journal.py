"""What the run's journal (``reports.journal``) costs per record: one JSON line appended with one write (issue 67,
case 6: "the journal adds no measurable time per record"). The record is the largest of a real run's (S3 at source
scale on an H200, ``benchmarks/gpu/2026-11-28-h200-lease2/call2-s3-results.json``), as results.json stores it; a
claim test takes seconds, so microseconds per record are nothing a run can measure."""

import json
from pathlib import Path

from reports.journal import Journal

RUN = Path(__file__).parent / "gpu" / "2026-11-28-h200-lease2" / "call2-s3-results.json"


def test_journal_append_per_record(benchmark, tmp_path):
    """Seconds to append one record to a journal (serialisation, NaN to null, one O_APPEND write)."""
    records = json.loads(RUN.read_text())["records"]
    largest = max(records, key=lambda r: len(json.dumps(r)))
    journal = Journal.start(tmp_path, {"schema": "header"})
    benchmark.group = "journal"
    benchmark.extra_info["record_bytes"] = len(json.dumps(largest))
    benchmark(journal.record, largest)
    journal.remove()
