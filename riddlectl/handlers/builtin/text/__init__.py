"""The `text` family: UTF-8 text data items (`*.txt`), read by the `text` extractor.

`facts` is the assignment reader (`x = 10`, `Let y be twenty`, `z := x + y`, numbers
in digits or words) that every other extractor also sends what it read through;
`extractor` is the handler that reads a text file with it.

The registry loads `extractor` (the handler) and `version` (its cache identity) from
here; neither needs anything beyond riddlectl's own dependencies.
"""

from __future__ import annotations

from riddlectl.handlers.builtin.text.extractor import text_extractor as extractor
from riddlectl.handlers.builtin.text.extractor import text_version as version

__all__ = ["extractor", "version"]
