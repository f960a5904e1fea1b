"""The `speech` family: audio data items (`*.wav`, …), heard offline by the `speech`
extractor.

`wavfile` reads a WAV file into samples, `grammar` writes the grammar the recogniser
listens with (the riddle's variables), `recogniser` runs PocketSphinx; `extractor` is
the handler, which reads what was heard with the text family's assignment reader.

The registry loads `extractor` (the handler) and `version` (its cache identity) from
here; both import without the `audio` extra, which is loaded with the first recording.
"""

from __future__ import annotations

from riddlectl.handlers.builtin.speech.extractor import speech_extractor as extractor
from riddlectl.handlers.builtin.speech.extractor import version_of_code as version

__all__ = ["extractor", "version"]
