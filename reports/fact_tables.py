"""The report's tables of run facts, built from a run's :class:`reports.document.RunDocument`: the agreement between
builds of a recipe (seed siblings), the models (size, residual identity, forward and capture times) and where the time
goes (each claim's and family's wall seconds). The claims' own tables are in ``reports.tables``.
"""

from reports.checks import ClaimRecord
from reports.document import RunDocument
from reports.records import test_name
from reports.tables import claim_order, fmt, label

def builds_rows(doc: RunDocument) -> tuple[list[str], list[list[str]]]:
    """The builds-agree table: per claim test, how many trainings of one recipe (the model and its seed
    siblings) give each outcome."""
    header = ["claim", "test", "recipe", "builds agree", "outcome per build"]
    rows = [[b["claim"], b["test"] + (f" [{b['params']}]" if b["params"] else ""), b["recipe"], b["summary"],
             "; ".join(f"{name}: {outcome}" for name, outcome in b["builds"].items())]
            for b in sorted(doc.builds_agree or [], key=lambda b: (claim_order(b["claim"]), b["test"]))]
    return header, rows


BUILDS_NOTE = ("The same recipe trained at S4's other seeds (the seed siblings) is another set of weights: where "
               "the builds disagree, a verdict follows the training run as much as the recipe. Each build keeps "
               "its own verdict in the matrix.")


def plateau(model: dict) -> str:
    """A trained model's plateau (issue 77; ``models.plateau``): "no: 1.79 → 1.70 bits/char at 700 → 1400 steps
    (5.1 % lower)", "yes: ...", "not measured" for a trained model without a measurement, "" for others."""
    p = model.get("plateau")
    if not p:
        return "not measured" if model.get("role") == "trained" else ""
    verdict = "yes" if p["at_plateau"] else "no"
    return (f"{verdict}: {p['bits_per_character']:.4g} → {p['doubled_bits_per_character']:.4g} bits/char at "
            f"{p['steps']} → {p['doubled_steps']} steps ({p['lowered']:.1%} lower)")


def model_rows(doc: RunDocument) -> tuple[list[str], list[list[str]]]:
    """The models table: size, training, the residual-identity check, timings, or the load error."""
    header = ["model", "role", "arch", "params", "d_model", "blocks", "train s", "val loss", "trained to a plateau",
              "identity error", "forward s", "capture s", "captured"]
    rows = []
    for name, m in (doc.models or {}).items():
        if "error" in m:
            rows.append([name, m["role"], "ERROR: " + m["error"][:300]] + [""] * 10)
            continue
        ident = m.get("residual_identity") or {}
        rows.append([name, m["role"], m["architecture"], f"{m['n_params']:,}", str(m["d_model"]), str(m["n_blocks"]),
                     fmt(m["train_seconds"] and round(m["train_seconds"], 1)), fmt(m["final_val_loss"]), plateau(m),
                     f"{fmt(ident.get('max_relative_error'))} (≤ {fmt(ident.get('tolerance'))})" if ident else "—",
                     fmt(m["forward_seconds"]), fmt(m["capture_seconds"]), str(len(m.get("captured") or [])) + " names"])
    return header, rows




def family(claim_id: str) -> str:
    """A claim's family, the source it comes from: "S3.7" -> "S3"."""
    return claim_id.split(".")[0]


def time_rows(doc: RunDocument) -> tuple[list[str], list[list[str]]]:
    """Where the run's time went: per claim, then per family (S0 ... S4), the wall seconds of its tests (each
    record's ``wall_seconds``; the first test of a model also loads, checks and captures it), its slowest test and
    its share of the total."""
    timed = [r for r in doc.records if r.wall_seconds is not None]
    total = sum(r.wall_seconds for r in timed) or 1.0
    header = ["claim or family", "tests", "wall s", "share", "slowest test (s)"]

    def row(name: str, records: list[ClaimRecord]) -> list[str]:
        seconds = sum(r.wall_seconds for r in records)
        slowest = max(records, key=lambda r: r.wall_seconds)
        return [name, str(len(records)), f"{seconds:.1f}", f"{seconds / total:.1%}",
                f"{label(slowest)} {test_name(slowest)} ({slowest.wall_seconds:.1f})"]

    claims = sorted({r.claim for r in timed}, key=claim_order)
    rows = [row(c, [r for r in timed if r.claim == c]) for c in claims]
    rows += [row(f"{f} (family)", [r for r in timed if family(r.claim) == f])
             for f in dict.fromkeys(family(c) for c in claims)]
    return header, rows
