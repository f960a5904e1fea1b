"""The `ocr` extractor: assignments read from images of notes with Tesseract.

The image is opened with bounds (`imagefiles`), read as one line by several recipes that
vote (`ocrlines`), or, when no recipe finds an assignment there, as a block of lines;
what was read goes through the text extractor's assignment reader. The extraction keeps,
beside `variables`, `formulas` and `numbers`, the text read, the image's size, every
word with its box in the image's pixels, and how sure the reading is.
"""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING, Any

from riddlectl.errors import HandlerRefused
from riddlectl.handlers.base import Job, file_digest
from riddlectl.handlers.builtin import imagefiles, ocrengine, ocrlines, ocrprep
from riddlectl.handlers.builtin.ocrprep import PREPARATIONS, prepare
from riddlectl.handlers.builtin.textfacts import extract_facts

if TYPE_CHECKING:
    from PIL import Image

#: Part of the extraction cache key, with Tesseract's version and a digest of the code.
OCR_VERSION = "1"


class OcrExtractor:
    """The handler: what an image data item assigns, with the words and boxes it was read
    from. Its cache identity (`current_version`) is computed when an image is extracted,
    so agents that never see one never load Tesseract."""

    types = frozenset({"image"})

    def __call__(self, job: Job) -> dict[str, Any]:
        assert job.item_path is not None
        where = job.riddle.data[job.item_index or 0].file_plain
        image = imagefiles.open_image(job.item_path, where)
        return read_image(image)

    def current_version(self) -> str:
        return ocr_version()


def read_image(original: Image.Image) -> dict[str, Any]:
    """The extraction of a grey image (see the module's docstring)."""
    width, height = original.size
    if width < 2 or height < 2:
        raise HandlerRefused(f"the image is {width}x{height} pixels: nothing to read")
    image, shrink = _within(original)
    line, agreeing, tried = ocrlines.read_line(image)
    text, facts, recognition, scale = line.text, line.facts, line.recognition, line.scale
    if not line.assignment:
        block_image, scale = prepare(image, PREPARATIONS[0])
        recognition = ocrengine.recognise(block_image, whitelist=False, single_line=False)
        text = recognition.text
        facts = extract_facts(text).to_json()
        agreeing = tried = 1
    return {
        **facts,
        "text": text,
        "confidence": round(recognition.confidence / 100, 2),
        "agreement": f"{agreeing}/{tried}",
        "image": {"width": width, "height": height},
        "words": [
            {
                "text": text,
                "confidence": round(confidence / 100, 2),
                "box": [round(edge / scale / shrink) for edge in box],
            }
            for text, confidence, box in _tokens(recognition)
        ],
    }


def _tokens(recognition: ocrengine.Recognition) -> list[tuple[str, float, ocrengine.Box]]:
    """Each word read, with its box; a word holding an `=` or `:` (`y=15`, as Tesseract
    often reads a tight assignment) split into its parts, each with its letters' box."""
    out: list[tuple[str, float, ocrengine.Box]] = []
    for index, word in enumerate(recognition.words):
        letters = [s for s in recognition.symbols if s.word == index]
        if not any(s.text in "=:" for s in letters) or len(letters) < 2:
            if word.text.strip():
                out.append((word.text.strip(), word.confidence, word.box))
            continue
        run: list[ocrengine.Symbol] = []
        for letter in [*letters, None]:
            if letter is None or letter.text in "=:" or (run and run[-1].text in "=:"):
                if run:
                    out.append(("".join(s.text for s in run), word.confidence, _union(run)))
                run = []
            if letter is not None:
                run.append(letter)
    return out


def _union(letters: list[ocrengine.Symbol]) -> ocrengine.Box:
    return (
        min(s.box[0] for s in letters),
        min(s.box[1] for s in letters),
        max(s.box[2] for s in letters),
        max(s.box[3] for s in letters),
    )


def _within(image: Image.Image) -> tuple[Image.Image, float]:
    """The image scaled down to `ocrprep.MAX_SIDE` when larger (Tesseract's time grows
    with the pixels), and the factor it was scaled by."""
    from PIL import Image

    factor = min(1.0, ocrprep.MAX_SIDE / max(image.size))
    if factor == 1.0:
        return image, 1.0
    size = (max(1, round(image.width * factor)), max(1, round(image.height * factor)))
    return image.resize(size, Image.Resampling.BOX), factor


@functools.cache
def ocr_version() -> str:
    """The extractor's version, Tesseract's and its languages, and a digest of the code
    that reads images; the OCR engine's version is read only when an image is extracted."""
    from riddlectl.handlers.builtin import numberphrases, numberwords, textfacts

    modules = (imagefiles, ocrengine, ocrlines, ocrprep, textfacts, numberwords, numberphrases)
    digests = [file_digest(m.__file__ or "") or "-" for m in modules]
    digests.append(file_digest(__file__) or "-")
    code = hashlib.sha256("\0".join(digests).encode()).hexdigest()[:8]
    try:
        engine = ocrengine.version()
    except HandlerRefused:
        engine = "missing"
    return f"{OCR_VERSION}.{engine}.{code}"
