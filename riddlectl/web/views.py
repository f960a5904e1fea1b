"""What a riddle's page shows, taken out of its document: the timeline of every attempt,
the rejected solutions with their reviews, the extractions, the family, and the
`riddlectl submit` command that would pose it again.
"""

from __future__ import annotations

import shlex
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
from markupsafe import Markup

from riddlectl.spool.extractions import seen_by

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle
    from riddlectl.spool.contract import Spool
    from riddlectl.spool.states import Queue

TIMELINE_FIELDS = ("stage", "agent", "host", "pid", "outcome", "duration", "error")

# What a riddle's page may say after an action taken on it: chosen by key in the URL
# (`?done=KEY&to=QUEUE&subs=N`), never text from the URL itself, so that a link cannot
# put words in the application's mouth. `to` must name a queue, `subs` be a small count.
NOTICES = {
    "hold": "Held: the riddle is now in hold/, until it is released.",
    "release": "Released: the riddle is now in {to}/.",
    "retry": "Put back to retry: the riddle is now in {to}/.",
    "cancel": "Cancelled: the riddle is now in {to}/{subs}.",
    "final": "Already final: the riddle was left as it was, in {to}/.",
}


def riddle_view(spool: Spool, queue: Queue, riddle: Riddle) -> dict[str, Any]:
    doc = riddle.to_json()
    return {
        "id": riddle.id,
        "queue": queue.value,
        "riddle": riddle,
        "timeline": [_entry(e) for e in riddle.history],
        "rejected": riddle.riddle.solutions_before,
        "extractions": _extractions(spool, riddle),
        "raw": orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode(),
        "command": submit_command(doc),
        "applicable": applicable(queue),
        "retry_from": retry_from(queue),
    }


def applicable(queue: Queue) -> list[str]:
    """The actions that can act on a riddle in `queue` (as `ops.admin` decides)."""
    from riddlectl.spool.states import FINAL, Queue

    if queue in FINAL:
        return ["retry"]
    return ["release", "cancel"] if queue is Queue.HOLD else ["hold", "cancel"]


def retry_from(queue: Queue) -> list[tuple[str, str, bool]]:
    """Where a retry of a riddle in `queue` may start: `(value, label, chosen)`. *Where
    it failed* only for a failed riddle; a riddle done did not fail, and starts again at
    a step chosen (solve, unless told)."""
    from riddlectl.ops.admin import RETRY_STEPS
    from riddlectl.spool.states import Queue

    if queue is Queue.FAILED:
        return [("", "where it failed", True)] + [(s, s, False) for s in RETRY_STEPS]
    return [(s, s, s == "solve") for s in RETRY_STEPS]


def notice(done: str, to: str, subs: str) -> str:
    """The notice of key `done` with its values; empty when any of them is not one the
    server would have sent."""
    from riddlectl.spool.states import Queue

    if done not in NOTICES or to not in {q.value for q in Queue}:
        return ""
    if not (subs == "" or (subs.isdigit() and len(subs) <= 6)):
        return ""
    count = int(subs or 0)
    with_subs = f", with {plural(count, 'sub-riddle')}" if count else ""
    return NOTICES[done].format(to=to, subs=with_subs)


def plural(n: int, noun: str) -> str:
    """`1 riddle`, `2 riddles`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _entry(event: dict[str, Any]) -> dict[str, Any]:
    entry = {name: event.get(name) for name in TIMELINE_FIELDS}
    entry["when"] = event.get("time")
    entry["move"] = f"{event.get('from') or '·'} → {event.get('to') or '·'}"
    duration = event.get("duration")
    entry["duration"] = f"{duration * 1000:.1f} ms" if isinstance(duration, int | float) else ""
    return entry


def _extractions(spool: Spool, riddle: Riddle) -> list[dict[str, Any]]:
    out = []
    for item in riddle.data:
        stored = spool.extractions.load(item.file_extracted) if item.file_extracted else None
        extraction = seen_by(stored, item.file_plain)  # its own path, not the maker's
        text = orjson.dumps(extraction, option=orjson.OPT_INDENT_2).decode() if extraction else ""
        out.append({"file": item.file_plain, "type": item.type, "extraction": text})
    return out


def submit_command(doc: dict[str, Any]) -> str:
    """The command that poses this riddle again (without its id, which is taken): flags
    when they can say it all, else the request as JSON on stdin."""
    spec = doc["riddle"]
    answer = spec.get("answer")
    steps = doc.get("status", {})
    kind = _flag_kind(answer)
    data = doc.get("data", [])
    if kind is not False and all(item.get("type") == "text" for item in data):
        words = ["riddlectl", "submit", "--question", spec.get("question", "")]
        if spec.get("context"):
            words += ["--context", spec["context"]]
        for item in data:
            words += ["--data", item.get("file_plain", "")]
        if kind:
            words += ["--answer-kind", kind]
        if not steps.get("extract", {}).get("required", True):
            words.append("--no-extract")
        if not steps.get("validate", {}).get("required", True):
            words.append("--no-validate")
        if doc.get("priority"):
            words += ["--priority", str(doc["priority"])]
        return shlex.join(words)
    request = {
        "riddle": {k: spec[k] for k in ("context", "question", "answer") if k in spec},
        "data": [{"type": i.get("type"), "file_plain": i.get("file_plain")} for i in data],
        "status": {s: {"required": steps.get(s, {}).get("required", True)} for s in _STEPS},
        "priority": doc.get("priority", 0),
    }
    return "riddlectl submit - <<'EOF'\n" + orjson.dumps(request).decode() + "\nEOF"


_STEPS = ("extract", "solve", "validate")


def _flag_kind(answer: dict[str, Any] | None) -> str | bool | None:
    """`--answer-kind`'s value for an answer spec; None without one; False when the
    flag cannot say it."""
    if answer is None:
        return None
    if answer == {"type": "noul"}:
        return "noul"
    if answer.get("type") == "fill" and set(answer) <= {"type", "kind"}:
        return str(answer.get("kind", "text"))
    return False


def when_tag(stamp: Any) -> Markup:
    """A time as people read it in a table (how long ago) in a `<time>` element that
    carries the absolute time: ISO 8601 in UTC as its `datetime`, the server's local time
    and UTC on hover. The page's script puts the browser's own local time there, and
    shows it as the text when the setting *Absolute times* is on."""
    if not isinstance(stamp, int | float):
        return Markup("")
    utc = datetime.fromtimestamp(stamp, tz=UTC)
    local = utc.astimezone()
    iso_utc = utc.isoformat(timespec="seconds").replace("+00:00", "Z")
    iso_local = local.isoformat(timespec="seconds")
    return Markup('<time class="ago" datetime="{0}" title="{1} local · {0} UTC">{2}</time>').format(
        iso_utc, iso_local, when(stamp)
    )


def when(stamp: Any) -> str:
    """A time as people read it in a table: how long ago."""
    if not isinstance(stamp, int | float):
        return ""
    ago = max(0.0, time.time() - stamp)
    for unit, seconds in (("d", 86400), ("h", 3600), ("m", 60)):
        if ago >= seconds:
            return f"{ago / seconds:.0f}{unit} ago"
    return f"{ago:.0f}s ago"
