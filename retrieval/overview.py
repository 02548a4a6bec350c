"""What a database holds: server, extensions, revision, tables, row counts and indexes."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, text

from retrieval.db import stored_embedding_dim
from retrieval.errors import translate_database_errors
from retrieval.migrate import MigrationSettings, current_revision
from retrieval.schema import TABLES

_EXTENSIONS = text(
    "SELECT extname, extversion FROM pg_extension WHERE extname IN ('vector', 'pg_trgm') "
    "ORDER BY extname"
)
_INDEXES = text(
    "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = :schema "
    "ORDER BY tablename, indexname"
)
# Row counts per table and tenant. Table names come from the fixed tuple TABLES and the
# schema is a validated identifier: identifiers cannot be bound parameters.
_COUNT = "SELECT tenant_id, count(*) FROM {schema}.{table} GROUP BY tenant_id ORDER BY tenant_id"


@dataclass(frozen=True)
class IndexInfo:
    """One index: its table, name and definition."""

    table: str
    name: str
    definition: str


@dataclass(frozen=True)
class DatabaseOverview:
    """A snapshot of a retrieval database."""

    server_version: str
    extensions: dict[str, str]
    schema: str
    revision: str | None
    embedding_dim: int | None
    rows: dict[str, dict[str, int]]  # table -> tenant -> rows
    indexes: list[IndexInfo]

    def total_rows(self, table: str) -> int:
        """Rows of ``table`` over all tenants."""
        return sum(self.rows.get(table, {}).values())


def describe(engine: Engine, settings: MigrationSettings) -> DatabaseOverview:
    """Read a :class:`DatabaseOverview` of ``settings.schema``."""
    revision = current_revision(engine, settings)
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        version = str(connection.execute(text("SHOW server_version")).scalar())
        extensions = {row[0]: row[1] for row in connection.execute(_EXTENSIONS)}
        indexes = [
            IndexInfo(table=row[0], name=row[1], definition=row[2])
            for row in connection.execute(_INDEXES, {"schema": settings.schema})
        ]
        rows: dict[str, dict[str, int]] = {}
        if revision is not None:
            for table in TABLES:
                query = text(_COUNT.format(schema=f'"{settings.schema}"', table=table))
                rows[table] = {tenant: count for tenant, count in connection.execute(query)}
    return DatabaseOverview(
        server_version=version,
        extensions=extensions,
        schema=settings.schema,
        revision=revision,
        embedding_dim=stored_embedding_dim(engine, settings.schema) if revision else None,
        rows=rows,
        indexes=indexes,
    )


def render(overview: DatabaseOverview) -> str:
    """A plain-text report of ``overview``."""
    lines = [
        f"PostgreSQL {overview.server_version}; extensions: "
        + ", ".join(f"{name} {version}" for name, version in overview.extensions.items()),
        f"schema {overview.schema!r} at revision {overview.revision or '(not migrated)'}; "
        f"embeddings: vector({overview.embedding_dim})",
        "",
        "rows per table (tenants):",
    ]
    for table in TABLES:
        tenants = overview.rows.get(table, {})
        detail = ", ".join(f"{tenant}: {count}" for tenant, count in tenants.items())
        lines.append(f"  {table:<16} {overview.total_rows(table):>8}  {detail}".rstrip())
    lines += ["", "indexes:"]
    lines += [f"  {index.name}: {index.definition}" for index in overview.indexes]
    return "\n".join(lines)
