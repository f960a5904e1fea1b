"""`riddlectl bench --extractors`: generate cases per data type, read each with the
built-in extractor for its type, in-process, through the same handler call the extract
agents make; score and time them.

A generator or extractor that cannot run here (its module or tool missing, no built-in
extractor for the type yet) is reported as skipped, with the reason, never a crash.
"""

from __future__ import annotations

import importlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from riddlectl.bench.extractors.cases import Case
from riddlectl.bench.measure import percentile
from riddlectl.document import datafiles
from riddlectl.document.model import Riddle
from riddlectl.errors import RiddleError
from riddlectl.handlers.base import Job, NamedHandler
from riddlectl.handlers.builtin.speech.agree import apply_policy
from riddlectl.handlers.registry import load
from riddlectl.pipeline.stages import call
from riddlectl.settings import default_handlers, resolve

#: Data type -> the module generating its cases (`generate(directory, count, seed)`).
GENERATORS: dict[str, str] = {
    "csv": "riddlectl.bench.extractors.csvfiles",
    "json": "riddlectl.bench.extractors.jsonfiles",
    "image": "riddlectl.bench.extractors.images",
    "audio": "riddlectl.bench.extractors.speech",
}
#: Misses listed per extractor in the outcome, to see what went wrong.
SHOWN_MISSES = 5


def run_extractor_bench(cases: int, seed: int, types: list[str] | None = None) -> dict[str, Any]:
    """`{"cases_per_type", "seed", "extractors": [one row per data type]}`; each row:
    `type`, `extractor`, `cases`, `exact`, `accuracy` (%), `ms_p50`, `ms_p95`, `skipped`
    (null, or why it did not run) and the first few `misses`."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="riddlectl-bench-extractors-") as tmp:
        for kind in types or list(GENERATORS):
            directory = Path(tmp) / kind
            directory.mkdir()
            rows.extend(_bench_type(kind, directory, cases, seed))
    return {"cases_per_type": cases, "seed": seed, "extractors": rows}


#: `RIDDLECTL_BENCH_TRANSCRIBE=MODEL`: audio is also heard by `transcribe:MODEL` (at
#: `OPENAI_BASE_URL`), and by the two under `audio_policy = "agree"`.
TRANSCRIBE_VAR = "RIDDLECTL_BENCH_TRANSCRIBE"


def _bench_type(kind: str, directory: Path, count: int, seed: int) -> list[dict[str, Any]]:
    row: dict[str, Any] = {"type": kind, "extractor": None, "cases": 0, "exact": 0}
    row.update({"wrong": 0, "refused": 0, "accuracy": None, "ms_p50": None, "ms_p95": None})
    row.update({"skipped": None, "misses": []})
    handler = _extractor_for(kind)
    if isinstance(handler, str):
        return [{**row, "skipped": handler}]
    try:
        module = importlib.import_module(GENERATORS[kind])
        generated: list[Case] = module.generate(directory, count, seed)
    except Exception as exc:  # a missing module or tool: reported, the others still run
        return [{**row, "skipped": f"cannot generate {kind} cases: {type(exc).__name__}: {exc}"}]
    handlers = [handler]
    model = os.environ.get(TRANSCRIBE_VAR, "")
    if kind == "audio" and model:
        try:
            settings = resolve({}, config_file=None)
            endpoint = load(f"transcribe:{model}", "extract", settings)
            handlers = [handler, endpoint, apply_policy([handler, endpoint], "agree")[0]]
        except RiddleError as exc:
            return [{**row, "skipped": f"transcribe:{model} cannot be loaded: {exc}"}]
    return [_bench_handler(dict(row, misses=[]), h, directory, generated) for h in handlers]


def _bench_handler(
    row: dict[str, Any], handler: NamedHandler, directory: Path, generated: list[Case]
) -> dict[str, Any]:
    row["extractor"] = handler.name
    timings = []
    for case in generated:
        started = time.perf_counter()
        got, error = _extract(handler, directory, case)
        timings.append((time.perf_counter() - started) * 1000)
        if error is None and all(got.get(n) == v for n, v in case.truth.items()):
            row["exact"] += 1
            continue
        row["refused" if error is not None else "wrong"] += 1
        if len(row["misses"]) < SHOWN_MISSES:
            row["misses"].append(_miss(case, got, error))
    row["cases"] = len(generated)
    if timings:
        ordered = sorted(timings)
        row["accuracy"] = round(100 * row["exact"] / len(generated), 1)
        row["ms_p50"] = round(percentile(ordered, 50), 3)
        row["ms_p95"] = round(percentile(ordered, 95), 3)
    return row


def _extractor_for(kind: str) -> NamedHandler | str:
    """The default extractor of data type `kind`, or why there is none."""
    for name in default_handlers()["extract"]:
        try:
            handler = load(name, "extract")
        except (RiddleError, ImportError) as exc:
            return f"extractor {name} cannot be loaded: {exc}"
        if handler.types is not None and kind in handler.types:
            return handler
    return f"no built-in extractor reads {kind} data yet"


def _extract(
    handler: NamedHandler, directory: Path, case: Case
) -> tuple[dict[str, Any], str | None]:
    """(variables read, None) or ({}, the error), as the extract stage calls the handler."""
    riddle = Riddle.model_validate(
        {
            "id": "bench",
            "riddle": {"question": case.question},
            "data": [{"type": case.type, "file_plain": case.file}],
        }
    )
    try:
        path = datafiles.resolve(directory, case.file)
        job = Job(riddle, "extract", directory, directory, item_index=0, item_path=path)
        found = call(handler, job) or {}
    except Exception as exc:  # a refusal or a crash of the extractor: a miss, with why
        return {}, f"{type(exc).__name__}: {exc}"
    variables = found.get("variables")
    return (variables if isinstance(variables, dict) else {}), None


def _miss(case: Case, got: dict[str, Any], error: str | None) -> dict[str, Any]:
    wrong = {n: got.get(n) for n, v in case.truth.items() if got.get(n) != v}
    return {
        "file": case.file,
        "note": case.note,
        "expected": case.truth,
        "got": wrong,
        "error": error,
    }


def render(outcome: dict[str, Any]) -> str:
    """One line per extractor, for people."""
    lines = [
        f"extractors on generated data ({outcome['cases_per_type']} cases per type, "
        f"seed {outcome['seed']}):"
    ]
    for row in outcome["extractors"]:
        if row["skipped"]:
            lines.append(f"  {row['type']:<6} skipped: {row['skipped']}")
            continue
        lines.append(
            f"  {row['type']:<6} {row['extractor']:<8} {row['exact']}/{row['cases']} exact "
            f"({row['accuracy']}%), {row['wrong']} wrong, {row['refused']} refused, "
            f"{row['ms_p50']} ms p50, {row['ms_p95']} ms p95 per item"
        )
        for miss in row["misses"]:
            lines.append(
                f"      miss {miss['file']} ({miss['note']}): {miss['error'] or miss['got']}"
            )
    return "\n".join(lines)
