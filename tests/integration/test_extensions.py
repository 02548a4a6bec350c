"""A role that may not create extensions gets an error that says what to do, and no tables."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from psycopg import sql
from sqlalchemy import inspect, text

from retrieval.db import migrate
from retrieval.db.engine import make_engine
from retrieval.errors import ExtensionError
from tests.conftest import SETTINGS, PgDatabase
from tests.harness import PgServer, engine_for, unique_name

PASSWORD = "limited-secret"


@pytest.fixture
def limited_role(pg_server: PgServer) -> Iterator[tuple[str, str]]:
    """A login role that owns a fresh database but is not a superuser."""
    role = unique_name("rtv_limited")
    pg_server.execute(
        sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(PASSWORD)
        )
    )
    database = pg_server.create_database(owner=role)
    yield role, database
    pg_server.drop_database(database)
    pg_server.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_missing_create_right_names_extension_version_and_remedy(
    pg_server: PgServer, limited_role: tuple[str, str]
) -> None:
    role, database = limited_role
    admin_engine = engine_for(pg_server, database)
    limited_engine = make_engine(pg_server.url(database, user=role, password=PASSWORD))
    try:
        with limited_engine.connect() as connection:
            version = connection.execute(text("SHOW server_version")).scalar()
        with pytest.raises(ExtensionError) as raised:
            migrate.upgrade(limited_engine, SETTINGS)
        message = str(raised.value)
        assert "'vector'" in message
        assert f"PostgreSQL {version}" in message
        assert repr(role) in message
        assert "CREATE EXTENSION vector;" in message
        assert "superuser" in message
        # Nothing was written: no extension, no table, no version table.
        with admin_engine.connect() as connection:
            extensions = connection.execute(text("SELECT extname FROM pg_extension")).scalars()
            assert not {"vector", "pg_trgm"} & set(extensions)
        assert inspect(admin_engine).get_table_names(schema="retrieval") == []
    finally:
        admin_engine.dispose()
        limited_engine.dispose()


def test_the_same_role_migrates_once_a_superuser_created_the_extension(
    pg_server: PgServer, limited_role: tuple[str, str]
) -> None:
    role, database = limited_role
    pg_server.execute("CREATE EXTENSION vector", database=database)
    limited_engine = make_engine(pg_server.url(database, user=role, password=PASSWORD))
    try:
        migrate.upgrade(limited_engine, SETTINGS)  # pg_trgm is trusted: the owner may create it
        assert migrate.current_revision(limited_engine, SETTINGS) == migrate.head_revision()
    finally:
        limited_engine.dispose()


def test_an_extension_the_server_lacks_says_what_to_install(database: PgDatabase) -> None:
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext

    from retrieval.db.extensions import ensure_extension

    with database.engine.begin() as connection:
        version = connection.execute(text("SHOW server_version")).scalar()
        with (
            Operations.context(MigrationContext.configure(connection)),
            pytest.raises(ExtensionError) as raised,
        ):
            ensure_extension("no_such_extension", "the no_such package")
    message = str(raised.value)
    assert f"PostgreSQL {version} has no extension 'no_such_extension' installed" in message
    assert "Install the no_such package on the database server" in message
