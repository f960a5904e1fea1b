"""The spool contract: what the pipeline needs from storage, and nothing more.

Queue semantics (routing, retries, trials) live in the agents; a spool stores documents
in named queues and hands out exclusive claims on them, and keeps what goes with them:
the event log (`events`), the extraction cache (`extractions`), the input it could not
read (`set_aside`), wake-ups for idle agents (`watch`), and the repair of what a crash
left (`recover`, `examine`). The filesystem spool (`fs/`) is the first implementation,
`MemorySpool` its in-memory twin for fast tests, the PostgreSQL spool (`postgres/`) the
one for agents on many hosts; all are held to one contract test suite (tests/contract).
Nothing outside a back end's subpackage knows which one it has: `open_spool` chooses,
from the scheme table (`schemes`), and callers ask the spool what they need to know
(`name`, `local_root`).
"""

from __future__ import annotations

import abc
import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from riddlectl.document.codec import Limits
from riddlectl.document.events import MAX_HISTORY, Event
from riddlectl.document.ids import ID_RE
from riddlectl.entries import shown
from riddlectl.errors import DocumentTooLarge, DuplicateId, RiddleError, UnknownRiddle
from riddlectl.identity import Actor
from riddlectl.spool.agents import Seat
from riddlectl.spool.events import Committed, EventLog
from riddlectl.spool.extractions import ExtractionCache
from riddlectl.spool.states import STAGE_OF_INBOX, Queue

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle

# Seconds `claim_id` waits for a riddle's holder before it says so (`Spool.on_wait`).
WAIT_NOTICE = 0.5


@dataclass
class Claim:
    """An exclusive hold on one riddle in one queue, until committed or released."""

    riddle: Riddle
    queue: Queue
    abandoned: int = 0  # claims of this riddle whose agent died before finishing, in a row
    token: Any = field(default=None, repr=False)  # the backend's lock handle
    open: bool = True  # until committed, released or deleted
    # Its commit is stored whatever its size: set for the failure of a document stored
    # before the size limit was lowered, which may not fit under the new one.
    unbounded: bool = False
    # Asks the spool to keep holding the riddle after its next commit (to a queue that is
    # not final), the claim then standing for the riddle as stored there, so that the
    # process goes on with it without claiming it again. A spool that cannot ends the
    # claim as usual (`open` tells which happened).
    keep: bool = False
    # Its handling is marked begun already (`claim_and_begin`): `begin` need not be asked.
    begun: bool = False
    # History entries this claim found (the attempt of an agent that died holding the
    # riddle), in `riddle.history` and the event log, which only a commit stores: given
    # back uncommitted, the claim stores them first (`Spool.keep_found`).
    found: list[dict[str, Any]] = field(default_factory=list, repr=False)


class DataPlace:
    """Where one stage reads a riddle's data files: a directory holding them by their
    relative paths (`file_plain`), made at its first use (`path`), so that a stage whose
    handlers never open a file pays nothing for it; and the SHA-256 of each file whose
    content the spool keeps (`digest`), which names an extraction without reading it."""

    def __init__(
        self, directory: Path | Callable[[], Path], digests: dict[str, str] | None = None
    ) -> None:
        self._directory = directory
        self._digests = digests or {}
        self._lock = threading.Lock()

    def path(self) -> Path:
        with self._lock:
            if not isinstance(self._directory, Path):
                self._directory = self._directory()
            return self._directory

    def digest(self, file_plain: str) -> str | None:
        return self._digests.get(file_plain)


def one_name(name: str) -> bool:
    """Whether `name` names one entry (no path, no `.`/`..`): what names a set-aside file."""
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


@dataclass(frozen=True)
class Corrupt:
    """Input set aside because it could not be read as a riddle: its name, and why; its
    size in bytes, and what it is when it is no regular file (`kind`: `a FIFO`, `a
    symbolic link`, `a directory`, …, as `entries.kind_of` says), which is never read.
    Two are equal by name and reason."""

    name: str
    reason: str
    size: int = field(default=0, compare=False)
    kind: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class DropIn:
    """An entry of a queue as it was dropped in, not taken in by a claim yet: its name,
    its bytes, and when it arrived (ms; with the name and the bytes, what gives an entry
    whose name is no id its id: `dropins.drop_in_id`)."""

    name: str
    raw: bytes
    stamp: int


@dataclass(frozen=True)
class Unreadable:
    """An entry that cannot be read as it is (a FIFO, a file without read permission):
    where it lies, and why."""

    where: str
    reason: str


@dataclass
class Finding:
    """Something `doctor` reports: what kind, about what, and whether it was mended.
    `warning`: about the spool's surroundings (a server's settings, its connections, a
    transaction held open by another program), not the spool itself."""

    kind: str
    subject: str
    detail: str
    fixed: bool = False
    warning: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "detail": self.detail,
            "fixed": self.fixed,
            "level": "warning" if self.warning else "problem",
        }


class Watch(Protocol):
    """Wake-ups being delivered, until stopped."""

    def stop(self) -> None: ...


class Spool(abc.ABC):
    """Storage of riddle documents in queues, with exclusive claims.

    Invariants every implementation keeps: an id is in exactly one queue once any
    interrupted commit is resolved (the copy with the higher `rev` wins); `rev` grows by
    one on every commit; a claim's holder dying releases the claim.
    """

    # Riddles the last `claim` skipped because another agent held them (0 where claims
    # never contend across processes): the agent loop looks again soon when it is not 0.
    contended: int = 0
    # Whether the last `claim` saw its whole queue and took every riddle due in it (fewer
    # than its limit): the agent loop then waits for the next wake-up instead of claiming
    # again at once. False where a claim may look at part of a queue only.
    drained: bool = False
    # Called with the id, once per `claim_id`, when that claim has waited `WAIT_NOTICE` s
    # for the riddle's holder: how a command tells its user why it is silent.
    on_wait: Callable[[str], None] | None = None
    # Document sizes: the spool reads documents up to `limits.readable` and sets drop-ins
    # over `limits.new_riddle` aside; the pipeline keeps what it commits within them.
    limits: Limits = Limits()
    # Who this spool object acts for (the agent or command that opened it): named in the
    # events the spool logs itself (`log_set_aside`); None: `riddlectl`.
    actor: Actor | None = None

    def log_set_aside(self, queue: Queue, name: str, reason: str) -> None:
        """Log that the entry `name` of `queue` was set aside, and why (a `corrupt`
        event): whoever read it, a user reading the event log learns of it."""
        from riddlectl.logbook import logger

        actor = self.actor or Actor("riddlectl")
        stage = STAGE_OF_INBOX.get(queue)
        # A name that is no UTF-8 is logged as printed: the log is JSON.
        name, reason = shown(name), shown(reason)
        self.events.append(Event.corrupt(actor, queue.value, stage, name, reason).to_json())
        where = {"stage": stage, "agent": actor.name, "queue": queue.value, "file": name}
        logger(__name__).warning("set-aside", extra={**where, "reason": reason})

    def log_abandoned(
        self, queue: Queue, riddle: Riddle, owner: dict[str, Any], count: int
    ) -> dict[str, Any]:
        """A claim found its holder dead (`owner`, its claim record; `count` such claims
        in a row): the event is logged now, and is the riddle's history entry of that
        attempt, stored with the claimed document's next commit (or, should the claim be
        given back first, by `keep_found`); the entry."""
        from riddlectl.logbook import logger

        stage = STAGE_OF_INBOX.get(queue, queue.value)
        event = Event.abandoned(riddle.id, stage, queue.value, riddle.rev, owner, count)
        logged = event.to_json()
        self.events.append(logged)
        riddle.history = [*riddle.history, logged][-MAX_HISTORY:]
        logger(__name__).warning(
            "claim-recovered",
            extra={
                "id": riddle.id,
                "stage": stage,
                "agent": self.actor.name if self.actor else None,
                "dead": {k: owner.get(k) for k in ("agent", "host", "pid") if owner.get(k)},
                "in_a_row": count,
            },
        )
        return logged

    def keep_found(self, claim: Claim) -> None:
        """Before `claim` is given back uncommitted: store the history entries it found
        (`Claim.found`) with the document as it is stored, in the same queue, as nothing
        else would (the next claim of the riddle finds no dead holder). Ends the claim
        when stored; when the spool refuses the write, the claim is left to be given back,
        and the entries are in the event log only."""
        if not claim.open or not claim.found:
            return
        found, claim.found = claim.found, []
        with contextlib.suppress(OSError, RiddleError):
            riddle = self.reread(claim)
            riddle.history = [*riddle.history, *found][-MAX_HISTORY:]
            self.commit(claim, riddle, claim.queue)

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """How output names this spool: its directory, or its URL without the password."""

    @property
    def local_root(self) -> Path | None:
        """The directory holding this spool on this machine, for programs that read it
        directly (a `cmd:` handler's `RIDDLE_SPOOL`); None for a spool that is none."""
        return None

    @property
    @abc.abstractmethod
    def events(self) -> EventLog:
        """The spool's event log."""

    @property
    @abc.abstractmethod
    def extractions(self) -> ExtractionCache:
        """The spool's extraction cache."""

    @abc.abstractmethod
    def init(self) -> None:
        """Create the layout; idempotent."""

    @abc.abstractmethod
    def add(self, riddles: Iterable[Riddle], queue: Queue | None = None) -> None:
        """Store new riddles, each in `queue` or the queue its routing names.

        Refuses with `DuplicateId` (storing none) when any id is already in the spool.
        """

    @abc.abstractmethod
    def restore(self, riddles: Sequence[Riddle], queue: Queue) -> None:
        """Store documents into `queue` exactly as they are (`rev`, times and history
        kept): how `copy` moves a spool. `DuplicateId` (storing none) when an id is taken."""

    @abc.abstractmethod
    def claim(self, queue: Queue, limit: int = 1, now: float | None = None) -> list[Claim]:
        """Claim up to `limit` due riddles of `queue`: highest priority, then oldest.

        Riddles held by another claim or whose `retry_at` lies after `now` are skipped;
        an empty queue gives an empty list.
        """

    def claim_and_begin(
        self, queue: Queue, limit: int = 1, now: float | None = None
    ) -> list[Claim]:
        """`claim`, then `begin` on the first claim (in order), for a caller that handles
        it at once, as an agent does: a spool that can does both in one step (on
        PostgreSQL, one statement instead of two round trips). The others are not begun.
        A `begin` that fails here (a full disk) leaves the first not begun: the caller's
        own `begin` meets the failure again where its attempt handles it, and gives every
        claim back."""
        claims = self.claim(queue, limit, now)
        if claims:
            with contextlib.suppress(OSError):
                self.begin(claims[0])
                claims[0].begun = True
        return claims

    @abc.abstractmethod
    def claim_id(self, riddle_id: str, wait: float = 5.0) -> Claim:
        """Claim one riddle wherever it is, waiting up to `wait` s for its current holder
        (calling `on_wait` once past `WAIT_NOTICE` s).

        `UnknownRiddle` when no queue has it; `TimeoutError` when it stays claimed. An
        unknown id leaves nothing behind.
        """

    @abc.abstractmethod
    def commit(self, claim: Claim, riddle: Riddle, to: Queue) -> Riddle:
        """Atomically store `riddle` in `to` (rev + 1), remove it from the claim's queue,
        and release the claim. Returns the stored document."""

    def commit_many(self, moves: Sequence[tuple[Claim, Riddle, Queue]]) -> list[Riddle]:
        """`commit` each (claim, riddle, to), as one group where the spool can (one flush
        of the disk for all). On an error, the claims not yet committed stay open.

        `DocumentTooLarge` (with the sizes, storing none) when a document would be larger
        than `limit_for` its destination, unless its claim is `unbounded`."""
        return [self.commit(claim, riddle, to) for claim, riddle, to in moves]

    def commit_and_begin(
        self, moves: Sequence[tuple[Claim, Riddle, Queue]], following: Claim
    ) -> list[Riddle]:
        """`commit_many`, the holder going on to `following`, the next riddle of its batch.
        A spool that can mark `following` begun in the same step does, and sets
        `following.begun`; by default it is begun when its handling starts."""
        return self.commit_many(moves)

    def limit_for(self, to: Queue) -> int:
        """How large a document may be stored in `to`: the whole limit in `failed/`;
        elsewhere less the room its failure may need (see `Limits`)."""
        return self.limits.document if to is Queue.FAILED else self.limits.on_its_way

    def refuse_oversize(self, sized: Iterable[tuple[Claim, Riddle, Queue, int]]) -> None:
        """`DocumentTooLarge` if any (claim, riddle, to, size in bytes) is over its limit."""
        over = {
            riddle.id or "": size
            for claim, riddle, to, size in sized
            if size > self.limit_for(to) and not claim.unbounded
        }
        if over:
            raise DocumentTooLarge(
                f"over the size limit: {', '.join(over)}", where="commit", sizes=over
            )

    def begin(self, claim: Claim) -> None:  # noqa: B027 - optional hook, no-op by default
        """Mark a claimed riddle as being handled: if the holder dies before committing or
        releasing, the next claim counts one abandoned claim (poison detection)."""

    def handled(self, claim: Claim) -> None:  # noqa: B027 - optional hook, no-op by default
        """Mark the handling of a claimed riddle as over, its commit still to come: the
        holder dying now is not the riddle's fault (see `begin`)."""

    def hand_over(self, done: Claim, following: Claim) -> None:
        """`handled(done)`, the holder going on to `following`, the next riddle of its
        batch. A spool that can mark `following` begun in the same step does, and sets
        `following.begun`; by default it is begun when its handling starts."""
        self.handled(done)

    @abc.abstractmethod
    def reread(self, claim: Claim) -> Riddle:
        """The claimed riddle's document as stored, whatever its holder did meanwhile to
        `claim.riddle`: what a step that cannot be committed falls back to."""

    @abc.abstractmethod
    def release(self, claim: Claim) -> None:
        """Give a claim back without changing the document (but for the history entries
        it found, stored first: `keep_found`). It cannot fail for want of the spool: one
        that cannot be told now (a database that refuses writes for a while) is given
        back as soon as it can be, or when this process ends."""

    @abc.abstractmethod
    def find(self, riddle_id: str) -> tuple[Queue, Riddle] | None:
        """Where a riddle is and what it holds; None when unknown."""

    @abc.abstractmethod
    def ids(self, queue: Queue) -> list[str]:
        """The ids in one queue, in no particular order."""

    @abc.abstractmethod
    def read(self, queue: Queue, riddle_id: str) -> Riddle | None:
        """One document from one queue, None when it is not there."""

    @abc.abstractmethod
    def delete(self, claim: Claim) -> None:
        """Remove a claimed riddle from the spool for good (purge)."""

    def counts(self) -> dict[Queue, int]:
        return {queue: len(self.ids(queue)) for queue in Queue}

    # -- input from outside -------------------------------------------------------------

    @abc.abstractmethod
    def drop_in(self, queue: Queue, name: str, raw: bytes) -> None:
        """Put `raw` into `queue` as the entry `name` (no path: one name), as another
        program drops a file into a spool: read when claimed, by the rules of `dropins`
        (stored under its own id, or set aside when it is no riddle)."""

    def drop_ins(self, queue: Queue, entries: Sequence[tuple[str, bytes]]) -> None:
        """`drop_in` for each of `entries` (name, raw), as one write where the spool can
        (`ingest` takes a directory's files in batches); each entry is there or not."""
        for name, raw in entries:
            self.drop_in(queue, name, raw)

    @abc.abstractmethod
    def set_aside(self, queue: Queue, name: str, reason: str) -> None:
        """Take the entry `name` of `queue` (a drop-in's name, or `ID.json`) out of the
        queue as input that is no riddle: listed by `corrupt_files` with `reason` from
        then on, and logged (`log_set_aside`)."""

    @abc.abstractmethod
    def corrupt_files(self) -> list[Corrupt]:
        """The input set aside as unreadable, by name, with the reasons; none when empty."""

    def corrupt_entry(self, name: str) -> Corrupt | None:
        """The set-aside entry `name` as `corrupt_files` lists it, its content unread;
        None when there is none."""
        return next((entry for entry in self.corrupt_files() if entry.name == name), None)

    @abc.abstractmethod
    def corrupt_content(self, name: str) -> bytes | None:
        """The bytes of the set-aside entry `name` (a name `corrupt_files` lists), as they
        were when set aside; None when there is no such entry (or `name` is no one name)
        or it is no regular file (`corrupt_entry` says what it is): that is never read."""

    @abc.abstractmethod
    def drop_corrupt(self, name: str) -> None:
        """Delete the set-aside entry `name` and its reason; `FileNotFoundError` when there
        is none."""

    # -- copying a whole spool -----------------------------------------------------------

    def contents(self, queue: Queue) -> Iterator[Riddle | DropIn | Unreadable]:
        """Everything `queue` holds, as `copy` takes it: the riddles stored, and the
        drop-ins no claim has taken in, as they were dropped in (names other programs
        write under are none). What cannot be read is `Unreadable`."""
        yield from self.iter_queue(queue)

    @abc.abstractmethod
    def restore_drop_ins(self, queue: Queue, entries: Sequence[DropIn]) -> None:
        """Put `entries` into `queue` as they were dropped in, each with its stamp (so
        that it is the riddle of the same id): how `copy` moves drop-ins."""

    @abc.abstractmethod
    def restore_set_aside(self, entries: Sequence[tuple[Corrupt, bytes]]) -> None:
        """Keep each (name and reason, bytes) as input set aside, as `set_aside` keeps
        it, without an event: how `copy` moves what was set aside."""

    # -- agents -------------------------------------------------------------------------

    @abc.abstractmethod
    def watch(self, queues: Iterable[Queue], wake: threading.Event) -> Watch | None:
        """Set `wake` whenever a riddle arrives in one of `queues` (stored, committed or
        dropped in), until the returned watch is stopped. A hint, not the truth: it may
        be late, missed or spurious, so a waiting agent also looks by itself now and
        then. None when no watch can be made now (polling alone still works)."""

    @abc.abstractmethod
    def recover(self, committed: Committed) -> int:
        """Settle what agents that died left behind (an agent calls this when it starts):
        their leftovers are tidied away, and the events of their commits that took place
        (`committed`) and were not logged are logged; how many events that was."""

    @abc.abstractmethod
    def examine(self, fix: bool = False) -> list[Finding]:
        """What is wrong with the storage itself (a crash's or a person's doing): copies
        of one riddle in two queues, leftovers of dead writers, what is no riddle in a
        queue. With `fix`, what is safe to mend is mended (`Finding.fixed`). Empty for
        a healthy spool. Riddles' own troubles (orphans, corrupt input) are `doctor`'s."""

    @abc.abstractmethod
    def register_agent(self, record: Mapping[str, Any]) -> Seat:
        """Keep a record of the agent this process runs (`record`: its agent name,
        stages, handlers, concurrency; see `agents.new_record`) for as long as it runs:
        alive while this process holds the seat, gone once it is closed or the process
        dies, however it dies (see `riddlectl.spool.agents`)."""

    @abc.abstractmethod
    def agents(self) -> list[dict[str, Any]]:
        """The agents' records: those alive now, and those gone within
        `agents.GONE_KEPT` s, each with `alive` (see `agents.shown`); the alive first."""

    def health(self) -> dict[str, Any] | None:
        """Figures of the database under the spool, for `doctor --json` and `/metrics`
        (dead rows, the oldest open transaction, autovacuum); None for a spool that has
        no database. What is wrong in them `health_findings` says."""
        return None

    def health_findings(self, figures: dict[str, Any]) -> list[Finding]:
        """What `doctor` warns of in `figures` (from `health`), one finding each, with
        what to do; never mended by `--fix` (a person changes the server)."""
        return []

    def holders(self) -> list[dict[str, Any]]:
        """The agents (and commands) holding claims in this spool now, as far as the
        spool can tell (a claim of this process may count), each as its claim record
        (agent, host, pid) where there is one: what `copy` refuses to run beside."""
        return []

    def data_files(
        self, riddle: Riddle, data_dir: Path
    ) -> contextlib.AbstractContextManager[DataPlace]:
        """Around one stage's handling of `riddle`: where its data files are read from,
        by the same relative paths (`file_plain`). A spool that keeps the files itself
        gives a local copy, made when first asked for and kept for the time of the
        handling; the others (the default) give `data_dir`, where the files were at
        submit."""
        return contextlib.nullcontext(DataPlace(data_dir))

    def close(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Give back what this process keeps in reserve in the spool (spare files kept
        for reuse, say); the spool stays usable, and takes them again as needed."""

    def recent(self, limit: int, queues: Iterable[Queue] = tuple(Queue)) -> list[tuple[Queue, str]]:
        """The `limit` most recently changed riddles of `queues`, newest first."""
        found = [(r.updated or 0.0, q, r.id or "") for q in queues for r in self.iter_queue(q)]
        found.sort(reverse=True)
        return [(q, riddle_id) for _, q, riddle_id in found[:limit]]

    def holds(self, queue: Queue, riddle_id: str) -> bool:
        """Whether `queue` holds the riddle, as cheaply as the spool can tell."""
        return riddle_id in self.ids(queue)

    def iter_queue(self, queue: Queue) -> Iterator[Riddle]:
        for riddle_id in self.ids(queue):
            riddle = self.read(queue, riddle_id)
            if riddle is not None:
                yield riddle

    def require(self, riddle_id: str) -> tuple[Queue, Riddle]:
        found = self.find(riddle_id)
        if found is None:
            raise unknown(riddle_id)
        return found

    def refuse_duplicates(self, riddles: Iterable[Riddle]) -> None:
        riddles = list(riddles)
        assert all(riddle.id is not None for riddle in riddles)
        refuse_repeats(riddles, lambda riddle_id: self.find(riddle_id) is not None)


def already_stored(riddle_id: str) -> DuplicateId:
    """The error for an id the spool holds already (or that comes twice in one call)."""
    return DuplicateId("id already in the spool", where=riddle_id, field="id")


def refuse_repeats(
    riddles: Iterable[Riddle], stored: Callable[[str], bool] = lambda _: False
) -> None:
    """`already_stored` for the first id of `riddles` that comes twice, or that `stored`
    says the spool holds. A spool that locks each id refuses repeats before taking any
    lock: the second lock of one id would wait for the first."""
    seen: set[str] = set()
    for riddle_id in (riddle.id or "" for riddle in riddles):
        if riddle_id in seen or stored(riddle_id):
            raise already_stored(riddle_id)
        seen.add(riddle_id)


def unknown(riddle_id: str) -> UnknownRiddle:
    """The error for an id the spool does not hold; one that is not even a valid id is
    shown quoted and escaped, so that it stays one bounded line."""
    if ID_RE.fullmatch(riddle_id):
        return UnknownRiddle("no such riddle in the spool", where=riddle_id)
    return UnknownRiddle(
        "no such riddle in the spool (not a valid riddle id)", where=repr(riddle_id[:60])
    )


def busy(riddle_id: str, wait: float) -> TimeoutError:
    return TimeoutError(f"{riddle_id}: still handled by an agent after {wait:g} s")


def stamp(riddle: Riddle, now: float | None = None) -> Riddle:
    """A copy of `riddle` with `rev` + 1 and `updated` set, as every commit stores it."""
    now = time.time() if now is None else now
    update: dict[str, Any] = {"rev": riddle.rev + 1, "updated": now}
    if riddle.created is None:
        update["created"] = now
    return riddle.model_copy(update=update)


def order_key(riddle: Riddle) -> tuple[int, float, str]:
    """Fairness (docs/guarantees.md#fair): higher priority first, then oldest, then by id."""
    return (-riddle.priority, riddle.created or 0.0, riddle.id or "")


def retry_at(riddle: Riddle) -> float:
    value = riddle.extensions().get("retry_at")
    return float(value) if isinstance(value, int | float) else 0.0
