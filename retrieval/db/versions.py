"""The PostgreSQL and pgvector versions a database runs, read once, and what each allows.

What the library needs, and what it does below it (docs/deployment.md has the table):

* PostgreSQL 13 or newer: refused below, in one line naming the version found.
* pgvector 0.5.0 or newer (HNSW indexes): refused below, naming the version found.
* ``halfvec`` (pgvector 0.7.0): below it, a schema asked to store ``halfvec`` stores ``vector``
  (4-byte floats, twice the space), with a warning at migration.
* ``hnsw.iterative_scan`` (pgvector 0.8.0): below it, the retriever does not set it and reads
  a tenant's memories exactly (its btree, then a sort) unless the tenant holds most of the
  table, so a small tenant still gets its full top k (a filtered graph walk without the
  iterative scan stops at ``ef_search`` rows, most of them other tenants').
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine

from retrieval.db.queries import execute, statement
from retrieval.errors import ExtensionError, mask_url, translate_database_errors

MIN_POSTGRES = 13
MIN_PGVECTOR = (0, 5, 0)
HALFVEC = (0, 7, 0)
ITERATIVE_SCAN = (0, 8, 0)


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """``"0.8.6"`` as ``(0, 8, 6)``; ``None`` for none or a version that is not dotted numbers."""
    if not text:
        return None
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        return None


def shown_version(version: tuple[int, ...]) -> str:
    """``(0, 8, 6)`` as ``"0.8.6"``."""
    return ".".join(str(part) for part in version)


@dataclass(frozen=True)
class ServerVersions:
    """A database's PostgreSQL (``server_version_num``, and as the server writes it) and its
    pgvector: the installed extension's version, else the one the server would install."""

    postgres: int
    postgres_text: str
    pgvector: tuple[int, ...] | None
    pgvector_installed: bool

    @classmethod
    def from_row(cls, row: Any) -> ServerVersions:
        """From the row of the ``db.versions`` statement."""
        number, text, installed, available = row
        return cls(
            postgres=int(number),
            postgres_text=str(text),
            pgvector=parse_version(installed or available),
            pgvector_installed=installed is not None,
        )

    @property
    def halfvec(self) -> bool:
        """Whether pgvector stores ``halfvec`` (0.7.0 or newer)."""
        return self.pgvector is not None and self.pgvector >= HALFVEC

    @property
    def iterative_scan(self) -> bool:
        """Whether pgvector has ``hnsw.iterative_scan`` (0.8.0 or newer)."""
        return self.pgvector is not None and self.pgvector >= ITERATIVE_SCAN

    def require_supported(self, where: str) -> None:
        """Refuse, in one line naming what was found and what to install, a PostgreSQL older
        than 13 or a pgvector older than 0.5.0 (a server without pgvector is the migration's
        to refuse: it names the package)."""
        if self.postgres < MIN_POSTGRES * 10_000:
            raise ExtensionError(
                f"{where} runs PostgreSQL {self.postgres_text}; retrieval needs PostgreSQL "
                f"{MIN_POSTGRES} or newer: upgrade the server"
            )
        if self.pgvector is not None and self.pgvector < MIN_PGVECTOR:
            state = "installed" if self.pgvector_installed else "available"
            raise ExtensionError(
                f"{where} has pgvector {shown_version(self.pgvector)} {state}; retrieval needs "
                f"{shown_version(MIN_PGVECTOR)} or newer (HNSW indexes; 0.8.0 for the iterative "
                "scan): install a newer pgvector, then ALTER EXTENSION vector UPDATE"
            )


_KNOWN: weakref.WeakKeyDictionary[Engine, ServerVersions] = weakref.WeakKeyDictionary()


def read_versions(engine: Engine) -> ServerVersions:
    """The versions of the database ``engine`` connects to (one round trip), kept for
    :func:`versions_of`."""
    url = engine.url.render_as_string(hide_password=False)
    with translate_database_errors(url), engine.connect() as connection:
        versions = ServerVersions.from_row(execute(connection, statement("db.versions")).one())
    _KNOWN[engine] = versions
    return versions


def versions_of(engine: Engine) -> ServerVersions:
    """The versions of ``engine``'s database as last read (by ``connect()``, a migration or
    this call), read at most once per engine and process."""
    known = _KNOWN.get(engine)
    if known is None:
        known = _KNOWN[engine] = read_versions(engine)
    return known


def has_iterative_scan(connection: Connection) -> bool:
    """Whether the pgvector of ``connection``'s database has ``hnsw.iterative_scan``."""
    return versions_of(connection.engine).iterative_scan


def where(engine: Engine) -> str:
    """How a refusal names the database of ``engine`` (its password masked)."""
    return f"the database at {mask_url(engine.url.render_as_string(hide_password=False))}"
