"""A third kind of spool for the tests of the scheme table: `toy://NAME`, in memory.

It offers exactly the functions a back end module must (see riddlectl.spool.schemes).
"""

from __future__ import annotations

from pathlib import Path

from riddlectl.spool.memory import MemorySpool
from riddlectl.spool.schemes import OpenOptions

OPENED: dict[str, ToySpool] = {}


class ToySpool(MemorySpool):
    def __init__(self, location: str) -> None:
        super().__init__()
        self.location = location

    @property
    def name(self) -> str:
        return f"toy spool {self.location.removeprefix('toy://')}"


def open(location: str, options: OpenOptions) -> ToySpool:
    spool = OPENED.setdefault(location, ToySpool(location))
    spool.init()
    return spool


def find(location: str, options: OpenOptions) -> ToySpool | None:
    return OPENED.get(location)


def make(location: str, options: OpenOptions) -> ToySpool:
    return open(location, options)


def settings_file(location: str) -> Path | None:
    return None


def display(location: str) -> str:
    return location


def scratch(location: str, tag: str) -> str:
    return f"toy://{tag}"


def remove(location: str) -> None:
    OPENED.pop(location, None)
