"""The ``table`` extractor: CSV and JSON data items, as name/value tables.

An adapter between the handler protocol and the readers `csvtable` and `jsontable`: the
item's type picks the reader; a file that cannot be read as a table is refused
(`HandlerRefused`, so the riddle fails at once) with the file and the line at fault.
"""

from __future__ import annotations

import sys
from typing import Any

from riddlectl.document import datafiles, numbers
from riddlectl.errors import HandlerRefused, InvalidData
from riddlectl.handlers.base import Job, code_version
from riddlectl.handlers.builtin.arithmetic import evaluation, nodes, parser, rendering, tokens
from riddlectl.handlers.builtin.tables import cells, csvtable, jsontable
from riddlectl.handlers.builtin.text import facts
from riddlectl.handlers.builtin.words import numberphrases, numberwords

#: The extractor's version, part of its cache key (with a digest of its code).
TABLE_VERSION = "1"

_READERS = {"csv": csvtable.read_csv, "json": jsontable.read_json}


def table_extractor(job: Job) -> dict[str, Any]:
    """Variables, formulas and numbers of a CSV or JSON file (read bounded)."""
    assert job.item_path is not None
    item = job.riddle.data[job.item_index or 0]
    reader = _READERS.get(item.type)
    if reader is None:
        raise HandlerRefused(
            f"{item.file_plain}: the table extractor reads csv and json, not {item.type!r}"
        )
    try:
        content = datafiles.read(
            job.item_path, item.type, cells.MAX_TABLE_BYTES, where=item.file_plain, field=""
        )
        return reader(content.decode("utf-8")).to_json()
    except InvalidData as exc:
        raise HandlerRefused(str(exc)) from None
    except cells.TableError as exc:
        raise HandlerRefused(f"{item.file_plain}: {exc}") from None


def table_version() -> str:
    """The extractor's identity: its version and a digest of the code reading tables."""
    modules = (
        sys.modules[__name__],
        csvtable,
        jsontable,
        cells,
        facts,
        nodes,
        tokens,
        parser,
        evaluation,
        rendering,
        numbers,
        numberwords,
        numberphrases,
    )
    return code_version(TABLE_VERSION, modules)
