"""How long a bad option takes to be refused: a real ``pytest claims`` process with three bad options, from start to
its usage error (exit 4), before any model or corpus is touched (tests/test_startup.py holds what it says; the time is
measured here, never asserted). Reported in the benchmark table as ``usage_error_seconds``."""

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _refused(tmp_path) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "claims", "-m", "gpu", "--model", "tiny-w96", "--device", "tpu",
                           "--seed", "-1", "--corpus", str(tmp_path / "none.txt"), "-p", "no:cacheprovider", "-q"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - started
    assert done.returncode == 4, done.stderr[-2000:]
    return seconds


def test_a_usage_error_comes_before_anything_is_loaded(benchmark, tmp_path):
    """One real start with bad options, timed once (a process start is seconds: rounds would only repeat it)."""
    seconds = benchmark.pedantic(_refused, args=(tmp_path,), rounds=1, iterations=1)
    benchmark.extra_info["usage_error_seconds"] = round(seconds, 2)
