"""riddlectl.handlers.builtin.arithmetic.recheck: the independent recompute path agrees with
the calculator."""

from __future__ import annotations

import time
from fractions import Fraction as F
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from riddlectl.document.model import Riddle
from riddlectl.handlers.base import Job
from riddlectl.handlers.builtin.arithmetic import evaluate, parse_question, recheck
from riddlectl.handlers.builtin.arithmetic.questions import BoundsError, CalcError, UnknownVariable
from riddlectl.handlers.builtin.arithmetic.recheck import recompute
from riddlectl.handlers.builtin.calculator import gatekeeper
from riddlectl.handlers.builtin.text.facts import extract_facts
from tests.bounds import UNBOUNDED

VALUES = {"x": F(10), "y": F(15), "z": F(20), "h": F(1, 2)}


def outcome(fn: object, question: str) -> tuple[str, object]:
    try:
        return "ok", fn(question)  # type: ignore[operator]
    except CalcError as exc:
        return type(exc).__name__, None


def via_calculator(question: str) -> F | bool:
    return evaluate(parse_question(question), VALUES)


def via_recheck(question: str) -> F | bool:
    return recompute(question, VALUES)


def test_does_not_use_the_calculator_parser() -> None:
    source = Path(recheck.__file__).read_text(encoding="utf-8")
    for name in ("parse_question", "_Parser", "evaluate(", "tokenize(", "lex(", "eval(", "exec("):
        assert name not in source


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("x * y =", F(150)),
        ("What is x+y?", F(25)),
        ("Compute (x + y) * z", F(500)),
        ("x / y", F(2, 3)),
        ("x^2", F(100)),
        ("2^3^2", F(512)),
        ("-x^2", F(-100)),
        ("2 ** -x ** 0", F(1, 2)),
        ("2 ** -3 * 4", F(1, 2)),
        ("- - x", F(10)),
        ("Was ist x mal y?", F(150)),
        ("x geteilt durch y", F(2, 3)),
        ("x > y", False),
        ("is x less than y", True),
        ("one hundred and four minus x", F(94)),
        ("x-y", F(-5)),
        ("+(x > y)", False),
        ("x = 10", True),
        ("two point five * x", F(25)),
        ("x times three quarters", F(15, 2)),
        ("three-quarters * x", F(15, 2)),
        ("zwei Komma f\u00fcnf mal x", F(25)),
        ("minus two point five plus x", F(15, 2)),
        ("drei Viertel mal x", F(15, 2)),
        ("x plus two and a half", F(25, 2)),
        ("x mal zehn Prozent", F(1)),
    ],
)
def test_known_values(question: str, expected: F | bool) -> None:
    assert recompute(question, VALUES) == expected
    assert via_calculator(question) == expected


@pytest.mark.parametrize(
    ("question", "error"),
    [
        ("x + w", UnknownVariable),
        ("x / 0", CalcError),
        ("9**9**9**9", BoundsError),
        ("9^9^9^9", BoundsError),
        ("(x", CalcError),
        ("x)", CalcError),
        ("x y", CalcError),
        ("", CalcError),
        ("x < y < z", CalcError),
        ("(x > y) + 1", CalcError),
        ("__import__('os').system('x')", CalcError),
        ("2 ^ 0.5", CalcError),
        ("(" * 101 + "x" + ")" * 101, BoundsError),
        ("*".join(["9"] * 20_000), BoundsError),
    ],
)
def test_errors(question: str, error: type[CalcError]) -> None:
    started = time.perf_counter()
    with pytest.raises(error):
        recompute(question, VALUES)
    assert time.perf_counter() - started < UNBOUNDED
    assert outcome(via_calculator, question) == outcome(via_recheck, question)


def test_long_chains() -> None:
    question = "*".join(["x"] * 2400)
    assert recompute(question, VALUES) == F(10) ** 2400 == via_calculator(question)


# --- random expression trees rendered as text -----------------------------------------

LEAVES = st.one_of(
    st.sampled_from(["x", "y", "z", "h", "w"]),  # "w" has no value
    st.integers(0, 12).map(str),
    st.sampled_from(
        ["3.5", "0.25", "twelve", "zwei", "two point five", "three quarters", "ein halb"]
    ),
)
BINARY = ["+", "-", "*", "/", "**", "^", "plus", "minus", "times", "mal", "durch", "divided by"]
COMPARE = ["<", ">", "<=", ">=", "==", "!=", "is greater than", "kleiner als"]


def combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(children, st.sampled_from(BINARY), children, st.booleans()).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})" if t[3] else f"{t[0]} {t[1]} {t[2]}"
    )
    unary = st.tuples(st.sampled_from(["-", "+", "- "]), children).map(lambda t: t[0] + t[1])
    return st.one_of(binary, unary, children.map(lambda c: f"({c})"))


EXPRESSIONS = st.recursive(LEAVES, combine, max_leaves=12)
QUESTIONS = st.tuples(
    st.sampled_from(["", "What is ", "Compute ", "Was ist ", "is "]),
    EXPRESSIONS,
    st.one_of(st.just(""), st.tuples(st.sampled_from(COMPARE), EXPRESSIONS).map(" ".join)),
    st.sampled_from(["", " =", "?", " = ?", "."]),
).map(lambda t: f"{t[0]}{t[1]} {t[2]}{t[3]}")


@settings(
    max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(QUESTIONS)
def test_both_paths_agree(question: str) -> None:
    assert outcome(via_calculator, question) == outcome(via_recheck, question), question


# Fully parenthesised trees, checked against an oracle computed here with Fraction.
TREES = st.recursive(
    st.one_of(st.sampled_from(["x", "y", "z", "h"]), st.integers(0, 9)),
    lambda kids: st.tuples(st.sampled_from(["+", "-", "*", "/", "neg"]), kids, kids),
    max_leaves=16,
)


def render(tree: object) -> str:
    if isinstance(tree, tuple):
        op, a, b = tree
        return f"(-{render(a)})" if op == "neg" else f"({render(a)} {op} {render(b)})"
    return str(tree)


def oracle(tree: object) -> F:
    if isinstance(tree, tuple):
        op, a, b = tree
        if op == "neg":
            return -oracle(a)
        left, right = oracle(a), oracle(b)
        if op == "/":
            if right == 0:
                raise ZeroDivisionError
            return left / right
        return {"+": left + right, "-": left - right, "*": left * right}[op]
    return VALUES[tree] if isinstance(tree, str) else F(tree)


@settings(max_examples=300, deadline=None, database=None)
@given(TREES)
def test_against_oracle(tree: object) -> None:
    question = render(tree)
    try:
        expected = oracle(tree)
    except ZeroDivisionError:
        assert outcome(via_recheck, question)[0] == "CalcError"
        assert outcome(via_calculator, question)[0] == "CalcError"
        return
    assert recompute(question, VALUES) == expected == via_calculator(question)


# -- the gatekeeper's recheck over the data ------------------------------------------------


def verdict(tmp_path: Path, question: str, texts: dict[str, str], answer: str) -> dict:
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    doc = {
        "id": "r1",
        "riddle": {"question": question},
        "solution": {"solution": answer},
        "data": [{"type": "text", "file_plain": name} for name in texts],
    }
    extractions = [extract_facts(text).to_json() for text in texts.values()]
    job = Job(Riddle.model_validate(doc), "validate", tmp_path, tmp_path, extractions=extractions)
    return gatekeeper(job)


@pytest.mark.parametrize("answer", ["120", "144", "0"])
def test_gatekeeper_rejects_any_answer_over_conflicting_data(tmp_path: Path, answer: str) -> None:
    texts = {"a.txt": "x = 10\ny = 12", "b.txt": "x = 12"}
    result = verdict(tmp_path, "x * y =", texts, answer)
    assert result["accept"] is False
    assert "'x'" in result["review"] and "a.txt" in result["review"] and "b.txt" in result["review"]


def test_gatekeeper_rejects_an_answer_over_an_unreadable_value(tmp_path: Path) -> None:
    for answer in ("0", "16", "32"):
        result = verdict(tmp_path, "x * 2 =", {"x.txt": "x = 0x10"}, answer)
        assert result["accept"] is False and "hexadecimal" in result["review"], result


def test_gatekeeper_rejects_through_a_formula(tmp_path: Path) -> None:
    texts = {"a.txt": "z = x + 1\nx = 1", "b.txt": "x = 2"}
    result = verdict(tmp_path, "z * 2 =", texts, "4")
    assert result["accept"] is False and "'x'" in result["review"]


@pytest.mark.parametrize(
    ("text", "wrong", "right"),
    [
        ("x = 10%", "100", "1"),
        ("c is 10", "0", "100"),
        ("x = two point five", "20", "25"),
        ("x ist drei Viertel", "30", "7.5"),
        ("x = 10 thousand", "100", "100000"),
    ],
)
def test_gatekeeper_recomputes_what_the_extractor_now_reads(
    tmp_path: Path, text: str, wrong: str, right: str
) -> None:
    name = "c" if text.startswith("c") else "x"
    question = f"{name} * 10 ="
    assert verdict(tmp_path, question, {"v.txt": text}, wrong)["accept"] is False
    assert verdict(tmp_path, question, {"v.txt": text}, right)["accept"] is True


def test_gatekeeper_still_accepts_questions_it_cannot_recompute(tmp_path: Path) -> None:
    result = verdict(tmp_path, "What is the weather?", {"x.txt": "x = 0x10"}, "sunny")
    assert result["accept"] is True and "not recomputed" in result["review"]
