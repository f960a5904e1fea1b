"""The `speech` extractor: spoken assignments in WAV recordings, heard offline.

``x equals twenty`` in a recording becomes ``{"variables": {"x": "20"}, ...}`` as the
`text` extractor would read it from text: the words heard are normalised (``zed`` is
``z``, ``oh`` after ``point`` is zero, ``negative`` is ``minus``, a name the question
writes in capitals gets its capitals back) and read by the same reader
(:func:`riddlectl.handlers.builtin.text.facts.extract_facts`).  Beside the shared fields
the extraction says what was heard (``heard``), how sure the recogniser is
(``confidence``, the posterior probability of what it heard, 0-1), the names it
listened for (``listened_for``) and the recording's format (``audio``).

The recogniser listens with a grammar favouring the variables of the riddle's question
(`grammar`); its cache key therefore includes those names (`riddle_version`), so
two riddles that share a recording but not their variables each hear it themselves.

`pocketsphinx` and `numpy` (the `audio` extra) are imported on the first recording, not
before; without them the riddle fails in one line naming the extra.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from riddlectl.document.model import Riddle
from riddlectl.errors import HandlerRefused
from riddlectl.handlers.base import Job, file_digest
from riddlectl.handlers.builtin.speech.grammar import SPOKEN, vocabulary
from riddlectl.handlers.builtin.text.facts import extract_facts

__all__ = ["MAX_AUDIO_SECONDS", "SpeechExtractor", "normalise", "speech_extractor"]

#: The extractor's own version, part of its cache key.
SPEECH_VERSION = "1"
#: Longest recording heard, in seconds, unless ``RIDDLECTL_MAX_AUDIO_SECONDS`` says.
MAX_AUDIO_SECONDS = 60.0
MAX_SECONDS_ENV = "RIDDLECTL_MAX_AUDIO_SECONDS"
EXTRA_HINT = "pip install 'riddlectl[audio]'"
# The modules whose code decides what is heard (hashed into the version), by their path
# under `handlers/builtin` (as files: `recogniser` cannot be imported without its extra).
_MODULES = (
    "speech/extractor",
    "speech/grammar",
    "speech/recogniser",
    "speech/wavfile",
    "text/facts",
    "words/numberwords",
)
_SAID_AS = {"oh": "zero", "negative": "minus", **SPOKEN}


class SpeechExtractor:
    """The handler: a callable taking a `Job`, with the versions the cache is keyed by."""

    def __call__(self, job: Job) -> dict[str, Any]:
        assert job.item_path is not None
        where = job.riddle.data[job.item_index or 0].file_plain
        try:
            from riddlectl.handlers.builtin.speech import recogniser, wavfile
        except ImportError as exc:
            raise HandlerRefused(
                f"{where}: audio needs {exc.name or 'pocketsphinx'}: {EXTRA_HINT}"
            ) from None
        names = vocabulary(job.riddle.riddle.question)
        words = {name.lower(): name for name in names}
        try:
            fmt, samples = wavfile.read_wav(str(job.item_path), max_seconds())
        except wavfile.AudioError as exc:
            raise HandlerRefused(f"{where}: {exc}") from None
        except OSError as exc:
            raise HandlerRefused(f"{where}: cannot be read: {exc.strerror}") from None
        heard = recogniser.hear(samples, fmt.rate, tuple(recogniser.known_words(set(words))))
        found = extract_facts(normalise(heard.text, words)).to_json()
        found.update(
            heard=heard.text,
            confidence=heard.confidence,
            language="en",
            listened_for=list(names),
            audio=fmt.described(),
        )
        return found

    def riddle_version(self, riddle: Riddle) -> str:
        """What of the riddle the extraction depends on: the names listened for."""
        names = ",".join(vocabulary(riddle.riddle.question))
        return hashlib.sha256(names.encode()).hexdigest()[:8]

    def current_version(self) -> str:
        return version_of_code()


speech_extractor = SpeechExtractor()


def max_seconds() -> float:
    """The longest recording heard: ``RIDDLECTL_MAX_AUDIO_SECONDS`` or 60."""
    raw = os.environ.get(MAX_SECONDS_ENV, "")
    try:
        value = float(raw) if raw else MAX_AUDIO_SECONDS
    except ValueError:
        value = MAX_AUDIO_SECONDS
    return value if value > 0 else MAX_AUDIO_SECONDS


def normalise(heard: str, names: dict[str, str]) -> str:
    """The recogniser's words as the text reader reads them: ``zed`` → ``z``, ``oh`` →
    ``zero``, ``negative`` → ``minus``, and a spoken name → the question's spelling of
    it (``names``: spoken word → name)."""
    words = [_SAID_AS.get(word, word) for word in re.sub(r"\(\d+\)", "", heard).split()]
    return " ".join(names.get(word, word) for word in words)


@cache
def version_of_code() -> str:
    """``SPEECH_VERSION.<digest>``: the digest of the PocketSphinx version installed and
    of the modules that read and hear, so that either changing extracts again."""
    try:
        engine = version("pocketsphinx")
    except PackageNotFoundError:
        engine = "none"
    builtin = Path(__file__).parent.parent
    digests = [file_digest(str(builtin / f"{module}.py")) or "-" for module in _MODULES]
    code = hashlib.sha256("\0".join([engine, *digests]).encode()).hexdigest()[:8]
    return f"{SPEECH_VERSION}.{code}"
