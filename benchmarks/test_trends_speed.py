"""What the trends page (``reports.trend_page``, issue 78) costs at the nightly history's size: 60 nights × 343 records
(a whole tiny-zoo run), read from their results.json and rendered, one plot per record; and how large the page is.
Issue 78's budget: at most 10 s on 2 cores, at most 5 MB.

The records are a real run's (tiny-w96 on an H200, ``benchmarks/gpu/2026-11-28-h200/call2-tiny-w96-results.json``, 20
records of about 10 KB each, details included, as results.json stores them; that run was interrupted, these
nights are whole), copied onto 18 model names to make 343,
each night's statistics moved a little, so that every plot has 60 points of its own. With --benchmark-disable
(``make test``) it runs once on 3 nights × 20 records.
"""

import json
from pathlib import Path

import pytest

from reports.trend_page import write_trends

RUN = Path(__file__).parent / "gpu" / "2026-11-28-h200" / "call2-tiny-w96-results.json"
NIGHTS, RECORDS = 60, 343  # the nightly keeps 60 nights (NIGHTS_KEPT); a whole tiny-zoo run has 343 records
SMOKE_NIGHTS, SMOKE_RECORDS = 3, 20


def records_of(night: int, count: int) -> list[dict]:
    """``count`` records for night ``night``: the real run's, on model names of their own past the first 20, every
    check's value and interval moved by a few thousandths a night."""
    real = json.loads(RUN.read_text())["records"]
    out = []
    for k in range(count):
        rec = json.loads(json.dumps(real[k % len(real)]))
        if k >= len(real):
            rec["model"] = f"{rec['model']}-copy{k // len(real)}"
        shift = 0.002 * night * ((k % 3) - 1)
        for check in rec["checks"]:
            for key in ("value", "ci_low", "ci_high"):
                if isinstance(check.get(key), (int, float)):
                    check[key] += shift
        out.append(rec)
    return out


@pytest.fixture(scope="module")
def history(tmp_path_factory, request) -> Path:
    """A folder of run folders, one a night, as the nightly-history branch holds them."""
    small = request.config.getoption("benchmark_disable")
    nights, count = (SMOKE_NIGHTS, SMOKE_RECORDS) if small else (NIGHTS, RECORDS)
    base = tmp_path_factory.mktemp("trends")
    template = json.loads(RUN.read_text())
    for night in range(nights):
        run_id = f"2026{10 + night // 28:02d}{night % 28 + 1:02d}T031500Z"
        folder = base / run_id
        folder.mkdir()
        doc = {**template, "run_id": run_id, "created_utc": f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}T03:15:00+00:00",
               "records": records_of(night, count), "interrupted": False, "exit_status": 0}  # a whole night
        (folder / "results.json").write_text(json.dumps(doc))
    return base


def test_trends_page_of_the_nightly_history(benchmark, history):
    """Seconds to read 60 nights × 343 records and write their trends page (extra_info: the page's bytes)."""
    benchmark.group = "trends"
    page = benchmark.pedantic(write_trends, args=(history,), rounds=1, iterations=1)
    text = page.read_text()
    benchmark.extra_info["page_bytes"] = len(text.encode())
    benchmark.extra_info["plots"] = text.count("<img loading='lazy'")
    assert text.count("class='card item") == (RECORDS if benchmark.enabled else SMOKE_RECORDS)
