"""The `tables` family: CSV (`*.csv`) and JSON (`*.json`) data items, read by the
`table` extractor as name/value tables.

`csvtable` and `jsontable` read the two formats, `cells` what they share (names, one
value read as the text reader reads it, the limits); `extractor` is the handler that
picks the reader by the item's type.

The registry loads `extractor` (the handler) and `version` (its cache identity) from
here; neither needs anything beyond riddlectl's own dependencies.
"""

from __future__ import annotations

from riddlectl.handlers.builtin.tables.extractor import table_extractor as extractor
from riddlectl.handlers.builtin.tables.extractor import table_version as version

__all__ = ["extractor", "version"]
