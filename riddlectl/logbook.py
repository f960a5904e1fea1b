"""The library's log lines (what `run` and `agent` print on stderr): each room emits to its
own logger, `logger(__name__)`, an event name as the message and its fields as `extra`
(`id`, `stage`, `agent`, `error`, …). The library never decides where they go: the
command line alone installs a handler (`riddlectl.cli.logs`). Imported only where an
event is emitted, so that `riddlectl status` does not load `logging`.
"""

from __future__ import annotations

import logging

# Without a handler installed, nothing is printed: not even a warning through logging's
# last resort, which would reach the terminal of a command that moved a riddle
# (`cancel`), where the agents' log lines have no place.
logging.getLogger("riddlectl").addHandler(logging.NullHandler())


def logger(name: str) -> logging.Logger:
    """The logger of the module `name` (its `__name__`), under `riddlectl`."""
    return logging.getLogger(name)
