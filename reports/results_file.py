"""Reading a results.json that another run wrote: ``--baseline PATH`` and ``python -m reports merge`` read it here.

A file is accepted when it is UTF-8 JSON, an object whose ``schema`` this version reads, with a list of records
that each have the keys the comparison and the merge use. Anything else is a :class:`ResultsFileError` saying what
is wrong; the caller adds what the user should do.
"""

import json
from pathlib import Path


SCHEMA = "latent-claims/results/9"  # what this version writes, documented key by key in reports/SCHEMA.md
# what it reads: 5 only added keys (looks, a check's n, level); 6 a control's status "inconclusive", zoo_build and
# wall_seconds, which the comparison and the merge read where present; 7 user groups and record identity; 8 a
# check's `undecidable`; 9 a check's `key`
READABLE = ("latent-claims/results/4", "latent-claims/results/5", "latent-claims/results/6",
            "latent-claims/results/7", "latent-claims/results/8", SCHEMA)
RECORD_KEYS = ("claim", "model", "test", "outcome", "checks")  # every record has these
CHECK_KEYS = ("name", "value", "ci_low", "ci_high")  # and every check of a record these


class ResultsFileError(ValueError):
    """A results.json that cannot be read: missing, unreadable, not JSON, another schema, or damaged records.

    Attributes:
        other_schema: the file is a latent-claims results.json of a schema this version does not read.
    """

    def __init__(self, message: str, other_schema: bool = False):
        super().__init__(message)
        self.other_schema = other_schema


def read_results(path: str | Path) -> dict:
    """The results document at ``path``.

    Args:
        path: a results.json file.
    Returns:
        the document (keys in reports/SCHEMA.md).
    Raises:
        ResultsFileError: "is a folder, not a file", "no such file", "cannot be read (...)", "is not UTF-8 text
            (...)", "is not JSON (...)", "holds a JSON list, not ...", "has schema '...', expected '...'" (with
            ``other_schema`` set when it is an older or newer latent-claims schema), "has no list of 'records'",
            "record N (test) lacks KEYS".
    """
    path = Path(path)
    if not path.is_file():
        raise ResultsFileError("is a folder, not a file" if path.is_dir() else "no such file")
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as err:
        raise ResultsFileError(f"cannot be read ({err.strerror})") from None
    except UnicodeDecodeError as err:
        raise ResultsFileError(f"is not UTF-8 text (byte offset {err.start})") from None
    except json.JSONDecodeError as err:
        raise ResultsFileError(f"is not JSON ({err.msg}: line {err.lineno} column {err.colno})") from None
    if not isinstance(doc, dict):
        raise ResultsFileError(f"holds a JSON {type(doc).__name__.replace('dict', 'object')}, not a latent-claims "
                               f"results.json (an object with schema {SCHEMA!r})")
    schema = doc.get("schema")
    if schema not in READABLE:
        found = "no 'schema' key" if schema is None else f"schema {schema!r}"
        raise ResultsFileError(f"has {found}, expected {SCHEMA!r} (not a results.json of this version of "
                               "latent-claims)", other_schema=isinstance(schema, str)
                               and schema.startswith("latent-claims/results/"))
    records = doc.get("records")
    if not isinstance(records, list):
        raise ResultsFileError("has no list of 'records'")
    for i, record in enumerate(records):
        missing = [k for k in RECORD_KEYS if not isinstance(record, dict) or k not in record]
        if not missing and isinstance(record["checks"], list):
            missing = [f"checks[{j}].{k}" for j, c in enumerate(record["checks"])
                       for k in CHECK_KEYS if not isinstance(c, dict) or k not in c]
        if missing:
            name = record.get("test") if isinstance(record, dict) else None
            raise ResultsFileError(f"record {i}{f' ({name})' if name else ''} lacks {', '.join(missing)}: the file "
                                   "is damaged or hand-edited")
    return doc


def newer_schema(path: str | Path) -> bool:
    """Whether ``path`` is a latent-claims results.json of a newer schema than this version's (its number above
    ``SCHEMA``'s); False for anything else, unreadable files included."""
    try:
        schema = json.loads(Path(path).read_bytes().decode("utf-8")).get("schema", "")
        return int(schema.rsplit("/", 1)[-1]) > int(SCHEMA.rsplit("/", 1)[-1])
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        return False
