"""How a ledger entry is found for a record: the default ledger file and the lookup by a record's fields.

Both the plugin (``fixtures.ledger``, which reads the ledger and applies it as strict xfails) and the report
(``reports.ledger_text``, which writes the measured part of each why) need these; they live here, on the report's
side, so that the report never imports the plugin.
"""

from pathlib import Path

LEDGER = Path(__file__).resolve().parent.parent / "claims" / "expected_verdicts.toml"  # the default --ledger


def find(ledger: dict, claim: str, model: str, variant: str, test: str):
    """The entry for one test instance, from a ledger keyed by (claim, model, variant, test): the entry limited to
    its test function, else the one for every test of the claim; None where there is neither."""
    return ledger.get((claim, model, variant, test)) or ledger.get((claim, model, variant, ""))
