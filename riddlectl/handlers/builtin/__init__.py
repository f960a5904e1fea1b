"""The built-in handlers, one subpackage per family, each saying in its `__init__` what it
reads:

- `words`: numbers written in words (no data file of its own);
- `arithmetic`: the question vocabulary, the exact parser and evaluator, and the
  gatekeeper's independent recheck (no data file of its own);
- `text`: `text` items, and the assignment reader every extractor shares;
- `tables`: `csv` and `json` items;
- `images`: `image` items (OCR), and the boxes of the words read in them;
- `speech`: `audio` items;
- `calculator`: the `calculator` solver and the `gatekeeper` validator.

Families import only those below them in that order (an import-linter contract). An
extractor family's `__init__` exposes `extractor` and `version`, which the registry loads
for the data types `riddlectl.document.datatypes` assigns to it.
"""
