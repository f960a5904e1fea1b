"""One generated test case for an extractor: a data file and what it must be read as."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    file: str  # path relative to the directory it was generated in
    type: str  # the data item's type: "csv", "json", "image", "audio"
    truth: dict[str, str]  # variable name -> exact value as riddlectl writes numbers
    question: str  # a question over those variables, e.g. "x * y ="
    note: str = ""  # what was varied (font, size, rotation, voice, ...)
