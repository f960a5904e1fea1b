"""The tokenizer of arithmetic questions: raw tokens, the phrasing around the
expression dropped, word operators and numbers in words read (see `parser` for the
grammar the tokens feed)."""

from __future__ import annotations

import re
from fractions import Fraction

from riddlectl.document.numbers import parse_number
from riddlectl.handlers.builtin.arithmetic.questions import (
    MAX_NUMBER_WORDS,
    MAX_QUESTION_CHARS,
    MAX_TOKENS,
    PREFIXES,
    SYMBOL_ALIASES,
    TRAILERS,
    WORD_OPERATORS,
    BoundsError,
    CalcError,
)
from riddlectl.handlers.builtin.words.numberwords import (
    GERMAN_QUESTION_WORDS,
    question_word_number,
)

_LONGEST_OPERATOR = max(map(len, WORD_OPERATORS))
_OPERATOR_FIRST_WORDS = {phrase[0] for phrase in WORD_OPERATORS}
#: Raw lexer shared by nothing else: one alternative per token kind; ``bad`` catches the rest.
_LEX_RE = re.compile(
    r"(?P<space>\s+)"
    r"|(?P<num>\d+(?:[.,]\d+)*(?:[eE][+-]?\d+)?)"
    r"|(?P<word>[^\W\d]\w*(?:\.[^\W\d]\w*)*(?:'\w+)?(?:-[^\W\d]\w*(?:\.[^\W\d]\w*)*)*)"
    r"|(?P<sym>\*\*|>=|<=|==|!=|[-+*/^()<>=\u00d7\u00b7\u00f7\u2212\u2265\u2264\u2260?.!])"
    r"|(?P<bad>.)",
    re.S,
)

Token = tuple[str, str, Fraction | None]  # ("num" | "name" | "op", text, value)


def lex(question: str) -> list[tuple[str, str]]:
    """Raw ``(kind, text)`` pairs, kind ``num``/``word``/``sym``; phrasing not yet removed.

    Raises :class:`CalcError` at a character that belongs to no token (quotes,
    brackets, ``;`` …) and :class:`BoundsError` beyond the length and token bounds.
    """
    if len(question) > MAX_QUESTION_CHARS:
        raise BoundsError(f"question longer than {MAX_QUESTION_CHARS} characters")
    raw: list[tuple[str, str]] = []
    for match in _LEX_RE.finditer(question):
        kind, text = match.lastgroup or "", match.group()
        if kind == "bad":
            raise CalcError(f"unexpected character {text!r} at position {match.start()}")
        if kind == "word" and "-" in text and word_number(text) is None:
            # "thirty-four" is a number; "x-y" is x minus y.
            for i, part in enumerate(text.split("-")):
                raw.extend([("sym", "-"), ("word", part)] if i else [("word", part)])
        elif kind != "space":
            raw.append((kind, text))
        if len(raw) > MAX_TOKENS:
            raise BoundsError(f"question has more than {MAX_TOKENS} tokens")
    return raw


word_number = question_word_number  # number words in questions, shared with recheck


def strip_phrasing(raw: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop a leading "What is"-style prefix and trailing ``=``/``?``/``.``/``!`` symbols.

    The prefix is dropped only when something is left after it.
    """
    end = len(raw)
    while end and raw[end - 1][0] == "sym" and raw[end - 1][1] in TRAILERS:
        end -= 1
    head = tuple(text.lower() if kind == "word" else "" for kind, text in raw[:6])
    for prefix in PREFIXES:
        if head[: len(prefix)] == prefix and len(prefix) < end:
            return raw[len(prefix) : end]
    return raw[:end]


def tokenize(question: str) -> list[Token]:
    """The tokens of ``question`` for the parser: ``("num", text, value)``,
    ``("name", text, None)`` or ``("op", symbol, None)``."""
    lexed = lex(question)
    comma = any(k == "word" and t.lower() in GERMAN_QUESTION_WORDS for k, t in lexed)
    raw = strip_phrasing(lexed)
    tokens: list[Token] = []
    i = 0
    while i < len(raw):
        kind, text = raw[i]
        if kind == "num":
            try:
                tokens.append(("num", text, parse_number(text, decimal_comma=comma)))
            except ValueError as exc:
                raise CalcError(str(exc)) from None
            i += 1
        elif kind == "sym":
            tokens.append(("op", SYMBOL_ALIASES.get(text, text), None))
            i += 1
        else:
            token, i = _word_token(raw, i)
            tokens.append(token)
    return tokens


def _word_token(raw: list[tuple[str, str]], i: int) -> tuple[Token, int]:
    """A word operator, a number in words, or a name, starting at ``raw[i]``."""
    first = raw[i][1]
    if first.lower() not in _OPERATOR_FIRST_WORDS and word_number(first) is None:
        return ("name", first, None), i + 1  # the common case, kept cheap
    words: list[str] = []
    for kind, text in raw[i : i + max(_LONGEST_OPERATOR, MAX_NUMBER_WORDS)]:
        if kind != "word":
            break
        words.append(text.lower())
    for size in range(min(len(words), _LONGEST_OPERATOR), 0, -1):
        if tuple(words[:size]) in WORD_OPERATORS:
            return ("op", WORD_OPERATORS[tuple(words[:size])], None), i + size
    if word_number(first) is None:
        return ("name", first, None), i + 1
    # A number in words stops before the next word operator ("two plus three").
    stop = next((k for k in range(1, len(words)) if words[k] in _OPERATOR_FIRST_WORDS), len(words))
    for size in range(stop, 0, -1):
        text = " ".join(raw[j][1] for j in range(i, i + size))
        value = word_number(text)
        if value is not None:
            return ("num", text, value), i + size
    return ("name", first, None), i + 1
