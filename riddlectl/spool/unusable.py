"""A spool that cannot be used: the one-line errors that say why."""

from __future__ import annotations

import os
from pathlib import Path

from riddlectl.errors import SpoolUnusable

NO_SPOOL = "no spool here (create one with riddlectl init)"


def spool_error(exc: OSError, root: str | os.PathLike[str]) -> SpoolUnusable:
    """An `OSError` met on the spool at `root`, as the one-line error that names its path."""
    root = Path(root)
    if isinstance(exc, FileNotFoundError) and not root.exists():
        return SpoolUnusable(NO_SPOOL, where=str(root))
    if isinstance(exc, NotADirectoryError):
        return SpoolUnusable("not a directory, so not a spool", where=str(root))
    return SpoolUnusable(exc.strerror or str(exc), where=str(exc.filename or root))
