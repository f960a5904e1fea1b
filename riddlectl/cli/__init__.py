"""The command line: thin typer modules over the library."""

from riddlectl.cli.app import main

__all__ = ["main"]
