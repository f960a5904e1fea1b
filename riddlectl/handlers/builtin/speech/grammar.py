"""The grammar the `speech` extractor listens with: spoken assignments, nothing else.

A recogniser with an open vocabulary hears anything in synthetic or noisy speech; one
told that it will hear ``NAME (equals | is [equal to] | be) NUMBER`` hears far better.
:func:`jsgf` writes that grammar (JSGF) for a riddle: the names it may hear are the
variables of the riddle's question, and only those (every letter when the question has
none: measured, allowing the other letters too, even weighted 50 times less likely,
misheard a tenth more recordings); numbers are English number words from zero to
999,999, negative (``minus``, ``negative``) or with decimals (``point five``, ``point
oh five``).  One assignment per recording: allowing several misheard more of the single
ones.

:func:`vocabulary` says which names a riddle's grammar favours; the extraction cache is
keyed by it, since the same recording heard with another grammar may be heard otherwise.
"""

from __future__ import annotations

import re
import string

from riddlectl.handlers.builtin.arithmetic import parse_question, variables_of
from riddlectl.handlers.builtin.arithmetic.questions import CalcError

__all__ = ["FIXED_WORDS", "LETTERS", "SPOKEN", "jsgf", "vocabulary"]

LETTERS = tuple(string.ascii_lowercase)
#: Other spoken forms of letter names, as the recogniser's dictionary spells them.
SPOKEN = {"zed": "z"}

_DIGITS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety"
_GLUE = "zero oh a hundred thousand and minus negative point let equals is equal to be"
#: Every word the grammar uses besides the names of variables.
FIXED_WORDS = frozenset([*_DIGITS, *_TEENS.split(), *_TENS.split(), *_GLUE.split(), *SPOKEN])
_WORD_NAME = re.compile(r"[a-z]{2,20}")

_NUMBERS = f"""
<value> = [minus | negative] (<number> [point <d>+] | point <d>+);
<d> = zero | oh | <digit>;
<digit> = {" | ".join(_DIGITS)};
<u100> = <digit> | {" | ".join(_TEENS.split())} | ({" | ".join(_TENS.split())}) [<digit>];
<u1000> = <u100> | (<digit> | a) hundred [[and] <u100>];
<number> = zero | <u1000> | (<u1000> | a) thousand [[and] <u1000>];
"""


def vocabulary(question: str) -> tuple[str, ...]:
    """The variable names of ``question`` the grammar can say, as the question writes
    them: one letter (either case), or one lower-case word (of 2-20 letters) that the
    dictionary may know.  Sorted; empty when the question cannot be parsed."""
    try:
        names = variables_of(parse_question(question))
    except CalcError:
        return ()
    return tuple(sorted({n for n in names if n.lower() in LETTERS or _WORD_NAME.fullmatch(n)}))


def jsgf(favoured: tuple[str, ...]) -> str:
    """The grammar for the names ``favoured`` (spoken words: lower-case letters, or
    words the recogniser's dictionary knows); every letter when there is none."""
    names = sorted(set(favoured)) or list(LETTERS)
    assign = "[let] <name> (equals | is [equal to] | be) <value>"
    return (
        "#JSGF V1.0;\ngrammar riddle;\n"
        f"public <heard> = {assign};\n"
        f"<name> = {' | '.join(_say(name) for name in names)};\n{_NUMBERS}"
    )


def _say(name: str) -> str:
    spoken = [word for word, letter in SPOKEN.items() if letter == name]
    return f"({' | '.join([name, *spoken])})" if spoken else name
