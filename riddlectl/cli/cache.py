"""`riddlectl cache clear`: drop cached extractions."""

from __future__ import annotations

from typing import Annotated

import typer

from riddlectl import runtime
from riddlectl.cli.common import command_group, guarded, resolve
from riddlectl.errors import RiddleError, SpoolUnusable

app = command_group()
cache_app = command_group(
    help="The extraction cache (cache/extractions/ in the spool).", no_args_is_help=True
)
app.add_typer(cache_app, name="cache")


@cache_app.command()
@guarded
def clear(
    ctx: typer.Context,
    extractor: Annotated[
        str | None,
        typer.Option(
            help="Only this extractor's extractions (its handler name, e.g. text).",
            metavar="NAME",
        ),
    ] = None,
) -> None:
    """Drop cached extractions; riddles that used them are extracted again when needed.

    Safe while agents run. Prints how many were dropped.
    """
    settings = resolve(ctx)
    if extractor is not None:
        _check_extractor(extractor)
    spool = runtime.open_spool(settings, create=False)  # a missing spool is an error, not made
    try:
        dropped = spool.extractions.clear(extractor)
    except OSError as exc:
        raise SpoolUnusable(
            f"cannot drop cached extractions: {exc.strerror or exc}",
            where=str(exc.filename or spool.name),
        ) from None
    typer.echo(f"dropped {dropped} cached extraction(s)")


def _check_extractor(name: str) -> None:
    """Refuse a name no extractor has: a built-in's, or a handler named as `--handler`
    names one (`cmd:…`, `http:…`, `module:function`), so that a typo is not "dropped 0"."""
    from riddlectl.handlers.registry import builtin_names

    known = sorted(builtin_names("extract"))
    if name in known or ":" in name:
        return
    raise RiddleError(
        f"no extractor {name} (known: {', '.join(known)}, or a handler as --handler names one)",
        where="cache clear",
        field="--extractor",
    )
