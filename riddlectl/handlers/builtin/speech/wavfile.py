"""Reading WAV files into 16 kHz mono 16-bit samples, bounded, for the `speech` extractor.

Our own RIFF reader rather than the standard library's `wave`, which reads integer PCM
only and says little about what is wrong: this one takes integer PCM of 8, 16, 24 or 32
bits, IEEE float of 32 or 64 bits and `WAVE_FORMAT_EXTENSIBLE`, at any rate and channel
count, and refuses in one line a file that is not a WAV file, one cut short (fewer sample
bytes than its header says) and one longer than the allowed duration, the last from its
header alone, before any sample is read, so a 10-hour file costs nothing.  A data chunk
of unknown length (0 or 0xFFFFFFFF, as written to a pipe) runs to the end of the file.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy (the `audio` extra) is imported when samples are read
    import numpy as np

__all__ = ["RATE", "AudioError", "WavFormat", "check_wav", "read_wav", "to_speech_rate"]

#: The sample rate the recogniser's model was trained at.
RATE = 16000
_PCM, _FLOAT, _EXTENSIBLE = 1, 3, 0xFFFE
_UNKNOWN_SIZES = (0, 0xFFFFFFFF)
_MAX_CHUNKS = 64  # chunks skipped before `data` (LIST, fact, …) before giving up


class AudioError(ValueError):
    """The file cannot be read as audio; the message says why, in one line."""


@dataclass(frozen=True)
class WavFormat:
    rate: int
    channels: int
    bits: int
    encoding: int  # _PCM or _FLOAT
    data_offset: int
    data_bytes: int  # as the header says (or to the end of the file when unknown)

    @property
    def frame_bytes(self) -> int:
        return self.channels * self.bits // 8

    @property
    def seconds(self) -> float:
        return self.data_bytes / (self.frame_bytes * self.rate)

    def described(self) -> dict[str, float | int]:
        """The recording as an extraction tells it (`audio`)."""
        return {
            "rate": self.rate,
            "channels": self.channels,
            "bits": self.bits,
            "seconds": round(self.seconds, 3),
        }


def read_wav(path: str, max_seconds: float) -> tuple[WavFormat, np.ndarray]:
    """The format and the samples (float64 in [-1, 1], mono) of the WAV file ``path``.

    Raises `AudioError` for what is not a WAV file, an encoding not read, a file cut
    short, or one over ``max_seconds`` long.
    """
    with open(path, "rb") as handle:
        fmt = _checked(handle, max_seconds)
        handle.seek(fmt.data_offset)
        data = handle.read(fmt.data_bytes)
    if len(data) < fmt.data_bytes:  # the file shrank while being read
        raise AudioError(f"truncated WAV file: {len(data)} of {fmt.data_bytes} bytes read")
    return fmt, _mono(_samples(data, fmt), fmt.channels)


def check_wav(path: str, max_seconds: float) -> WavFormat:
    """The format of the WAV file ``path``, refused as `read_wav` refuses it (not a WAV
    file, an encoding not read, cut short, too long), from its header alone: what a
    recording sent elsewhere to be heard is checked with, without numpy."""
    with open(path, "rb") as handle:
        return _checked(handle, max_seconds)


def _checked(handle: object, max_seconds: float) -> WavFormat:
    size = os.fstat(handle.fileno()).st_size  # type: ignore[attr-defined]
    fmt = _header(handle, size)
    if fmt.seconds > max_seconds:
        raise AudioError(
            f"audio is {_duration(fmt.seconds)} long, over the {max_seconds:g} s limit"
        )
    present = max(size - fmt.data_offset, 0)
    if present < fmt.data_bytes:  # known before reading: no buffer for what is absent
        raise AudioError(
            f"truncated WAV file: its header announces {fmt.data_bytes} bytes of samples, "
            f"the file has {present}"
        )
    return fmt


def _header(handle: object, size: int) -> WavFormat:
    read = handle.read  # type: ignore[attr-defined]
    riff = read(12)
    if len(riff) < 12 or riff[:4] not in (b"RIFF", b"RF64") or riff[8:12] != b"WAVE":
        raise AudioError("not a WAV file (no RIFF/WAVE header)")
    offset, fmt_fields = 12, None
    for _ in range(_MAX_CHUNKS):
        head = read(8)
        if len(head) < 8:
            break
        kind, length = head[:4], struct.unpack("<I", head[4:])[0]
        offset += 8
        if kind == b"fmt ":
            fmt_fields = _fmt_chunk(read(min(length, 64)))
        elif kind == b"data":
            if fmt_fields is None:
                raise AudioError("WAV file has its samples before their format (no fmt chunk)")
            unknown = length in _UNKNOWN_SIZES or riff[:4] == b"RF64"
            data_bytes = size - offset if unknown else length
            return WavFormat(*fmt_fields, data_offset=offset, data_bytes=max(data_bytes, 0))
        offset += length + (length & 1)  # chunks are padded to an even length
        handle.seek(offset)  # type: ignore[attr-defined]
    raise AudioError(
        "truncated WAV file: no data chunk" if fmt_fields else "WAV file has no fmt chunk"
    )


def _fmt_chunk(body: bytes) -> tuple[int, int, int, int]:
    if len(body) < 16:
        raise AudioError("truncated WAV file: its fmt chunk is cut short")
    encoding, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[:16])
    if encoding == _EXTENSIBLE and len(body) >= 26:
        encoding = struct.unpack("<H", body[24:26])[0]  # the sub-format GUID's first field
    readable = (encoding == _PCM and bits in (8, 16, 24, 32)) or (
        encoding == _FLOAT and bits in (32, 64)
    )
    if not readable:
        raise AudioError(
            f"WAV encoding {encoding:#x} with {bits}-bit samples is not read "
            "(integer PCM of 8-32 bits and float of 32/64 bits are)"
        )
    if not 1 <= channels <= 64 or not 1000 <= rate <= 384_000:
        raise AudioError(f"WAV header is implausible: {channels} channel(s) at {rate} Hz")
    return rate, channels, bits, encoding


def _samples(data: bytes, fmt: WavFormat) -> np.ndarray:
    import numpy as np

    data = data[: len(data) - len(data) % fmt.frame_bytes]
    if fmt.encoding == _FLOAT:
        floats = np.frombuffer(data, dtype="<f4" if fmt.bits == 32 else "<f8")
        return np.nan_to_num(floats.astype(np.float64)).clip(-1.0, 1.0)
    if fmt.bits == 8:  # unsigned, centred on 128
        return (np.frombuffer(data, dtype=np.uint8).astype(np.float64) - 128.0) / 128.0
    if fmt.bits == 24:
        triples = np.frombuffer(data, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        ints = (triples[:, 0] << 8) | (triples[:, 1] << 16) | (triples[:, 2] << 24)
        return ints.astype(np.float64) / 2.0**31
    dtype = "<i2" if fmt.bits == 16 else "<i4"
    return np.frombuffer(data, dtype=dtype).astype(np.float64) / 2.0 ** (fmt.bits - 1)


def _mono(samples: np.ndarray, channels: int) -> np.ndarray:
    return samples.reshape(-1, channels).mean(axis=1) if channels > 1 else samples


def to_speech_rate(samples: np.ndarray, rate: int) -> bytes:
    """``samples`` resampled to :data:`RATE` as 16-bit little-endian PCM bytes.

    Downsampling first averages over a window of the rate ratio (a crude low-pass filter
    against aliasing), then interpolates linearly: enough for speech recognition.
    """
    import numpy as np

    if rate != RATE and len(samples):
        if rate > RATE:
            width = max(1, round(rate / RATE))
            samples = np.convolve(samples, np.ones(width) / width, mode="same")
        count = max(1, round(len(samples) * RATE / rate))
        times = np.arange(count) * (rate / RATE)
        samples = np.interp(times, np.arange(len(samples)), samples)
    return (samples * 32767.0).clip(-32768, 32767).astype("<i2").tobytes()


def _duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds:.0f} s"
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
