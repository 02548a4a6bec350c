"""The fixed SQL statements: named blocks of ``retrieval/sql/*.sql``, loaded once.

A block starts at a line ``-- name: NAME`` and runs to the next; its first comment lines say
what it does. A statement is asked for as ``"FILE.NAME"`` (``"memory.forget"``) with the
schema it runs in. The one convention, everywhere:

* values are bound parameters in psycopg's named style, ``%(name)s`` (``%(name)b`` for a
  binary one; a literal ``%`` is written ``%%``), on SQLAlchemy connections through
  :func:`execute` (``exec_driver_sql``) and on the read path's psycopg connections as they are;
* the schema is the only identifier written into a statement: ``{schema}``, quoted once here by
  :func:`quote_schema` (``psycopg.sql.Identifier``), after :func:`require_schema` has checked
  that it is a plain identifier; braces that belong to the SQL are doubled (``'{{}}'``).

The read path's statement is composed at run time from templates of the same kind
(``retrieval/sql/read_*.sql``, filled by :func:`retrieval.search.statement.template.template`):
one composition style for all the SQL, with the same two rules.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from psycopg import sql
from sqlalchemy import Connection, CursorResult

from retrieval.db.config import require_schema

if TYPE_CHECKING:  # SQLAlchemy 2.1's name for a row of any columns
    from sqlalchemy.util.typing import TupleAny

_NAME = re.compile(r"^-- name: (\w+)[ \t]*$", re.MULTILINE)


@functools.cache
def quote_schema(schema: str) -> str:
    """``schema`` as a quoted PostgreSQL identifier, once checked to be a plain one."""
    return sql.Identifier(require_schema(schema)).as_string(None)


@functools.cache
def blocks(file: str) -> Mapping[str, str]:
    """The named blocks of ``retrieval/sql/<file>.sql``, read once."""
    source = (resources.files("retrieval") / "sql" / f"{file}.sql").read_text("utf-8")
    found: dict[str, str] = {}
    parts = _NAME.split(source)
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in found:
            raise ValueError(f"{file}.sql names two statements {name!r}")
        lines = body.strip().splitlines()
        while lines and lines[0].startswith("--"):  # the block's description stays in the file
            lines.pop(0)
        found[name] = "\n".join(lines) + "\n"
    return MappingProxyType(found)


def statement(name: str, schema: str | None = None, **fragments: str) -> str:
    """The statement ``"FILE.NAME"`` for ``schema`` (``None`` for one that names no table of
    it); ``fragments`` fill the block's other ``{placeholders}`` (fixed pieces of SQL chosen by
    the code, never values)."""
    file, _, block = name.partition(".")
    try:
        text = blocks(file)[block]
    except KeyError:
        raise KeyError(f"no statement {name!r} in retrieval/sql/{file}.sql") from None
    if schema is not None:
        fragments["schema"] = quote_schema(schema)
    return text.format(**fragments)


def execute(
    connection: Connection, query: str, params: Mapping[str, Any] | None = None
) -> CursorResult[*TupleAny]:
    """Run ``query`` (``%(name)s`` placeholders) on a SQLAlchemy connection, as the driver
    would: no second placeholder syntax, no SQL compilation."""
    return connection.exec_driver_sql(query, dict(params or {}))
