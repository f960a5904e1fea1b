"""Riddle ids: validation and generation.

Generated ids are ULIDs in lower-case Crockford base32: 48 bits of milliseconds then 80
random bits, so they sort by creation time and are unique across hosts without any
coordination. Within one process they are strictly increasing.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time

ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
ID_RE = re.compile(ID_PATTERN)

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_lock = threading.Lock()
_last = (0, 0)


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, digit = divmod(value, 32)
        chars.append(_ALPHABET[digit])
    return "".join(reversed(chars))


def new_id() -> str:
    """A fresh, time-ordered id (26 characters)."""
    global _last
    with _lock:
        millis = time.time_ns() // 1_000_000
        last_millis, last_random = _last
        if millis <= last_millis:
            millis, randomness = last_millis, last_random + 1
        else:
            randomness = int.from_bytes(os.urandom(10), "big") >> 1
        _last = (millis, randomness)
    return _encode(millis, 10) + _encode(randomness, 16)


def made_id(millis: int, seed: bytes) -> str:
    """An id of the form `new_id` gives, made of the time `millis` and a hash of `seed`
    instead of random bits: the same arguments give the same id on any host."""
    randomness = int.from_bytes(hashlib.blake2b(seed, digest_size=10).digest(), "big")
    return _encode(max(millis, 0) % 2**50, 10) + _encode(randomness, 16)


def sub_id(parent: str, number: int) -> str:
    """The id of a parent's `number`-th sub-riddle (1-based): `xyz-1`, `xyz-2`, …"""
    return f"{parent}-{number}"
