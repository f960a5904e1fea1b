"""Storage of riddles in queues: the spool contract, its states and routing, the in-memory
twin; `fs/` is the filesystem implementation, chosen by `open_spool` and by nothing else.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from riddlectl.errors import SpoolUnusable

if TYPE_CHECKING:
    from riddlectl.document.codec import Limits
    from riddlectl.identity import Actor
    from riddlectl.spool.contract import Spool

NO_SPOOL = "no spool here (create one with riddlectl init)"
# `postgresql://…` (a path keeps one slash of the two: `Path` made it `postgresql:/…`).
_POSTGRES = re.compile(r"postgres(ql)?(\+\w+)?:/", re.IGNORECASE)


def open_spool(
    target: str | os.PathLike[str],
    *,
    create: bool = True,
    writable: bool = False,
    actor: Actor | None = None,
    durable: bool = True,
    drop_in_grace: float | None = None,
    limits: Limits | None = None,
    events_max_bytes: int | None = None,
    data_dir: Path | None = None,
    max_data_bytes: int | None = None,
) -> Spool:
    """The spool `target` names: a directory (the filesystem spool), or a
    `postgresql://` URL (the PostgreSQL spool: see docs/postgresql.md).

    `create`: made (idempotently) if need be; otherwise it must already be a spool
    (`SpoolUnusable` saying why not). `writable`: it must be writable too, and what a
    writer needs is made. Nothing is created in a place that is refused. The other
    options are the filesystem spool's (None: its defaults); a PostgreSQL spool takes
    `actor` and `limits`, is always durable, and keeps the data files new riddles name
    in `data_dir` (within `max_data_bytes`), so that agents elsewhere need no copy.
    """
    text = os.fspath(target)
    if _POSTGRES.match(text):
        return _open_postgres(
            text,
            create=create,
            actor=actor,
            limits=limits,
            data_dir=data_dir,
            max_data_bytes=max_data_bytes,
        )
    from riddlectl.spool.fs.opening import open_fs  # only what the target needs is loaded

    return open_fs(
        Path(text),
        create=create,
        writable=writable,
        actor=actor,
        durable=durable,
        drop_in_grace=drop_in_grace,
        limits=limits,
        events_max_bytes=events_max_bytes,
    )


def _open_postgres(text: str, *, create: bool, **options: Any) -> Spool:
    try:
        from riddlectl.spool.postgres.opening import open_pg
    except ImportError as exc:
        if exc.name not in ("psycopg", "psycopg_binary"):
            raise
        raise SpoolUnusable(
            "PostgreSQL spools need psycopg: pip install 'riddlectl[postgres]'",
            where=_no_password(text),
        ) from None
    return open_pg(text, create=create, **options)


def remove_spool(target: str) -> None:
    """Drop a PostgreSQL spool's schema and all it holds (`bench` cleans up so); a
    directory spool is the caller's to remove."""
    if _POSTGRES.match(target):
        from riddlectl.spool.postgres.opening import drop

        drop(target)


def is_url(target: str | os.PathLike[str]) -> bool:
    """Whether `target` names a spool that is no directory (a `postgresql://` URL)."""
    return _POSTGRES.match(os.fspath(target)) is not None


def shown(target: str | os.PathLike[str]) -> str:
    """A spool as output names it: a directory as given, a URL without its password."""
    text = os.fspath(target)
    return _no_password(text) if _POSTGRES.match(text) else text


def location(target: str | os.PathLike[str]) -> str:
    """A spool as handlers are told it (`RIDDLE_SPOOL`): a directory's absolute path, a
    URL without its password."""
    text = os.fspath(target)
    return _no_password(text) if _POSTGRES.match(text) else str(Path(text).resolve())


def spool_error(exc: OSError, root: Path) -> SpoolUnusable:
    """An `OSError` met on the spool at `root`, as the one-line error that names its path."""
    if isinstance(exc, FileNotFoundError) and not root.exists():
        return SpoolUnusable(NO_SPOOL, where=str(root))
    if isinstance(exc, NotADirectoryError):
        return SpoolUnusable("not a directory, so not a spool", where=str(root))
    return SpoolUnusable(exc.strerror or str(exc), where=str(exc.filename or root))


def _no_password(url: str) -> str:
    """The URL as given (two slashes again), without the password it may hold."""
    url = re.sub(r"^([^:/]+):/(?!/)", r"\1://", url)
    return re.sub(r"^([^:/]+://[^/:@]*):[^/@]*@", r"\1:…@", url)
