"""The `images` family: image data items (`*.png`, `*.jpg`, …), read by the `ocr`
extractor with Tesseract.

`files` opens an image with bounds, `prep` prepares a line for Tesseract, `engine` runs
Tesseract (`tesserocr`), `lines` reads a line by several recipes that vote, `page` cuts
an image into its lines; `extractor` is the handler. `wordboxes` is the gatekeeper's
check of points against the words read in an image.

The registry loads `extractor` (the handler) and `version` (its cache identity, without
Tesseract's) from here; both import without the `ocr` extra, which is loaded with the
first image.
"""

from __future__ import annotations

from riddlectl.handlers.builtin.images.extractor import ocr_code_version as version
from riddlectl.handlers.builtin.images.extractor import ocr_extractor as extractor

__all__ = ["extractor", "version"]
