"""Spoken assignments for the `audio` extractor, synthesised here: `x equals twenty`.

:func:`generate` writes ``count`` WAV files with `espeak-ng` (several English voices and
variants, speeds and pitches) and resamples each with `sox` to a varied rate, channel
count and sample width, so that the extractor's reading of WAV files is exercised too.
The same ``seed`` gives the same utterances and files.  Nothing is downloaded.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

from riddlectl.bench.extractors.cases import Case
from riddlectl.document.numbers import format_number

__all__ = ["TOOLS", "generate", "number_words", "synthesise"]

#: The Debian tools this generator runs.
TOOLS = ("espeak-ng", "sox")

VOICES = (
    "en",
    "en-us",
    "en-gb",
    "en-gb-x-rp",
    "en-gb-scotland",
    "en-029",
    "en-gb-x-gbclan",
    "en-gb-x-gbcwmd",
)
VARIANTS = ("", "+m1", "+m2", "+m3", "+m4", "+m7", "+f1", "+f2", "+f3", "+f4")
RATES = (8000, 11025, 16000, 22050, 32000, 44100, 48000)
# sox's output options for sample width and encoding.
WIDTHS = (("-b", "16"), ("-b", "16"), ("-b", "8"), ("-b", "24"), ("-b", "32"))
NAMES = ("x", "x", "y", "y", "z", "z", "n", "b", "k", "m")
VERBS = ("equals", "equals", "is", "is equal to")

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def generate(directory: Path, count: int, seed: int) -> list[Case]:
    """Write ``count`` spoken assignments into ``directory``; their cases, in order.

    Raises ``RuntimeError`` naming the tool when `espeak-ng` or `sox` is missing.
    """
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        tools = " ".join(missing)
        raise RuntimeError(f"{tools} not found (Debian: apt-get install {tools})")
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    return [_case(directory, index, rng) for index in range(count)]


def _case(directory: Path, index: int, rng: random.Random) -> Case:
    name = rng.choice(NAMES)
    value = _value(rng)
    british = rng.random() < 0.5
    sentence = f"{name} {rng.choice(VERBS)} {number_words(value, british)}"
    voice = rng.choice(VOICES) + rng.choice(VARIANTS)
    speed, pitch = rng.randrange(130, 200, 5), rng.randrange(25, 75, 5)
    rate, width, channels = rng.choice(RATES), rng.choice(WIDTHS), rng.choice((1, 1, 2))
    file = f"speech-{index:04d}.wav"
    synthesise(sentence, directory / file, voice, speed, pitch, rate, width[1], channels)
    note = f"{voice} {speed} wpm pitch {pitch}, {rate} Hz {width[1]}-bit x{channels}: {sentence}"
    return Case(file, "audio", {name: format_number(value)}, f"{name} * 2 =", note)


def _value(rng: random.Random) -> Fraction:
    """Mostly small integers, some up to 999,999, some negative, some decimals."""
    roll = rng.random()
    if roll < 0.45:
        value = Fraction(rng.randrange(0, 100))
    elif roll < 0.7:
        value = Fraction(rng.randrange(100, 1000))
    elif roll < 0.85:
        value = Fraction(rng.randrange(1000, 1_000_000))
    else:
        value = Fraction(rng.randrange(0, 100)) + Fraction(rng.randrange(1, 10), 10)
    return -value if value and rng.random() < 0.15 else value


def number_words(value: Fraction, british: bool = True) -> str:
    """English words for a whole number below a million or a one-decimal number:
    ``one hundred and four`` (``one hundred four`` when not ``british``), ``minus two
    point five``."""
    sign = "minus " if value < 0 else ""
    value = abs(value)
    whole = int(value)
    words = _thousands(whole, british) if whole else "zero"
    if value != whole:
        digits = format_number(value).split(".")[1]
        words += " point " + " ".join(_ONES[int(d)] for d in digits)
    return sign + words


def _thousands(n: int, british: bool) -> str:
    high, low = divmod(n, 1000)
    parts = [_hundreds(high, british) + " thousand"] if high else []
    if low:
        glue = "and " if british and high and low < 100 else ""
        parts.append(glue + _hundreds(low, british))
    return " ".join(parts)


def _hundreds(n: int, british: bool) -> str:
    high, low = divmod(n, 100)
    parts = [_ONES[high] + " hundred"] if high else []
    if low:
        parts.append(("and " if british and high else "") + _tens(low))
    return " ".join(parts)


def _tens(n: int) -> str:
    if n < 20:
        return _ONES[n]
    high, low = divmod(n, 10)
    return _TENS[high] + (" " + _ONES[low] if low else "")


def synthesise(
    sentence: str,
    target: Path,
    voice: str = "en-us",
    speed: int = 160,
    pitch: int = 50,
    rate: int = 16000,
    bits: str = "16",
    channels: int = 1,
) -> None:
    """Say ``sentence`` into the WAV file ``target`` at ``rate`` Hz, ``bits`` wide."""
    raw = target.with_suffix(".espeak.wav")
    try:
        subprocess.run(
            [
                "espeak-ng",
                "-v",
                voice,
                "-s",
                str(speed),
                "-p",
                str(pitch),
                "-w",
                str(raw),
                sentence,
            ],
            check=True,
            capture_output=True,
        )
        # -R: sox's dither repeatable, so that a seed always gives the same recordings
        subprocess.run(
            ["sox", "-R", str(raw), "-r", str(rate), "-b", bits, "-c", str(channels), str(target)],
            check=True,
            capture_output=True,
        )
    finally:
        raw.unlink(missing_ok=True)
