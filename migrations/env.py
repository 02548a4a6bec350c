"""Alembic environment of the retrieval schema.

Runs on a live connection handed over by ``retrieval.db.migrate`` (``config.attributes``), or, when
Alembic is run from the command line (``alembic upgrade head``), on the database named by
``-x url=...``, else ``RETRIEVAL_DATABASE_URL``, else the embedded server. The schema and the
embedding dimension come from ``RETRIEVAL_SCHEMA`` and ``RETRIEVAL_EMBEDDING_DIM``.
"""

from __future__ import annotations

from logging.config import fileConfig
from typing import Any

from alembic import context
from sqlalchemy import Connection, text

from retrieval.db.config import DatabaseConfig
from retrieval.db.migrate import (
    CONNECTION_KEY,
    SETTINGS_KEY,
    MigrationSettings,
    lock_timeout_statement,
)
from retrieval.db.schema import build_metadata

config = context.config
if config.config_file_name is not None and CONNECTION_KEY not in config.attributes:
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _settings() -> MigrationSettings:
    settings = config.attributes.get(SETTINGS_KEY)
    if settings is None:
        settings = MigrationSettings.from_config(DatabaseConfig.from_env())
        config.attributes[SETTINGS_KEY] = settings
    assert isinstance(settings, MigrationSettings)
    return settings


def _include_name(settings: MigrationSettings) -> Any:
    def include_name(name: str | None, type_: str, parent_names: dict[str, Any]) -> bool:
        if type_ == "schema":
            return name == settings.schema
        return True

    return include_name


def _configure(settings: MigrationSettings, **options: Any) -> None:
    context.configure(
        target_metadata=build_metadata(
            settings.schema,
            settings.embedding_dim,
            settings.text_search_config,
            settings.vector_type,
        ),
        version_table_schema=settings.schema,
        include_schemas=True,
        include_name=_include_name(settings),
        compare_type=True,
        **options,
    )


def _run_on(connection: Connection, settings: MigrationSettings) -> None:
    # The version table lives in our schema, so the schema must exist before Alembic looks.
    connection.execute(text(lock_timeout_statement(settings)))
    connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{settings.schema}"'))
    _configure(settings, connection=connection)
    with context.begin_transaction():
        context.run_migrations()


def _url_from_environment() -> str | None:
    url = context.get_x_argument(as_dictionary=True).get("url")
    return url or config.get_main_option("sqlalchemy.url") or None


def run_offline() -> None:
    settings = _settings()
    url = _url_from_environment() or DatabaseConfig.from_env().url or "postgresql://"
    _configure(settings, url=url, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    settings = _settings()
    connection = config.attributes.get(CONNECTION_KEY)
    if connection is not None:
        _run_on(connection, settings)
        return
    from retrieval.db.engine import connect, make_engine

    url = _url_from_environment()
    engine = make_engine(url) if url else connect(DatabaseConfig.from_env()).engine
    with engine.begin() as own_connection:
        _run_on(own_connection, settings)
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
