"""Tesseract through `tesserocr`: one engine per thread, words and letters with boxes.

`tesserocr`'s wheel bundles libtesseract; the language data comes from the system
(Debian's `tesseract-ocr-eng` and `-deu`), found in `TESSDATA_PREFIX` or the usual
places. Starting an engine loads the models (some 100 ms), so each thread keeps its own
(an engine is not thread-safe) and reuses it for every image.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from riddlectl.errors import HandlerRefused

if TYPE_CHECKING:
    from PIL import Image

INSTALL_HINT = "pip install 'riddlectl[ocr]'"
TESSDATA_DIRS = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
    "/opt/homebrew/share/tessdata",
)
LANGUAGES = ("deu", "eng")
#: What an assignment is written with: read with these only when the line is one.
WHITELIST = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZäöüÄÖÜß0123456789=.,:-+*/()% "

Box = tuple[int, int, int, int]  # left, top, right, bottom (pixels)
#: Largest side of the copy the layout analysis looks at.
LAYOUT_SIDE = 1600


@dataclass(frozen=True)
class Symbol:
    text: str
    box: Box
    choices: tuple[str, ...]  # other readings Tesseract considered, best first
    starts_word: bool
    word: int  # the index of its word in `Recognition.words`


@dataclass(frozen=True)
class Word:
    text: str
    confidence: float
    box: Box


@dataclass(frozen=True)
class Recognition:
    text: str
    confidence: float  # Tesseract's mean word confidence, 0-100
    words: tuple[Word, ...]
    symbols: tuple[Symbol, ...]


def tesserocr() -> Any:
    try:
        import tesserocr as module
    except ImportError:
        raise HandlerRefused(f"reading images needs tesserocr: {INSTALL_HINT}") from None
    return module


@functools.cache
def tessdata() -> tuple[str, str]:
    """(the tessdata directory, the languages to load: "eng+deu" or those present)."""
    candidates = []
    prefix = os.environ.get("TESSDATA_PREFIX")
    if prefix:
        candidates += [prefix, os.path.join(prefix, "tessdata")]
    candidates += TESSDATA_DIRS
    for directory in candidates:
        present = [lang for lang in LANGUAGES if Path(directory, f"{lang}.traineddata").is_file()]
        if "eng" in present or "deu" in present:
            return directory, "+".join(present)
    raise HandlerRefused(
        "no Tesseract language data (eng.traineddata) found: install Debian's "
        "tesseract-ocr-eng, or set TESSDATA_PREFIX to its directory"
    )


def version() -> str:
    """Tesseract's version and the languages read, for the extraction cache key."""
    module = tesserocr()
    first = str(module.tesseract_version()).split("\n", 1)[0].strip()
    return f"{first.replace('tesseract ', '')}+{tessdata()[1]}"


_local = threading.local()


def _engine() -> Any:
    api = getattr(_local, "api", None)
    if api is None:
        module = tesserocr()
        path, languages = tessdata()
        api = module.PyTessBaseAPI(path=path + os.sep, lang=languages, psm=module.PSM.SINGLE_LINE)
        api.SetVariable("lstm_choice_mode", "2")  # keep the alternatives of each letter
        _local.api = api
    return api


class TimeUp(Exception):
    """The time given to reading an image (`deadline`) ran out."""


_deadline: contextvars.ContextVar[float] = contextvars.ContextVar("deadline", default=math.inf)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Recognitions within the block stop, raising `TimeUp`, `seconds` from now."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def time_left() -> float:
    """Seconds before the deadline; `TimeUp` when it has passed."""
    left = _deadline.get() - time.monotonic()
    if left <= 0:
        raise TimeUp
    return left


def recognise(image: Image.Image, whitelist: bool, single_line: bool = True) -> Recognition:
    """What Tesseract reads in `image`: one line (`single_line`) or a block of lines.
    Tesseract stops at the deadline (`TimeUp`)."""
    module = tesserocr()
    api = _engine()
    api.SetPageSegMode(module.PSM.SINGLE_LINE if single_line else module.PSM.SINGLE_BLOCK)
    api.SetVariable("tessedit_char_whitelist", WHITELIST if whitelist else "")
    api.SetImage(image)
    left = time_left()
    if not api.Recognize(timeout=0 if math.isinf(left) else max(1, int(left * 1000))):
        api.Clear()
        raise TimeUp
    text = str(api.GetUTF8Text() or "").strip()
    confidence = float(api.MeanTextConf())
    words, symbols = _parts(module, api.GetIterator())
    api.Clear()
    return Recognition(text, confidence, words, symbols)


def line_boxes(image: Image.Image) -> list[Box]:
    """The boxes of the text lines (or pieces of lines) Tesseract's layout analysis finds,
    without recognising anything. It cannot be stopped, so it looks at a copy at most
    `LAYOUT_SIDE` px on a side (rows need no detail); the boxes are in `image`'s pixels."""
    from PIL import Image

    time_left()
    module = tesserocr()
    api = _engine()
    factor = min(1.0, LAYOUT_SIDE / max(image.size))
    if factor < 1.0:
        size = (max(1, round(image.width * factor)), max(1, round(image.height * factor)))
        image = image.resize(size, Image.Resampling.BOX)
    api.SetPageSegMode(module.PSM.AUTO)
    api.SetImage(image)
    found = api.GetComponentImages(module.RIL.TEXTLINE, True) or []
    api.Clear()
    return [
        (
            round(b["x"] / factor),
            round(b["y"] / factor),
            round((b["x"] + b["w"]) / factor),
            round((b["y"] + b["h"]) / factor),
        )
        for _, b, _, _ in found
    ]


def _parts(module: Any, iterator: Any) -> tuple[tuple[Word, ...], tuple[Symbol, ...]]:
    if iterator is None:
        return (), ()
    words: list[Word] = []
    symbols: list[Symbol] = []
    level = module.RIL
    for item in module.iterate_level(iterator, level.SYMBOL):
        try:
            text = item.GetUTF8Text(level.SYMBOL)
        except RuntimeError:  # an empty result: nothing read there
            continue
        box = item.BoundingBox(level.SYMBOL)
        starts_word = bool(item.IsAtBeginningOf(level.WORD))
        if starts_word:
            words.append(_word(item, level))
        choices = tuple(c.GetUTF8Text() for c in item.GetChoiceIterator())
        if text and box:
            symbols.append(Symbol(text, tuple(box), choices, starts_word, len(words) - 1))
    return tuple(words), tuple(symbols)


def _word(item: Any, level: Any) -> Word:
    try:
        text = item.GetUTF8Text(level.WORD)
    except RuntimeError:
        text = ""
    box = item.BoundingBox(level.WORD) or (0, 0, 0, 0)
    return Word(text, float(item.Confidence(level.WORD)), tuple(box))
