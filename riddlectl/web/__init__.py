"""`riddlectl serve`: the web form, the table, a riddle's page, the JSON API and metrics.

A thin skin over the same library calls as the command line (`ops/`): it works on any
`Spool` and reaches none of a spool's internals. What the table needs is kept in a
disposable index (`index`), rebuilt from the spool whenever it is missing and kept
current from the event log (`keeper`). The third-party packages it needs come with the
`web` extra and are imported only here, so that `riddlectl status` never loads them.
"""

from __future__ import annotations

import importlib.util

from riddlectl.errors import RiddleError

EXTRA_MODULES = ("fastapi", "uvicorn", "jinja2", "sse_starlette", "multipart")


def require_extra() -> None:
    """Refuse in one line, naming the extra, when the web packages are not installed."""
    missing = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise RiddleError(
            f"the web UI needs {', '.join(missing)}: pip install 'riddlectl[web]'",
            where="serve",
        )
