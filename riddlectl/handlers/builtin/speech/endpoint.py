"""`transcribe:MODEL`: audio data heard by a recogniser behind an OpenAI-compatible
`POST /v1/audio/transcriptions` endpoint (OpenAI, whisper.cpp's server, vLLM, speaches,
`scripts/transcribe-server`).

The recording is checked as the built-in `speech` extractor checks it (a WAV file within
the duration limit, from its header) and sent as multipart form data with `model`,
`language` (`en`: the words are read as English), `response_format=verbose_json` and a
`prompt` naming the riddle's variables, which steers the recogniser towards them.  The
base URL and key are those of `openai:` handlers (`openai_base_url`, `OPENAI_API_KEY`);
statuses, retries and `Retry-After` are those of every endpoint (`transport`).

What comes back goes through the `speech` extractor's normaliser and the text reader, and
must assign one of the riddle's variables (else `NotHeard`, a refusal); the confidence
is the server's own: the mean of its segments' `exp(avg_logprob)`, times one minus their
largest `no_speech_prob`.  The cache is keyed by the model's name (the handler's), the
base URL and the names the prompt gives.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from typing import Any

import orjson

from riddlectl.document.model import Riddle
from riddlectl.errors import ConfigError, HandlerFailed, HandlerRefused
from riddlectl.handlers.base import Job
from riddlectl.handlers.builtin.speech.extractor import max_seconds, normalise
from riddlectl.handlers.builtin.speech.grammar import vocabulary
from riddlectl.handlers.builtin.speech.wavfile import AudioError, check_wav
from riddlectl.handlers.builtin.text.facts import extract_facts
from riddlectl.handlers.transport import Endpoint, endpoint_url
from riddlectl.settings import OPENAI_KEY_VAR, Settings

__all__ = ["NotHeard", "TranscribeExtractor", "confidence_of", "spoken_text"]

ROUTE = "/audio/transcriptions"
LANGUAGE = "en"
# Letters as a recogniser writing words may spell them; `be` and `see` are left alone
# (`let x be`, and too common to be names).
_LETTER_WORDS = {
    "ex": "x", "why": "y", "zee": "z", "zed": "z", "en": "n", "bee": "b", "kay": "k",
    "em": "m", "el": "l", "ar": "r", "es": "s", "tee": "t", "vee": "v", "dee": "d",
    "eff": "f", "gee": "g", "jay": "j", "pee": "p", "queue": "q", "cue": "q", "you": "u",
}  # fmt: skip
# Sentence punctuation, not the sign, decimal point or digit group of a number.
_PUNCTUATION = re.compile(r"[\"“”!?;:]|[.,](?!\d)|(?<!\d)[.,]")
_SENTENCES = re.compile(r"[.!?;](?=\s|$)")
_SAMPLE_VALUES = ("20", "15", "3", "104", "7")
# How Whisper-like recognisers write numbers said in words: `2 hundred`, `100 and 4`
# (one hundred and four); and `equals to`, `equal to` (`is` not heard) for `equals`.
_SCALED = re.compile(r"\b(\d+) (hundred|thousand|million)\b")
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_AND_MORE = re.compile(r"\b(\d{1,3}(?:,\d{3})+|\d+) and (\d+)\b")
_EQUALS_TO = re.compile(r"\b(?:(?<!is )equal|equals) to\b")


class NotHeard(HandlerRefused):
    """The recogniser heard words that assign none of the riddle's variables."""

    def __init__(self, message: str, heard: str) -> None:
        super().__init__(message)
        self.heard = heard


class TranscribeExtractor:
    threaded = True  # waits on the network: run in a thread (see `pipeline.stages.call`)
    types = ("audio",)

    def __init__(self, model: str, settings: Settings) -> None:
        if not model:
            raise ConfigError("expected transcribe:MODEL", where="transcribe:")
        self.name = f"transcribe:{model}"
        self.model = model
        self.base_url = endpoint_url(
            settings.openai_base_url, self.name, "openai_base_url (OPENAI_BASE_URL)"
        ).rstrip("/")
        key = os.environ.get(OPENAI_KEY_VAR, "")
        self.headers = {"authorization": f"Bearer {key}"} if key else {}
        self.endpoint = Endpoint(self.base_url + ROUTE, settings.endpoint_concurrency, [key])

    def current_version(self) -> str:
        return self.base_url

    def riddle_version(self, riddle: Riddle) -> str:
        """The names the prompt gives, which change what is heard."""
        names = ",".join(vocabulary(riddle.riddle.question))
        return hashlib.sha256(names.encode()).hexdigest()[:8]

    def __call__(self, job: Job) -> dict[str, Any]:
        assert job.item_path is not None
        where = job.riddle.data[job.item_index or 0].file_plain
        try:
            fmt = check_wav(str(job.item_path), max_seconds())
            content = job.item_path.read_bytes()
        except AudioError as exc:
            raise HandlerRefused(f"{where}: {exc}") from None
        except OSError as exc:
            raise HandlerRefused(f"{where}: cannot be read: {exc.strerror}") from None
        names = vocabulary(job.riddle.riddle.question)
        fields = {
            "model": self.model,
            "language": LANGUAGE,
            "response_format": "verbose_json",
            "prompt": prompt_for(names),
        }
        body, content_type = multipart(fields, os.path.basename(where), content)
        headers = {**self.headers, "content-type": content_type}
        reply = self.endpoint.post(self.name, body, headers, job.timeout)
        text, segments = self._read(reply.body)
        found = heard_assignment(text, names)
        if found is None:
            wanted = ", ".join(names) or "any name"
            raise NotHeard(f"{where}: heard {text!r}, not one assignment to {wanted}", text)
        found.update(
            heard=text,
            confidence=confidence_of(segments),
            language=LANGUAGE,
            listened_for=list(names),
            recogniser={"model": self.model, "segments": segments},
            audio=fmt.described(),
        )
        return found

    def _read(self, body: bytes) -> tuple[str, list[dict[str, float]]]:
        """The text and the segments' scores of a `verbose_json` reply; an error (tried
        again) for anything else."""
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            shown = body[:80].decode("utf-8", "replace")
            raise HandlerFailed(f"{self.name}: the reply is not JSON: {shown!r}") from None
        text = data.get("text") if isinstance(data, dict) else None
        if not isinstance(text, str):
            raise HandlerFailed(f'{self.name}: the reply has no transcription (no "text")')
        raw = data.get("segments")
        segments = []
        for segment in raw if isinstance(raw, list) else []:
            if not isinstance(segment, dict):
                continue
            segments.append(
                {
                    k: float(segment[k])
                    for k in ("avg_logprob", "no_speech_prob")
                    if _number(segment.get(k))
                }
            )
        return text.strip(), segments


def heard_assignment(text: str, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The extraction of the one assignment to a riddle's name that ``text`` says, read
    sentence by sentence; None when it says none, or different ones (a recording holds
    one assignment: a recogniser looping, `n is 20. x equals 21.`, heard nothing sure),
    or one whose value cannot be read.  The same assignment repeated is heard once."""
    found: dict[str, Any] | None = None
    assigned: set[tuple[str, str]] = set()
    for sentence in _SENTENCES.split(text):
        facts = extract_facts(spoken_text(sentence, names)).to_json()
        if any(name in facts.get("unreadable", {}) for name in names):
            return None
        said = {(n, v) for n, v in facts["variables"].items() if n in names}
        if said and found is None:
            found = facts
        assigned |= said
    return found if len(assigned) == 1 else None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def prompt_for(names: tuple[str, ...]) -> str:
    """Example assignments to the riddle's names (`x equals 20. y is 15.`): a prompt in
    the style of what is said, which Whisper-like recognisers continue."""
    shown = names[:10] or ("x",)
    said = [
        f"{name} {'equals' if i % 2 == 0 else 'is'} {_SAMPLE_VALUES[i % len(_SAMPLE_VALUES)]}."
        for i, name in enumerate(shown)
    ]
    return " ".join(said)


def spoken_text(text: str, names: tuple[str, ...]) -> str:
    """A transcription as the text reader reads it: sentence punctuation dropped, lower
    case, letters spelt as words (`why`, `zed`) made letters, and then the `speech`
    extractor's normaliser (a name written in capitals in the question gets them back)."""
    words = _PUNCTUATION.sub(" ", text).lower().split()
    spelt = " ".join(_LETTER_WORDS.get(word, word) for word in words)
    return normalise(_numbers_as_digits(spelt), {name.lower(): name for name in names})


def _numbers_as_digits(said: str) -> str:
    """A number written half in words, as a recogniser hears `two hundred and five`
    (`2 hundred and 5`, `100 and 4`, `1,000 and 20`), as one number in digits; `equals
    to` and a bare `equal to` as `equals`. Two numbers that cannot be one (`20 and 4`:
    no place for the 4) are left as they are, and the reader then finds no value."""
    said = _EQUALS_TO.sub("equals", said)
    said = _SCALED.sub(lambda m: str(int(m.group(1)) * _SCALES[m.group(2)]), said)
    return _AND_MORE.sub(_joined, said)


def _joined(found: re.Match[str]) -> str:
    whole, rest = int(found.group(1).replace(",", "")), int(found.group(2))
    zeros = len(str(whole)) - len(str(whole).rstrip("0"))
    if whole and zeros >= 2 and rest < 10**zeros:
        return str(whole + rest)
    return found.group(0)


def confidence_of(segments: list[dict[str, float]]) -> float:
    """0-1 from the server's scores: the mean probability per token of its segments
    (`exp(avg_logprob)`), times one minus their largest no-speech probability; 0 when
    the server reported none."""
    probabilities = [math.exp(s["avg_logprob"]) for s in segments if "avg_logprob" in s]
    if not probabilities:
        return 0.0
    speech = 1.0 - max((s.get("no_speech_prob", 0.0) for s in segments), default=0.0)
    return round(min(1.0, sum(probabilities) / len(probabilities)) * max(speech, 0.0), 3)


def multipart(fields: dict[str, str], filename: str, content: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body of `fields` and the recording (as `file`), and its
    content type, as httpx encodes a form (the transport's own client: no new library)."""
    import httpx

    files = {"file": (filename, content, "audio/wav")}
    request = httpx.Request("POST", "http://form.invalid/", data=fields, files=files)
    return request.read(), request.headers["content-type"]
