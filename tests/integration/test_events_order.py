"""A riddle's events come out of `riddlectl events` in the order they took place: its
`submit` before its `extract`, each commit's before the next one's (their `rev` never
goes down), with agents taking riddles up while they are still being submitted; on both
kinds of spool."""

from __future__ import annotations

import signal
from collections import defaultdict

import orjson
import pytest

from tests.conftest import Cli, example_doc

pytestmark = pytest.mark.postgres  # the PostgreSQL half of `any_cli`

RIDDLES = 300
BATCH = 20  # riddles per `submit`: agents take the first up while the rest are stored


@pytest.mark.timeout(600)
def test_each_riddles_events_are_logged_in_causal_order_under_running_agents(
    any_cli: Cli,
) -> None:
    agents = any_cli.popen("run", "--concurrency", "4")
    try:
        for start in range(0, RIDDLES, BATCH):
            docs = [example_doc(id=f"o{n:03}") for n in range(start, start + BATCH)]
            lines = "\n".join(orjson.dumps(doc).decode() for doc in docs)
            assert any_cli("submit", "-", input=lines).code == 0
        ids = [f"o{n:03}" for n in range(RIDDLES)]
        waited = any_cli("result", "--wait", "--timeout", "400", *ids, timeout=450)
        assert waited.code == 0, waited.err
    finally:
        agents.send_signal(signal.SIGTERM)
        agents.wait(timeout=60)
    logged = any_cli("events")
    assert logged.code == 0, logged.err
    seen: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for line in logged.out.splitlines():
        event = orjson.loads(line)
        if event.get("id") in ids:
            seen[event["id"]].append((event["stage"], event.get("rev") or 0))
    assert len(seen) == RIDDLES
    out_of_order = [
        riddle_id
        for riddle_id, events in seen.items()
        if events[0][0] != "submit"
        or [rev for _, rev in events] != sorted(rev for _, rev in events)
    ]
    assert out_of_order == [], {i: seen[i] for i in out_of_order[:3]}
