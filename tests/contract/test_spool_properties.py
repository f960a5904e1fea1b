"""Property tests of the spool contract, on every spool.

Random sequences of submit, claim, commit, fail, release, retry and delete, and on the
filesystem spool two kinds of crash (an agent dying while it holds a claim, and dying
between writing a riddle's new copy and removing its old one), keep the contract of
riddlectl/spool/contract.py:

- every submitted id is found, in the queue the model says, with the highest `rev`
  (a duplicate left by a crash is resolved by the next claim of that id; until then
  `find` already answers with the newer copy);
- `rev` of an id never decreases, and grows by exactly one per commit;
- no id is lost, and a deleted one is gone;
- a held claim is exclusive: no `claim` hands out an id that is held, `claim_id` of a
  held id times out, and `claim` hands out the highest-ranked riddles that are free;
- `claim_id` + `release` leaves exactly one copy of the id;
- after k crashes in a row, the next claim of the riddle reports `abandoned == k`.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from riddlectl.document.model import Riddle
from riddlectl.errors import DuplicateId
from riddlectl.spool import open_spool
from riddlectl.spool.contract import Claim, Spool
from riddlectl.spool.fs.fsspool import FsSpool
from riddlectl.spool.memory import MemorySpool
from riddlectl.spool.states import Queue
from tests import pg

QUEUES = list(Queue)
MAX_IDS = 12  # riddles per example: the invariants read every one after every step
STEP_NAMES = ("extract", "solve", "validate")


def first_queue(required: dict[str, bool]) -> Queue:
    """A riddle goes to the inbox of its first required step, else to done/
    (docs/reference.md#the-spool)."""
    inbox = {"extract": Queue.INCOMING, "solve": Queue.EXTRACTED, "validate": Queue.SOLVED}
    for step in STEP_NAMES:
        if required[step]:
            return inbox[step]
    return Queue.DONE


class SpoolMachine(RuleBasedStateMachine):
    """The model: for each id, its queue, its rev, and what a claim of it must report."""

    backend = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.tmp: str | None = None
        self.schema: contextlib.AbstractContextManager[str] | None = None
        self.url = ""
        self.spool: Spool = self.make_spool()
        # Agents: spool objects on one spool. An FsSpool object keeps a claim backlog per
        # queue for a moment (inbox.RESCAN), so a second object sees the spool change
        # under its backlog, as one agent process does when others work beside it.
        self.agents: list[Spool] = [self.spool]
        if self.tmp is not None:
            self.agents.append(FsSpool(Path(self.tmp) / "spool", durable=False))
        if self.url:  # another connection: another holder, as another agent process is
            self.agents.append(open_spool(self.url, create=False))
        self.owner: dict[str, Spool] = {}  # the agent holding each claim
        self.queue: dict[str, Queue] = {}  # where the winning copy is
        self.rev: dict[str, int] = {}
        self.rank: dict[str, tuple[int, float]] = {}  # (-priority, created)
        self.deleted: set[str] = set()
        self.held: dict[str, Claim] = {}
        self.begun: set[str] = set()  # held claims whose handling has begun (`Spool.begin`)
        self.stale: dict[str, Queue] = {}  # a crash's old copy, not yet resolved
        self.streak: dict[str, int | None] = {}  # crashes in a row; None: not known
        self.seen_rev: dict[str, int] = {}
        self.counter = 0

    # -- backends ------------------------------------------------------------------------

    def make_spool(self) -> Spool:
        if self.backend == "fs":
            self.tmp = tempfile.mkdtemp(prefix="spool-prop-")
            spool: Spool = FsSpool(Path(self.tmp) / "spool", durable=False)
        elif self.backend == "postgres":
            self.schema = pg.fresh_schema()
            self.url = self.schema.__enter__()
            spool = open_spool(self.url)
        else:
            spool = MemorySpool()
        spool.init()
        return spool

    def teardown(self) -> None:
        for riddle_id, claim in list(self.held.items()):
            self.owner[riddle_id].release(claim)
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
        if self.schema is not None:
            for agent in self.agents:
                agent.disconnect()  # type: ignore[attr-defined]
            self.schema.__exit__(None, None, None)

    @property
    def is_fs(self) -> bool:
        return self.backend == "fs"

    def copies(self, riddle_id: str) -> list[Queue]:
        """The queues holding a file of this id (FS) or listing it (memory)."""
        if isinstance(self.spool, FsSpool):
            return [q for q in Queue if (self.spool.dir(q) / f"{riddle_id}.json").exists()]
        return [q for q in Queue if riddle_id in self.spool.ids(q)]

    def live(self) -> list[str]:
        return sorted(i for i in self.queue if i not in self.deleted)

    def free(self) -> list[str]:
        return [i for i in self.live() if i not in self.held]

    # -- recording what a claim saw ------------------------------------------------------

    def took(self, claim: Claim, agent: Spool | None = None) -> None:
        riddle_id = claim.riddle.id or ""
        self.owner[riddle_id] = agent or self.spool
        assert riddle_id not in self.held, f"{riddle_id} handed out while it is held"
        assert claim.queue is self.queue[riddle_id], (riddle_id, claim.queue, self.queue)
        assert claim.riddle.rev == self.rev[riddle_id], (riddle_id, claim.riddle.rev)
        expected = self.streak.get(riddle_id)
        if expected is not None:
            assert claim.abandoned == expected, (riddle_id, claim.abandoned, expected)
        self.streak[riddle_id] = claim.abandoned
        self.held[riddle_id] = claim
        if self.is_fs:  # the claim resolved any duplicate: one copy is left
            assert self.copies(riddle_id) == [self.queue[riddle_id]], self.copies(riddle_id)
        self.stale.pop(riddle_id, None)

    # -- rules -----------------------------------------------------------------------------

    @initialize()
    def start(self) -> None:
        assert self.spool.counts() == dict.fromkeys(Queue, 0)

    @precondition(lambda self: len(self.queue) < MAX_IDS)
    @rule(
        batch=st.lists(
            st.tuples(
                st.integers(-1, 1),  # priority
                st.fixed_dictionaries({s: st.booleans() for s in STEP_NAMES}),
            ),
            min_size=1,
            max_size=3,
        )
    )
    def submit(self, batch: list[tuple[int, dict[str, bool]]]) -> None:
        riddles = []
        for priority, required in batch:
            self.counter += 1
            riddle_id = f"r{self.counter}"
            status = {s: {"required": required[s]} for s in STEP_NAMES}
            riddles.append(
                Riddle.model_validate(
                    {
                        "id": riddle_id,
                        "riddle": {"question": "x * y ="},
                        "status": status,
                        "priority": priority,
                    }
                )
            )
        self.spool.add(riddles)
        for riddle, (priority, required) in zip(riddles, batch, strict=True):
            riddle_id = riddle.id or ""
            self.queue[riddle_id] = first_queue(required)
            self.rev[riddle_id] = 1
            found = self.spool.find(riddle_id)
            assert found is not None
            self.rank[riddle_id] = (-priority, found[1].created or 0.0)
            self.streak[riddle_id] = 0

    @precondition(lambda self: self.free())
    @rule(data=st.data())
    def submit_duplicate(self, data: st.DataObject) -> None:
        """An id already in the spool, final or not, refuses the whole batch. (An id that
        is held right now: test_add_refuses_a_duplicate_of_a_held_riddle_at_once.)"""
        existing = data.draw(st.sampled_from(self.free()))
        self.counter += 1
        fresh = f"r{self.counter}"
        riddles = [
            Riddle.model_validate({"id": fresh, "riddle": {"question": "x ="}}),
            Riddle.model_validate({"id": existing, "riddle": {"question": "x ="}}),
        ]
        with pytest.raises(DuplicateId):
            self.spool.add(riddles)
        assert self.spool.find(fresh) is None
        assert self.copies(fresh) == []

    @rule(data=st.data(), limit=st.integers(1, 3), begin=st.booleans())
    def claim(self, data: st.DataObject, limit: int, begin: bool) -> None:
        """An agent claims from a queue (mostly one with free riddles), and maybe starts
        handling what it got (the pipeline calls `begin` when it does).

        A fresh agent (a new spool object: a full scan) must hand out the best-ranked free
        riddles, as many as `limit` allows; an agent working from its backlog may hand out
        fewer, but never one that is held, gone, or stale.
        """
        busy = sorted({self.queue[i] for i in self.free()})
        queue = data.draw(st.sampled_from(busy) if busy else st.sampled_from(QUEUES))
        which = data.draw(st.integers(0, len(self.agents)))  # len: a fresh agent
        if which < len(self.agents):
            agent = self.agents[which]
        elif isinstance(self.spool, FsSpool):
            agent = FsSpool(self.spool.root, durable=False)
        else:
            agent = self.spool  # the memory spool keeps no backlog: every claim is fresh
        strict = isinstance(agent, MemorySpool) or which == len(self.agents)
        candidates = [i for i in self.free() if self.queue[i] is queue]
        claims = agent.claim(queue, limit=limit)
        got = [c.riddle.id or "" for c in claims]
        assert len(got) == len(set(got)) and len(got) <= limit, got
        assert set(got) <= set(candidates), (queue, got, candidates, sorted(self.held))
        if strict:
            assert len(got) == min(limit, len(candidates)), (queue, got, candidates)
            # fairness: nothing left behind ranks strictly before something handed out
            worst = max((self.rank[i] for i in got), default=None)
            for other in set(candidates) - set(got):
                assert worst is None or self.rank[other] >= worst, (other, got)
        for claim in claims:
            self.took(claim, agent)
            if begin:
                agent.begin(claim)
                self.begun.add(claim.riddle.id or "")

    @precondition(lambda self: self.held)
    @rule(
        data=st.data(),
        how=st.sampled_from(["commit", "commit", "fail", "release", "delete", "crash"]),
        to=st.sampled_from(QUEUES),
    )
    def finish(self, data: st.DataObject, how: str, to: Queue) -> None:
        """A held claim ends: committed forward (to any queue), failed, released, deleted,
        or its agent dies (FS only; on the memory spool that is a release)."""
        riddle_id = data.draw(st.sampled_from(sorted(self.held)))
        if how == "commit":
            self._commit(riddle_id, to)
        elif how == "fail":
            self._commit(riddle_id, Queue.FAILED, error="handler refused")
        elif how == "delete":
            self.owner[riddle_id].delete(self.held.pop(riddle_id))
            self.begun.discard(riddle_id)
            self.deleted.add(riddle_id)
        elif how == "crash" and self.is_fs:
            self._die(riddle_id)
        else:
            self._release(riddle_id)
            self.begun.discard(riddle_id)
            self.streak[riddle_id] = None  # the contract leaves the count after it open

    def _release(self, riddle_id: str) -> None:
        """Give a held claim back: the document is unchanged, unless the claim found an
        abandoned attempt, whose history entry it stores first (one commit more)."""
        claim = self.held.pop(riddle_id)
        if claim.found:
            self.rev[riddle_id] += 1
        self.owner[riddle_id].release(claim)

    def _commit(self, riddle_id: str, to: Queue, error: str | None = None) -> None:
        claim = self.held.pop(riddle_id)
        self.begun.discard(riddle_id)
        riddle = claim.riddle.model_copy(deep=True)
        if error is not None:
            riddle.error = error
        stored = self.owner[riddle_id].commit(claim, riddle, to)
        assert stored.rev == self.rev[riddle_id] + 1
        self.rev[riddle_id] = stored.rev
        self.queue[riddle_id] = to
        self.streak[riddle_id] = 0  # a claim that completes resets the count

    def _die(self, riddle_id: str) -> None:
        """The agent dies: its flock goes with it, its claim record (if handling had
        begun) stays in the lock file. A death before `begin` is not charged to the riddle."""
        claim = self.held.pop(riddle_id)
        claim.token.lock.release()
        if riddle_id in self.begun:
            self.begun.discard(riddle_id)
            streak = self.streak.get(riddle_id)
            self.streak[riddle_id] = None if streak is None else streak + 1

    @precondition(lambda self: self.is_fs and self.begun)
    @rule(data=st.data(), to=st.sampled_from(QUEUES))
    def crash_between_rename_and_unlink(self, data: st.DataObject, to: Queue) -> None:
        """An agent handling a riddle dies after its new copy (rev + 1) is renamed into
        `to`, before the old copy is unlinked: two files until the next claim of the id.
        (A commit without `begin`, as the admin commands make: test_interrupted_….)"""
        riddle_id = data.draw(st.sampled_from(sorted(self.begun)))
        claim = self.held[riddle_id]
        if to is claim.queue:
            to = Queue.HOLD if claim.queue is not Queue.HOLD else Queue.DONE
        assert isinstance(self.spool, FsSpool)
        crash_after_rename(self.spool, claim, to)
        self._die(riddle_id)
        self.stale[riddle_id] = claim.queue
        self.queue[riddle_id] = to
        self.rev[riddle_id] += 1
        # Whether this counts as an abandoned claim: test_crash_after_rename_….
        self.streak[riddle_id] = None

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def held_claim_is_exclusive(self, data: st.DataObject) -> None:
        riddle_id = data.draw(st.sampled_from(sorted(self.held)))
        with pytest.raises(TimeoutError):
            self.spool.claim_id(riddle_id, wait=0)

    @precondition(lambda self: any(self.queue[i] is Queue.FAILED for i in self.free()))
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        """`riddlectl retry`: claim a failed riddle by id and put it back into incoming/."""
        failed = [i for i in self.free() if self.queue[i] is Queue.FAILED]
        riddle_id = data.draw(st.sampled_from(failed))
        self.took(self.spool.claim_id(riddle_id, wait=0))
        self._commit(riddle_id, Queue.INCOMING)

    @precondition(lambda self: self.free())
    @rule(data=st.data())
    def claim_id_and_release(self, data: st.DataObject) -> None:
        """Any claim of an id resolves a duplicate: exactly one copy is left after."""
        riddle_id = data.draw(st.sampled_from(self.free()))
        self.took(self.spool.claim_id(riddle_id, wait=0))
        self._release(riddle_id)
        self.streak[riddle_id] = None
        assert self.copies(riddle_id) == [self.queue[riddle_id]]

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def spool_matches_the_model(self) -> None:
        listed = {q: sorted(self.spool.ids(q)) for q in Queue}
        expected: dict[Queue, list[str]] = {q: [] for q in Queue}
        for riddle_id in self.live():
            # found, where the model says, with the highest rev; rev never goes down
            found = self.spool.find(riddle_id)
            assert found is not None, f"{riddle_id} is lost"
            queue, riddle = found
            assert riddle.id == riddle_id
            want = (self.queue[riddle_id], self.rev[riddle_id])
            assert (queue, riddle.rev) == want, (riddle_id, queue, riddle.rev, want)
            assert riddle.rev >= self.seen_rev.get(riddle_id, 0), f"{riddle_id}: rev went down"
            self.seen_rev[riddle_id] = riddle.rev
            # one copy, unless a crash left a second one that no claim has resolved yet
            copies = self.copies(riddle_id)
            expected[self.queue[riddle_id]].append(riddle_id)
            if riddle_id in self.stale:
                assert self.queue[riddle_id] in copies, (riddle_id, copies)
                assert set(copies) <= {self.queue[riddle_id], self.stale[riddle_id]}, copies
                if self.stale[riddle_id] in copies:
                    expected[self.stale[riddle_id]].append(riddle_id)
            else:
                assert copies == [self.queue[riddle_id]], (riddle_id, copies)
        for riddle_id in self.deleted:
            assert self.spool.find(riddle_id) is None, f"{riddle_id} was deleted"
            assert self.copies(riddle_id) == []
        assert listed == {q: sorted(ids) for q, ids in expected.items()}


class FsSpoolMachine(SpoolMachine):
    backend = "fs"


class MemorySpoolMachine(SpoolMachine):
    backend = "memory"


class PgSpoolMachine(SpoolMachine):
    backend = "postgres"


SETTINGS = settings(
    max_examples=60,
    stateful_step_count=30,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

TestFsSpoolProperties = FsSpoolMachine.TestCase
TestFsSpoolProperties.settings = SETTINGS
TestMemorySpoolProperties = MemorySpoolMachine.TestCase
TestMemorySpoolProperties.settings = SETTINGS
# Fewer examples on PostgreSQL: each makes a schema, and every step is a round trip.
TestPgSpoolProperties = pytest.mark.postgres(PgSpoolMachine.TestCase)
TestPgSpoolProperties.settings = settings(SETTINGS, max_examples=15)


@pytest.fixture(autouse=True)
def _needs_a_server(request: pytest.FixtureRequest) -> None:
    if request.cls is TestPgSpoolProperties:
        pg.require()


# -- the cases the machine leaves out, as plain tests -------------------------------------------


def riddle(riddle_id: str) -> Riddle:
    return Riddle.model_validate({"id": riddle_id, "riddle": {"question": "x * y ="}})


def copies_of(spool: FsSpool, riddle_id: str) -> list[Queue]:
    return [q for q in Queue if (spool.dir(q) / f"{riddle_id}.json").exists()]


def crash_after_rename(spool: FsSpool, claim: Claim, to: Queue) -> None:
    """The holder's commit renamed rev + 1 into `to`, then the holder died: its record of
    the move was written first, as every commit that moves a riddle writes it."""
    spool.mark_moving(claim, claim.riddle.rev + 1)
    doc = claim.riddle.to_json()
    doc["rev"] = claim.riddle.rev + 1
    (spool.dir(to) / f"{claim.riddle.id}.json").write_bytes(orjson.dumps(doc))
    claim.token.lock.release()


@pytest.mark.parametrize("backend", ["fs", "memory"])
def test_add_refuses_a_duplicate_of_a_held_riddle_at_once(backend: str, tmp_path: Path) -> None:
    """`submit` of an id that an agent is working on: refused (exit 2), not a wait."""
    spool: Spool = FsSpool(tmp_path / "spool", durable=False) if backend == "fs" else MemorySpool()
    spool.init()
    spool.add([riddle("a")])
    (held,) = spool.claim(Queue.INCOMING)
    box: dict[str, BaseException] = {}

    def add() -> None:
        try:
            spool.add([riddle("b"), riddle("a")])
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=add, daemon=True)
    thread.start()
    thread.join(2.0)
    try:
        assert not thread.is_alive(), "add() of a held id blocked on the holder's lock"
        assert isinstance(box.get("error"), DuplicateId), box
        assert spool.find("b") is None
    finally:
        spool.release(held)
        thread.join(15)


def test_interrupted_commit_without_begin_is_resolved(tmp_path: Path) -> None:
    spool = FsSpool(tmp_path / "spool", durable=False)
    spool.init()
    spool.add([riddle("a")])
    claim = spool.claim_id("a")  # `riddlectl hold a`: claim_id, then commit to hold/
    crash_after_rename(spool, claim, Queue.HOLD)
    assert spool.find("a")[0] is Queue.HOLD  # type: ignore[index]
    stale = spool.claim(Queue.INCOMING)
    assert [c.riddle.rev for c in stale] == [], "the old copy (rev 1) was handed out"
    spool.release(spool.claim_id("a"))
    assert copies_of(spool, "a") == [Queue.HOLD]


@pytest.mark.parametrize(
    "first",
    [
        "new copy",
        "old copy",
    ],
)
def test_crash_after_rename_is_not_an_abandoned_claim(tmp_path: Path, first: str) -> None:
    spool = FsSpool(tmp_path / "spool", durable=False)
    spool.init()
    spool.add([riddle("a")])
    (claim,) = spool.claim(Queue.INCOMING)
    spool.begin(claim)
    crash_after_rename(spool, claim, Queue.EXTRACTED)
    if first == "old copy":
        assert spool.claim(Queue.INCOMING) == []
    (again,) = spool.claim(Queue.EXTRACTED)
    assert (again.riddle.rev, copies_of(spool, "a")) == (2, [Queue.EXTRACTED])
    assert again.abandoned == 0


def test_claim_skips_a_riddle_put_back_with_a_delay_by_another_agent(tmp_path: Path) -> None:
    first = FsSpool(tmp_path / "spool", durable=False)
    first.init()
    second = FsSpool(tmp_path / "spool", durable=False)
    first.add([riddle("a"), riddle("b")])
    (a,) = first.claim(Queue.INCOMING)  # scans [a, b]; b stays in this agent's backlog
    (b,) = second.claim(Queue.INCOMING)
    later = b.riddle.model_copy()
    later.retry_at = time.time() + 100  # type: ignore[attr-defined]
    second.commit(b, later, Queue.INCOMING)  # its handler failed: try again in 100 s
    assert first.claim(Queue.INCOMING) == [], "a riddle not due for 100 s was handed out"
    first.release(a)
