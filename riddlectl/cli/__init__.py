"""The command line: thin typer modules over the library."""

# `app` holds what every command shares; the commands live in their own modules and
# register themselves on it when imported (here, so that they never import each other
# in a circle).
from riddlectl.cli import admin, agents, cache, query, submit  # noqa: F401
from riddlectl.cli.app import main

__all__ = ["main"]
