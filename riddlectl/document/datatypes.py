"""The data types a riddle's data items may have, which built-in extractor reads each, and
which type a file name suggests: the one table (`DATA_TYPES`) that `submit`'s extension
table, its UTF-8 check, the web form's list, the default extractors and the handler
registry all derive from.

A data item's `type` picks its extractor. The built-in types: `text`, `csv`, `json`
(read as UTF-8 text: submit refuses a file of these types that is not UTF-8), `image`
and `audio` (binary: only their size is checked at submit). Any other type is allowed
in a document, for extractors of one's own; submit checks its size only.

A new data type read by a built-in extractor is one row here (`register` adds one at
run time, as the tests do) and a family folder under `riddlectl/handlers/builtin/`.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass


@dataclass(frozen=True)
class DataType:
    name: str  # `data[].type`
    text: bool  # its files must be UTF-8 text
    extensions: tuple[str, ...]  # lower case, with the dot: what `submit --data` reads as it
    extractor: str  # the built-in extractor that reads it
    family: str  # the module of that extractor's family (its `extractor` and `version`)


_BUILTIN = "riddlectl.handlers.builtin"
_IMAGES = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp")

DATA_TYPES: list[DataType] = [
    DataType("text", True, (".txt",), "text", f"{_BUILTIN}.text"),
    DataType("csv", True, (".csv",), "table", f"{_BUILTIN}.tables"),
    DataType("json", True, (".json",), "table", f"{_BUILTIN}.tables"),
    DataType("image", False, _IMAGES, "ocr", f"{_BUILTIN}.images"),
    DataType("audio", False, (".wav", ".flac", ".ogg", ".mp3"), "speech", f"{_BUILTIN}.speech"),
]


def register(data_type: DataType) -> None:
    """Add (or replace) a data type and the built-in extractor that reads it."""
    DATA_TYPES[:] = [known for known in DATA_TYPES if known.name != data_type.name]
    DATA_TYPES.append(data_type)


def builtin_types() -> tuple[str, ...]:
    """Every built-in data type, in the table's order."""
    return tuple(known.name for known in DATA_TYPES)


def text_types() -> frozenset[str]:
    """Types whose files must be UTF-8 text."""
    return frozenset(known.name for known in DATA_TYPES if known.text)


def extractors() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each built-in extractor: its family's module and the types it reads, in order."""
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    for known in DATA_TYPES:
        family, types = found.get(known.extractor, (known.family, ()))
        found[known.extractor] = (family, (*types, known.name))
    return found


def type_for(file_name: str) -> str:
    """The data type `submit --data FILE` gives a file: by its extension, case ignored
    (`t.CSV` is csv); `text` for every other name, `.txt` and none included."""
    extension = posixpath.splitext(file_name)[1].lower()
    for known in DATA_TYPES:
        if extension in known.extensions:
            return known.name
    return "text"
