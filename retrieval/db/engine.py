"""Connecting: one function gives a SQLAlchemy engine for an existing or the embedded PostgreSQL."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from pgvector.psycopg.halfvec import register_halfvec_info
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from retrieval.db.config import DatabaseConfig, require_unambiguous_url
from retrieval.db.embedded import EmbeddedServer, reconnecting, start_embedded
from retrieval.db.local_settings import propagate_to_workers
from retrieval.db.queries import execute, statement
from retrieval.db.vector_type import VECTOR_TYPES, VectorType
from retrieval.db.versions import ServerVersions, read_versions, where
from retrieval.errors import (
    ConfigurationError,
    DimensionMismatchError,
    SchemaError,
    mask_url,
    translate_database_errors,
)

logger = logging.getLogger(__name__)

_DRIVER = "postgresql+psycopg"


@dataclass(frozen=True)
class Database:
    """An engine with what the library needs to know about it; ``read_engine`` is the read
    replica's (``RETRIEVAL_READ_DATABASE_URL``), or ``None``."""

    engine: Engine
    config: DatabaseConfig
    embedded: EmbeddedServer | None
    read_engine: Engine | None = None
    # The server's PostgreSQL and pgvector versions, read when it was connected.
    versions: ServerVersions | None = None

    @property
    def url(self) -> str:
        """The engine's URL, every password masked."""
        return mask_url(self.engine.url.render_as_string(hide_password=False))

    def __repr__(self) -> str:
        return f"Database(url={self.url!r}, embedded={self.embedded is not None})"

    def dispose(self) -> None:
        """Close the engines' pooled connections."""
        self.engine.dispose()
        if self.read_engine is not None:
            self.read_engine.dispose()


def connect(config: DatabaseConfig | None = None, **engine_options: Any) -> Database:
    """Return a :class:`Database` for ``config.url``, or for the embedded server when it is unset.

    Without ``config``, the environment's (:meth:`DatabaseConfig.from_env`:
    ``RETRIEVAL_DATABASE_URL``, ``RETRIEVAL_DATA_DIR``, ...). The engine uses the psycopg 3
    driver, has pgvector's types registered on every connection, and is checked with one round
    trip, so an unreachable server fails here with a clear
    :class:`~retrieval.errors.DatabaseUnavailableError`.
    """
    config = DatabaseConfig.from_env() if config is None else config
    embedded = None
    if config.url is None:
        embedded = start_embedded(config.data_dir, shared_buffers=config.shared_buffers)
        url = embedded.url()
    else:
        url = sqlalchemy_url(config.url)
    engine, versions = _checked_engine(url, config, engine_options)
    if embedded is not None:
        event.listen(engine, "do_connect", reconnecting(embedded.data_dir, config.shared_buffers))
    read_engine = None
    if config.read_url is not None:
        read_engine, _ = _checked_engine(sqlalchemy_url(config.read_url), config, engine_options)
    return Database(
        engine=engine,
        config=config,
        embedded=embedded,
        read_engine=read_engine,
        versions=versions,
    )


def _checked_engine(
    url: str, config: DatabaseConfig, engine_options: dict[str, Any]
) -> tuple[Engine, ServerVersions]:
    # An engine with the config's connect timeout (unless the URL has one), checked with one
    # round trip that reads the versions: a server too old for the library is refused here.
    options = dict(engine_options)
    if "connect_timeout" not in make_url(url).query:
        connect_args = {"connect_timeout": config.connect_timeout}
        options["connect_args"] = connect_args | options.get("connect_args", {})
    engine = make_engine(url, **options)
    versions = read_versions(engine)  # kept: the stores and retrievers need not ask again
    versions.require_supported(where(engine))
    return engine, versions


def sqlalchemy_url(url: str) -> str:
    """Normalize a PostgreSQL URL to SQLAlchemy's psycopg 3 driver.

    ``postgres://``, ``postgresql://`` and ``postgresql+psycopg2://`` all become
    ``postgresql+psycopg://``; any other scheme, and a URL whose password holds an unencoded
    ``@``, ``/``, ``?`` or ``#``, is refused.
    """
    require_unambiguous_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigurationError(
            f"{mask_url(url)!r} is not a database URL: expected "
            "postgresql://user:password@host:5432/dbname"
        ) from None
    backend = parsed.get_backend_name()
    if backend not in ("postgresql", "postgres"):
        raise ConfigurationError(
            f"{mask_url(url)} is not a PostgreSQL URL: "
            "retrieval needs PostgreSQL with pgvector (postgresql://...)"
        )
    return parsed.set(drivername=_DRIVER).render_as_string(hide_password=False)


def make_engine(url: str, **engine_options: Any) -> Engine:
    """Create an engine for ``url`` with pgvector's type registered on each new connection
    (and, on a Citus coordinator, its ``SET LOCAL`` commands sent on to the workers: see
    :mod:`retrieval.db.local_settings`)."""
    engine = create_engine(sqlalchemy_url(url), pool_pre_ping=True, **engine_options)
    event.listen(engine, "connect", _prepare_connection)
    return engine


def _prepare_connection(dbapi_connection: psycopg.Connection[Any], _record: object) -> None:
    _register_vector(dbapi_connection)
    propagate_to_workers(dbapi_connection)
    # The lookups opened a transaction; end it (keeping the session's setting) and leave the
    # connection idle, as the pool expects.
    dbapi_connection.commit()


def check_driver(engine: Engine) -> None:
    """A :class:`ConfigurationError` unless ``engine`` talks to PostgreSQL through psycopg 3
    (the driver whose binary ``COPY`` and types the library uses)."""
    dialect = engine.dialect
    if dialect.name != "postgresql" or dialect.driver != "psycopg":
        raise ConfigurationError(
            f"the engine uses {dialect.name}+{dialect.driver}: retrieval needs PostgreSQL "
            "through psycopg 3; make it with retrieval.make_engine(url), or "
            "sqlalchemy.create_engine('postgresql+psycopg://...')"
        )


def ensure_vector_types(dbapi_connection: psycopg.Connection[Any]) -> None:
    """Register pgvector's types on a connection that lacks them (one of an engine that
    :func:`make_engine` did not make)."""
    if dbapi_connection.adapters.types.get("vector") is None:
        _register_vector(dbapi_connection)


def _register_vector(dbapi_connection: psycopg.Connection[Any]) -> None:
    # Before the first migration the type does not exist yet; connections made then work
    # without the adapter (the migration runner disposes the pool once the type exists).
    info = TypeInfo.fetch(dbapi_connection, "vector")
    if info is None:
        logger.debug("type vector not found: pgvector adapters not registered on this connection")
        return
    register_vector_info(dbapi_connection, info)
    half = TypeInfo.fetch(dbapi_connection, "halfvec")
    if half is not None:  # pgvector 0.7 and later
        register_halfvec_info(dbapi_connection, half)


@dataclass(frozen=True)
class StoredEmbedding:
    """The embedding column a migration made in a schema: its type and dimension."""

    vector_type: VectorType
    dim: int


def stored_embedding(engine: Engine, schema: str) -> StoredEmbedding:
    """The type (``RETRIEVAL_VECTOR_TYPE``) and dimension (``RETRIEVAL_EMBEDDING_DIM``) that
    ``schema.memories.embedding`` was made with, read back from the catalog in one query."""
    query = statement("db.embedding_column")
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        found = execute(connection, query, {"schema_name": schema}).one_or_none()
    if found is None:
        raise SchemaError(
            f"schema {schema!r} has no memories table in {engine.url.render_as_string()}: "
            "run `retrieval db upgrade` (or `alembic upgrade head`) first"
        )
    type_name, dim = found
    if type_name not in VECTOR_TYPES:
        raise SchemaError(
            f"{schema}.memories.embedding is {type_name!r}, neither vector nor halfvec"
        )
    return StoredEmbedding(vector_type=cast(VectorType, type_name), dim=int(dim))


def stored_embedding_dim(engine: Engine, schema: str) -> int:
    """The vector dimension that the migrated database stores in ``schema``.

    The dimension was fixed by ``RETRIEVAL_EMBEDDING_DIM`` when the schema was migrated; it is
    read back from the type modifier of ``memories.embedding``.
    """
    return stored_embedding(engine, schema).dim


def stored_vector_type(engine: Engine, schema: str) -> VectorType:
    """The type of ``schema.memories.embedding`` (``vector`` or ``halfvec``)."""
    return stored_embedding(engine, schema).vector_type


def other_embedding_models(engine: Engine, schema: str, model_id: str) -> list[str]:
    """The models other than ``model_id`` whose vectors the schema's statistics saw in its
    memories or document chunks (two models of one dimension: their vectors do not compare)."""
    query = statement("db.embedding_models_seen")
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        seen = execute(connection, query, {"schema_name": schema}).scalars().all()
    return [str(model) for model in seen if model != model_id]


def check_embedding_dim(engine: Engine, schema: str, model_id: str, model_dim: int) -> None:
    """Refuse a model whose dimension differs from the one the database stores."""
    stored = stored_embedding_dim(engine, schema)
    if stored != model_dim:
        raise DimensionMismatchError(
            f"model {model_id!r} makes {model_dim}-dimensional embeddings but schema {schema!r} "
            f"stores vector({stored}). Use a model of dimension {stored}, or migrate a new "
            f"database (or schema) with RETRIEVAL_EMBEDDING_DIM={model_dim}."
        )
