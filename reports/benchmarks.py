"""The last benchmark figures (``make bench``, pytest-benchmark's JSON), quoted in the report's run facts."""

import json
from pathlib import Path

FILE = "benchmark.json"  # ``make bench`` writes <report dir>/benchmark.json


def summarize(path: Path) -> dict | None:
    """Capture ÷ bare forward per architecture and instrument throughputs from a pytest-benchmark JSON.

    Benchmarks named ``test_bare_forward[ID]`` and ``test_capture[ID]`` (ID: architecture and needs, e.g.
    ``opt-125m-residual-stream``) give the ratio of their
    fastest rounds (the minimum is the least disturbed by other work on the machine; means of a few
    rounds on a shared CPU vary by ±20 %); every other benchmark is quoted as operations per second of
    its fastest round.

    Returns:
        {"file", "created", "lines": [...], "capture_ratio": {ID: ratio}}, or None where there is no
        readable file.
    """
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        means = {b["name"]: b["stats"]["min"] for b in doc["benchmarks"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    ratio = {}
    for name, mean in means.items():
        if name.startswith("test_capture["):
            arch = name[len("test_capture["):-1]
            bare = means.get(f"test_bare_forward[{arch}]")
            if bare:
                ratio[arch] = round(mean / bare, 3)
    lines = [f"capture ÷ bare forward {arch} {r:.2f}×" for arch, r in ratio.items()]
    lines += [f"{name} {1 / mean:.3g}/s" for name, mean in means.items()
              if not name.startswith(("test_capture[", "test_bare_forward["))]
    return {"file": str(path), "created": doc.get("datetime", ""), "lines": lines, "capture_ratio": ratio}
