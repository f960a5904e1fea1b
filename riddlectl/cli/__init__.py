"""The command line: thin typer modules over the library."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> None:
    """The `riddlectl` command. Ctrl-C while its modules load ends it as Ctrl-C ends any
    command (exit 130), not with a traceback of the import it interrupted."""
    try:
        from riddlectl.cli.app import main as run
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    run(argv)


__all__ = ["main"]
