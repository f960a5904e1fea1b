"""The `ocr` extractor: assignments read from images of notes with Tesseract.

The image is opened with bounds (`files`), read as one line by several recipes that
vote (`lines`), or, when no recipe finds an assignment there, as a block of lines;
what was read goes through the text extractor's assignment reader. The extraction keeps,
beside `variables`, `formulas` and `numbers`, the text read, the image's size, every
word with its box in the image's pixels, and how sure the reading is.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import time
from typing import TYPE_CHECKING, Any

from riddlectl.errors import HandlerRefused
from riddlectl.handlers.base import Job, code_version
from riddlectl.handlers.builtin.images import engine, files, lines, page, prep
from riddlectl.handlers.builtin.images.prep import PREPARATIONS, prepare
from riddlectl.handlers.builtin.text.facts import extract_facts

if TYPE_CHECKING:
    from PIL import Image

#: Part of the extraction cache key, with Tesseract's version and a digest of the code.
OCR_VERSION = "1"
#: The share of the handler timeout an image may take to read: reading stops then, and
#: the riddle fails in its own words. Half, since the deadline is checked between steps
#: and one step of Tesseract on a large speckled image can take some 20 s.
TIME_SHARE = 0.5


class OcrExtractor:
    """The handler: what an image data item assigns, with the words and boxes it was read
    from. Its cache identity (`current_version`) is computed when an image is extracted,
    so agents that never see one never load Tesseract."""

    types = frozenset({"image"})

    def __call__(self, job: Job) -> dict[str, Any]:
        assert job.item_path is not None
        where = job.riddle.data[job.item_index or 0].file_plain
        budget = job.timeout * TIME_SHARE
        started = time.monotonic()
        image = files.open_image(job.item_path, where)
        try:
            with engine.deadline(budget - (time.monotonic() - started)):
                return read_image(image)
        except engine.TimeUp:
            raise HandlerRefused(
                f"{where}: reading the image takes longer than the {budget:g} s it may "
                f"(the handler timeout is {job.timeout:g} s)"
            ) from None
        except prep.TooNoisy:
            raise HandlerRefused(
                f"{where}: the image is mostly noise: no preparation of it looks like text"
            ) from None

    def current_version(self) -> str:
        return ocr_version()


def read_image(original: Image.Image) -> dict[str, Any]:
    """The extraction of a grey image (see the module's docstring)."""
    width, height = original.size
    if width < 2 or height < 2:
        raise HandlerRefused(f"the image is {width}x{height} pixels: nothing to read")
    image, shrink = _within(original)
    pieces = page.read_rows(image)
    if not any(piece.reading.assignment for piece in pieces):
        pieces = [_block(image)]
    text = "\n".join(piece.reading.text for piece in pieces)
    confidences = [piece.reading.recognition.confidence for piece in pieces]
    return {
        **(extract_facts(text).to_json() if len(pieces) > 1 else pieces[0].reading.facts),
        "text": text,
        "confidence": round(sum(confidences) / len(confidences) / 100, 2),
        "agreement": f"{sum(p.agreeing for p in pieces)}/{sum(p.tried for p in pieces)}",
        "image": {"width": width, "height": height},
        "words": [word for piece in pieces for word in _words(piece, shrink)],
    }


def _block(image: Image.Image) -> page.Piece:
    """The image read once as a block of lines: the last resort for what no line
    reading found an assignment in."""
    prepared, scale = prepare(image, PREPARATIONS[0])
    if prep.busy(prepared) > prep.MAX_BUSY:
        raise prep.TooNoisy
    recognition = engine.recognise(prepared, whitelist=False, single_line=False)
    facts = extract_facts(recognition.text).to_json()
    return page.Piece(lines.LineReading(recognition.text, facts, recognition, scale), 1, 1, (0, 0))


def _words(piece: page.Piece, shrink: float) -> list[dict[str, Any]]:
    """The piece's words with their boxes in the original image's pixels."""
    left, top = piece.origin
    out = []
    for text, confidence, box in _tokens(piece.reading.recognition):
        x0, y0, x1, y1 = piece.reading.in_image(box)
        edges = (x0 + left, y0 + top, x1 + left, y1 + top)
        box_ = [round(edge / shrink) for edge in edges]
        out.append({"text": text, "confidence": round(confidence / 100, 2), "box": box_})
    return out


def _tokens(recognition: engine.Recognition) -> list[tuple[str, float, engine.Box]]:
    """Each word read, with its box; a word holding an `=` or `:` (`y=15`, as Tesseract
    often reads a tight assignment) split into its parts, each with its letters' box."""
    out: list[tuple[str, float, engine.Box]] = []
    for index, word in enumerate(recognition.words):
        letters = [s for s in recognition.symbols if s.word == index]
        if not any(s.text in "=:" for s in letters) or len(letters) < 2:
            if word.text.strip():
                out.append((word.text.strip(), word.confidence, word.box))
            continue
        run: list[engine.Symbol] = []
        for letter in [*letters, None]:
            if letter is None or letter.text in "=:" or (run and run[-1].text in "=:"):
                if run:
                    out.append(("".join(s.text for s in run), word.confidence, _union(run)))
                run = []
            if letter is not None:
                run.append(letter)
    return out


def _union(letters: list[engine.Symbol]) -> engine.Box:
    return (
        min(s.box[0] for s in letters),
        min(s.box[1] for s in letters),
        max(s.box[2] for s in letters),
        max(s.box[3] for s in letters),
    )


def _within(image: Image.Image) -> tuple[Image.Image, float]:
    """The image scaled down to `prep.MAX_SIDE` when larger (Tesseract's time grows
    with the pixels), and the factor it was scaled by."""
    from PIL import Image

    factor = min(1.0, prep.MAX_SIDE / max(image.size))
    if factor == 1.0:
        return image, 1.0
    size = (max(1, round(image.width * factor)), max(1, round(image.height * factor)))
    return image.resize(size, Image.Resampling.BOX), factor


#: The handler, as the registry names it.
ocr_extractor = OcrExtractor()


@functools.cache
def ocr_version() -> str:
    """The extractor's version and a digest of the code that reads images and of
    Tesseract's version and languages (`1.5d1e07a2`); the engine's version is read only
    when an image is extracted."""
    try:
        tesseract = engine.version()
    except HandlerRefused:
        tesseract = "missing"
    digest = hashlib.sha256(f"{ocr_code_version()}\0{tesseract}".encode()).hexdigest()[:8]
    return f"{OCR_VERSION}.{digest}"


@functools.cache
def ocr_code_version() -> str:
    """The extractor's version and a digest of the code that reads images, without
    loading Tesseract (the registry asks for it when an agent starts); the handler's
    `current_version` adds Tesseract's own when an image is extracted."""
    from riddlectl.handlers.builtin.text import facts
    from riddlectl.handlers.builtin.words import numberphrases, numberwords

    this = sys.modules[__name__]
    ocr_modules = (this, files, engine, lines, page, prep)
    return code_version(OCR_VERSION, (*ocr_modules, facts, numberwords, numberphrases))
