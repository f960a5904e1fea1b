"""The data types a riddle's data items may have, and which type a file name suggests.

A data item's `type` picks its extractor. The built-in types: `text`, `csv`, `json`
(read as UTF-8 text: submit refuses a file of these types that is not UTF-8), `image`
and `audio` (binary: only their size is checked at submit). Any other type is allowed
in a document, for extractors of one's own; submit checks its size only.
"""

from __future__ import annotations

import posixpath

#: Types whose files must be UTF-8 text.
TEXT_TYPES = frozenset({"text", "csv", "json"})
#: Types whose files are binary: never required to be UTF-8.
BINARY_TYPES = frozenset({"image", "audio"})
#: Every built-in data type.
BUILTIN_TYPES = TEXT_TYPES | BINARY_TYPES

#: File name extension (lower case, with the dot) -> data type; anything else is `text`.
EXTENSION_TYPES: dict[str, str] = {
    ".csv": "csv",
    ".json": "json",
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp"), "image"),
    **dict.fromkeys((".wav", ".flac", ".ogg", ".mp3"), "audio"),
}


def type_for(file_name: str) -> str:
    """The data type `submit --data FILE` gives a file: by its extension, case ignored
    (`t.CSV` is csv); `text` for every other name, `.txt` and none included."""
    return EXTENSION_TYPES.get(posixpath.splitext(file_name)[1].lower(), "text")
