"""Where the tests' PostgreSQL comes from, and how each test gets a database of its own.

In order: ``RETRIEVAL_TEST_DATABASE_URL`` (a superuser's URL of a server with pgvector and
pg_trgm), else a testcontainers PostgreSQL with the pgvector image when a Docker engine answers,
else the embedded server in a throw-away data directory. A template database is migrated once per
session; each test gets a ``CREATE DATABASE ... TEMPLATE`` copy of it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from retrieval.db.embedded import start_embedded
from retrieval.db.engine import make_engine, sqlalchemy_url

logger = logging.getLogger(__name__)

PGVECTOR_IMAGE = "pgvector/pgvector:pg17"
_names = itertools.count()


@dataclass(frozen=True)
class PgServer:
    """A PostgreSQL server the tests may create databases and roles on."""

    admin_url: str  # SQLAlchemy URL of a superuser on its maintenance database
    kind: str  # "environment", "testcontainers" or "embedded"

    def url(self, database: str, user: str | None = None, password: str | None = None) -> str:
        """URL of ``database`` on this server, optionally as another role."""
        parsed = make_url(self.admin_url).set(database=database)
        if user is not None:
            parsed = parsed.set(username=user, password=password)
        return parsed.render_as_string(hide_password=False)

    def libpq(self, database: str = "postgres") -> str:
        """A psycopg connection string for ``database`` as the superuser."""
        return self.url(database).replace("postgresql+psycopg://", "postgresql://", 1)

    def execute(self, statement: sql.Composable | str, database: str = "postgres") -> None:
        """Run one statement outside a transaction (CREATE/DROP DATABASE need that)."""
        with psycopg.connect(self.libpq(database), autocommit=True) as connection:
            connection.execute(statement)  # type: ignore[arg-type]

    def create_database(self, template: str | None = None, owner: str | None = None) -> str:
        """Create a database with a fresh name (a copy of ``template``, else empty)."""
        name = unique_name("rtv_test")
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            statement += sql.SQL(" TEMPLATE {} STRATEGY FILE_COPY").format(sql.Identifier(template))
        else:
            statement += sql.SQL(" TEMPLATE template0")
        if owner is not None:
            statement += sql.SQL(" OWNER {}").format(sql.Identifier(owner))
        self.execute(statement)
        return name

    def drop_database(self, name: str) -> None:
        """Drop ``name``, closing whatever is still connected to it."""
        self.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def unique_name(prefix: str) -> str:
    """A database or role name no other test of any concurrent session uses."""
    return f"{prefix}_{os.getpid()}_{next(_names)}"


@contextlib.contextmanager
def open_server() -> Iterator[PgServer]:
    """Yield the server the tests run on (see the module docstring for the order)."""
    url = os.environ.get("RETRIEVAL_TEST_DATABASE_URL")
    if url:
        yield PgServer(admin_url=sqlalchemy_url(url), kind="environment")
        return
    if _docker_answers():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer(PGVECTOR_IMAGE, driver="psycopg") as container:
            yield PgServer(admin_url=container.get_connection_url(), kind="testcontainers")
        return
    data_dir = Path(tempfile.mkdtemp(prefix="rtv-test-"))
    server = start_embedded(data_dir / "pg", delete_on_exit=True)
    embedded = PgServer(admin_url=server.url("postgres"), kind="embedded")
    # A throw-away server: nothing of it must survive a crash of the machine, so it need not
    # wait for the disk (each test's CREATE DATABASE ... FILE_COPY checkpoints and syncs).
    # Tests of crashes start servers of their own.
    for setting in ("fsync", "synchronous_commit", "full_page_writes"):
        embedded.execute(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(setting)))
    embedded.execute("SELECT pg_reload_conf()")
    yield embedded


def _docker_answers() -> bool:
    try:
        import docker

        client = docker.from_env(timeout=3)
        client.ping()
    except Exception as error:  # no SDK, no socket, no daemon: all mean "no Docker here"
        logger.info("no Docker engine (%s): not using testcontainers", error)
        return False
    return True


def engine_for(server: PgServer, database: str) -> Engine:
    """An engine on ``database`` with pgvector registered, as the library makes them."""
    return make_engine(server.url(database))
