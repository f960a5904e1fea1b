"""PocketSphinx, offline, with the US English model its PyPI wheel ships.

Two decoders per process (see `WARPS`), loaded on first use (about 0.5 s) and shared
behind a lock; grammars are added once each and switched to per recording.  The
settings were chosen by measuring on generated speech (see docs/data-types.md#audio):
wide beams; batch cepstral mean normalisation, since a recording is decoded whole; and the samples
peak-normalised with a little seeded noise added, because the digital silence of
synthetic speech throws the normalisation off.  The noise is seeded, so the same
recording is always heard alike.

Importing this module imports `pocketsphinx` and `numpy`: the `speech` extractor
imports it only when it has a recording to hear.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib.metadata import version

import numpy as np
import pocketsphinx

from riddlectl.handlers.builtin.speech.grammar import FIXED_WORDS, LETTERS, jsgf
from riddlectl.handlers.builtin.speech.wavfile import RATE, to_speech_rate

__all__ = ["Heard", "engine_version", "hear", "known_words"]

_SETTINGS = {
    "cmn": "batch",
    "dither": True,
    "wip": 0.05,
    "beam": 1e-80,
    "wbeam": 1e-60,
    "pbeam": 1e-80,
    "maxhmmpf": -1,
    "topn": 8,
    "bestpath": False,
    "fwdflat": False,
    "loglevel": "FATAL",
}
_PEAK = 0.5  # samples are scaled to this peak ...
_NOISE = 0.005  # ... and get Gaussian noise of this standard deviation
_BAND_NOISE = 0.03  # noise filling the band above a slower recording's Nyquist frequency
_MAX_GRAMMARS = 32
_lock = threading.Lock()
# Per warp: grammar digest -> search name.
_searches: dict[str, OrderedDict[str, str]] = {}
#: Vocal tract length warps (inverse linear) of the decoders that vote.  Chosen by
#: measuring seven warps from 0.8 to 1.2 on generated speech: this pair heard 5-6 in
#: 100 recordings more than (0.88, 1.0); more decoders cost time and gained nothing.
WARPS = ("0.94", "1.12")


@dataclass(frozen=True)
class Heard:
    text: str  # the words heard, in the dictionary's spelling ("x equals twenty")
    confidence: float  # the share of the decoders that heard these words, 0-1


def engine_version() -> str:
    return f"pocketsphinx-{version('pocketsphinx')}"


def hear(samples: np.ndarray, rate: int, favoured: tuple[str, ...]) -> Heard:
    """What is said in ``samples`` (mono, float in [-1, 1], at ``rate`` Hz), heard with
    the grammar for the ``favoured`` names (spoken words the dictionary knows).

    Each of the decoders (one per vocal tract warp) hears it; the words most of them
    heard win (on a tie, those heard with the best acoustic score), and the confidence
    is the share of decoders that heard them.
    """
    pcm = _filled(to_speech_rate(_prepared(samples), rate), rate)
    grammar = jsgf(favoured)
    heard: list[tuple[str, int]] = []
    with _lock:
        for warp, decoder in _decoders().items():
            decoder.activate_search(_search(warp, decoder, grammar))
            decoder.start_utt()
            decoder.process_raw(pcm, full_utt=True)
            decoder.end_utt()
            hypothesis = decoder.hyp()
            if hypothesis is not None and hypothesis.hypstr:
                heard.append((hypothesis.hypstr, hypothesis.best_score))
    if not heard:
        return Heard("", 0.0)
    votes = Counter(text for text, _ in heard)
    best = max(heard, key=lambda found: (votes[found[0]], found[1]))[0]
    return Heard(best, round(votes[best] / len(WARPS), 3))


def _prepared(samples: np.ndarray) -> np.ndarray:
    peak = float(np.abs(samples).max()) if len(samples) else 0.0
    scaled = samples * (_PEAK / peak) if peak > 0 else samples
    seed = int.from_bytes(hashlib.sha256(scaled.tobytes()).digest()[:8], "little")
    noise = np.random.default_rng(seed).normal(0.0, _NOISE, len(scaled))
    prepared: np.ndarray = scaled + noise
    return prepared


def _filled(pcm: bytes, rate: int) -> bytes:
    """``pcm`` (at the model's rate) with seeded noise in the band above ``rate`` / 2
    when ``rate`` is at most half the model's: a telephone recording holds nothing
    above 4 kHz, where the model, trained on 16 kHz recordings, expects some energy.
    Measured on 8 kHz recordings: more heard right with the band filled; at 11,025 Hz,
    fewer, so slower recordings only."""
    if rate > RATE // 2 or not pcm:
        return pcm
    signal = np.frombuffer(pcm, dtype="<i2").astype(np.float64) / 32767.0
    seed = int.from_bytes(hashlib.sha256(pcm).digest()[:8], "little")
    spectrum = np.fft.rfft(np.random.default_rng(seed).normal(0.0, 1.0, len(signal)))
    spectrum[: int(len(spectrum) * rate / RATE)] = 0.0
    band = np.fft.irfft(spectrum, len(signal))
    deviation = float(band.std())
    if deviation > 0:
        signal = signal + band * (_BAND_NOISE / deviation)
    filled: bytes = (signal * 32767.0).clip(-32768, 32767).astype("<i2").tobytes()
    return filled


def _search(warp: str, decoder: pocketsphinx.Decoder, grammar: str) -> str:
    """The name of the decoder's search for ``grammar``, added when new (the oldest of
    more than a few dropped)."""
    digest = hashlib.sha256(grammar.encode()).hexdigest()[:16]
    searches = _searches.setdefault(warp, OrderedDict())
    if digest in searches:
        searches.move_to_end(digest)
        return searches[digest]
    name = f"g{digest}"
    decoder.add_jsgf_string(name, grammar)
    searches[digest] = name
    while len(searches) > _MAX_GRAMMARS:
        _, old = searches.popitem(last=False)
        decoder.remove_search(old)
    return name


@cache
def _decoders() -> dict[str, pocketsphinx.Decoder]:
    model = os.path.join(pocketsphinx.get_model_path(), "en-us")
    with tempfile.TemporaryDirectory(prefix="riddlectl-speech-") as scratch:
        small = os.path.join(scratch, "words.dict")
        with open(small, "w", encoding="utf-8") as handle:
            handle.writelines(_entries(FIXED_WORDS | frozenset(LETTERS)))
        return {
            warp: pocketsphinx.Decoder(
                hmm=os.path.join(model, "en-us"),
                dict=small,
                lm=None,
                samprate=RATE,
                warp_type="inverse_linear",
                warp_params=warp,
                **_SETTINGS,
            )
            for warp in WARPS
        }


def known_words(words: set[str]) -> set[str]:
    """Those of ``words`` (lower-case) that the recogniser can hear: the grammar's own,
    and those of the model's dictionary, which are added to the decoder's."""
    base = {w for w in words if w in FIXED_WORDS or w in LETTERS}
    if base == words:
        return base
    entries = _entries(frozenset(words - base))
    with _lock:
        for decoder in _decoders().values():
            for line in entries:
                word, phones = line.split(" ", 1)
                if "(" not in word and decoder.lookup_word(word) is None:
                    decoder.add_word(word, phones.strip(), True)
    return base | {line.split(" ", 1)[0].split("(")[0] for line in entries}


@lru_cache(maxsize=256)
def _entries(words: frozenset[str]) -> list[str]:
    """The lines of the model's dictionary for ``words`` (alternatives included)."""
    wanted = {w.lower() for w in words}
    path = os.path.join(pocketsphinx.get_model_path(), "en-us", "cmudict-en-us.dict")
    with open(path, encoding="utf-8") as handle:
        return [line for line in handle if line.split(" ", 1)[0].split("(")[0] in wanted]
