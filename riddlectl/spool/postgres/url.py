"""Spool URLs: `postgresql://user@host:port/db?schema=NAME`, and what psycopg is given.

The schema is riddlectl's own query parameter (libpq has no such one): it is taken out
of the URL before connecting, and every connection sets its `search_path` to it. Without
it, the schema is `riddlectl`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from riddlectl.errors import SpoolUnusable

DEFAULT_SCHEMA = "riddlectl"
SCHEMA_RE = re.compile(r"[a-z_][a-z0-9_]{0,52}")  # + "riddlectl_": a NOTIFY channel


@dataclass(frozen=True)
class SpoolUrl:
    conninfo: str  # the URL without `schema`, as libpq takes it
    schema: str
    shown: str  # the URL as given, without its password: for messages

    @property
    def channel(self) -> str:
        """The NOTIFY channel of this spool: channels are per database, not per schema."""
        return f"riddlectl_{self.schema}"


def parse(text: str) -> SpoolUrl:
    """The spool URL `text` (`postgres://` or `postgresql://`; a path's single slash after
    the scheme is put back), or `SpoolUnusable` naming what is wrong with it."""
    text = re.sub(r"^([A-Za-z+]+):/(?!/)", r"\1://", text)
    shown = redact(text)
    parts = urlsplit(text)
    scheme = parts.scheme.lower().split("+")[0]
    if scheme not in ("postgres", "postgresql"):
        raise SpoolUnusable("not a PostgreSQL URL", where=shown)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for key, value in query if key == "schema"]
    schema = schemas[-1] if schemas else DEFAULT_SCHEMA
    if not SCHEMA_RE.fullmatch(schema):
        raise SpoolUnusable(
            "schema must be lower-case letters, digits and _ (at most 53)", where=shown
        )
    # Spaces as %20: libpq reads a `+` in a URL as itself (`options=-c%20a%3Db`).
    rest = urlencode([(key, value) for key, value in query if key != "schema"], quote_via=quote)
    conninfo = urlunsplit(("postgresql", parts.netloc, parts.path, rest, ""))
    return SpoolUrl(conninfo, schema, shown)


def redact(url: str) -> str:
    """`url` without the password it may hold."""
    return re.sub(r"^([^:/]+://[^/:@]*):[^/@]*@", r"\1:…@", url)


def with_schema(text: str, schema: str) -> str:
    """The spool URL `text` with `schema` in place of any schema it names."""
    url = parse(text)
    return f"{url.conninfo}{'&' if '?' in url.conninfo else '?'}schema={schema}"
