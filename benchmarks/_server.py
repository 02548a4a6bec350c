"""How a benchmark reaches its PostgreSQL: the embedded server, kept in ``--data-dir`` between
runs (so that a large load happens once) or thrown away at exit, or a server at
``--database-url``; migrated to the schemas the benchmark asks for."""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from retrieval.db.embedded import EmbeddedServer, start_embedded
from retrieval.db.engine import make_engine, sqlalchemy_url
from retrieval.db.migrate import MigrationSettings, upgrade


def add_data_dir(
    parser: argparse.ArgumentParser, *, required: bool = False, what: str = ""
) -> None:
    """``--data-dir DIR``: the embedded server's data directory (``what`` it holds)."""
    parser.add_argument(
        "--data-dir",
        type=Path,
        required=required,
        help=what
        or "keep the embedded server's data here between runs (default: a throw-away "
        "directory); files the benchmark computes once (vectors) are kept beside it",
    )


def add_database_url(parser: argparse.ArgumentParser) -> None:
    """``--database-url URL``: a server of one's own instead of a throw-away embedded one."""
    parser.add_argument(
        "--database-url", help="run on this PostgreSQL (default: a throw-away embedded server)"
    )


@dataclass(frozen=True)
class Bench:
    """The server a benchmark runs on, and an engine on it."""

    engine: Engine
    url: str  # its SQLAlchemy URL
    server: EmbeddedServer | None = None  # None: a server at --database-url

    @property
    def data_dir(self) -> Path:
        """The embedded server's data directory; beside it, the files a benchmark keeps."""
        if self.server is None:
            raise SystemExit("this benchmark keeps files beside an embedded server's data")
        return self.server.data_dir

    @property
    def psycopg_url(self) -> str:
        """The URL for ``psycopg.connect``."""
        return self.url.replace("postgresql+psycopg://", "postgresql://")


def embedded(
    data_dir: Path | None,
    *schemas: MigrationSettings,
    prefix: str = "rtv-bench-",
    **options: Any,
) -> Bench:
    """The embedded server in ``data_dir`` (``None``: a throw-away directory named after
    ``prefix``, removed when the process ends), each of ``schemas`` migrated to the head;
    ``options`` go to :func:`~retrieval.db.embedded.start_embedded` (``shared_buffers``)."""
    kept = data_dir is not None
    directory = data_dir if data_dir is not None else Path(tempfile.mkdtemp(prefix=prefix)) / "pg"
    server = start_embedded(directory, delete_on_exit=not kept, **options)
    return _migrated(Bench(make_engine(server.url()), server.url(), server), schemas)


def reached(url: str | None, *schemas: MigrationSettings) -> Bench:
    """The server at ``url`` (``None``: a throw-away embedded one), ``schemas`` migrated."""
    if url is None:
        return embedded(None, *schemas)
    address = sqlalchemy_url(url)
    return _migrated(Bench(make_engine(address), address), schemas)


def _migrated(bench: Bench, schemas: tuple[MigrationSettings, ...]) -> Bench:
    for settings in schemas:
        upgrade(bench.engine, settings)
    bench.engine.dispose()  # connections made before the vector type existed lack its adapter
    return bench


# The application's role the benchmarks read as when row-level security is to bind them.
APPLICATION_ROLE = "bench_app"


def bound_role(engine: Engine, schema: str, role: str = APPLICATION_ROLE) -> None:
    """Create ``role`` (a login without privileges) if it does not exist, and grant it what an
    application needs on ``schema``: row-level security then binds it."""
    from psycopg import sql

    from retrieval.db.row_security import grant_application_role

    with engine.begin() as connection:
        exists = connection.exec_driver_sql(
            "SELECT 1 FROM pg_roles WHERE rolname = %(r)s", {"r": role}
        ).first()
        if exists is None:
            driver = connection.connection.driver_connection
            assert driver is not None
            driver.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        grant_application_role(connection, schema, role)
