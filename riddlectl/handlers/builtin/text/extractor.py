"""The `text` extractor: an adapter between the handler protocol (`handlers.Job` → dict)
and the assignment reader (`facts`)."""

from __future__ import annotations

import sys
from typing import Any

from riddlectl.document import datafiles, numbers
from riddlectl.errors import HandlerRefused, InvalidData
from riddlectl.handlers.base import Job, code_version
from riddlectl.handlers.builtin.text import facts
from riddlectl.handlers.builtin.text.facts import MAX_TEXT_BYTES, extract_facts
from riddlectl.handlers.builtin.words import numberphrases, numberwords

#: The text extractor's version, part of its cache key: "2" reads percentages, number
#: words beyond integers and one-letter names, and refuses what it cannot read exactly.
TEXT_VERSION = "2"


def text_version() -> str:
    """The `text` extractor's identity: its version and a digest of the code reading files."""
    modules = (sys.modules[__name__], numbers, numberwords, numberphrases, facts)
    return code_version(TEXT_VERSION, modules)


def text_extractor(job: Job) -> dict[str, Any]:
    """Variables, formulas and numbers found in a UTF-8 text file (read bounded)."""
    assert job.item_path is not None
    where = job.riddle.data[job.item_index or 0].file_plain
    try:
        content = datafiles.read(job.item_path, "text", MAX_TEXT_BYTES, where=where, field="")
        return extract_facts(content.decode("utf-8")).to_json()
    except InvalidData as exc:
        raise HandlerRefused(str(exc)) from None
    except ValueError as exc:
        raise HandlerRefused(f"{where}: {exc}") from None
