"""What a database holds: server, extensions, revision, tables, row counts and indexes."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine

from retrieval.counts import counted
from retrieval.db.engine import stored_embedding
from retrieval.db.extensions import SCHEMA_EXTENSIONS
from retrieval.db.migrate import MigrationSettings, current_revision
from retrieval.db.queries import execute, quote_schema, statement
from retrieval.db.schema import TABLES
from retrieval.errors import translate_database_errors


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
    vector_type: str | None  # vector or halfvec (RETRIEVAL_VECTOR_TYPE at migration)
    rows: dict[str, dict[str, int]]  # table -> tenant -> rows
    indexes: list[IndexInfo]
    kinds: dict[str, dict[str, int]]  # tenant -> memory kind -> rows
    models: dict[str, int]  # embedding model -> memories it embedded
    cache_bytes: int
    documents: dict[str, tuple[int, int, str | None]]  # tenant -> (documents, chunks, config)
    # tenant -> (memories holding lexemes, text search configuration of the lexemes)
    memory_bm25: dict[str, tuple[int, str]] = field(default_factory=dict)

    def total_rows(self, table: str) -> int:
        """Rows of ``table`` over all tenants."""
        return sum(self.rows.get(table, {}).values())


def describe(engine: Engine, settings: MigrationSettings) -> DatabaseOverview:
    """Read a :class:`DatabaseOverview` of ``settings.schema``."""
    revision = current_revision(engine, settings)
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        version = str(execute(connection, statement("stats.server_version")).scalar())
        names = {"names": list(SCHEMA_EXTENSIONS)}
        installed = execute(connection, statement("stats.extensions"), names)
        extensions = {row[0]: row[1] for row in installed}
        found = execute(connection, statement("stats.indexes"), {"schema_name": settings.schema})
        indexes = [IndexInfo(table=row[0], name=row[1], definition=row[2]) for row in found]
        rows: dict[str, dict[str, int]] = {}
        kinds: dict[str, dict[str, int]] = {}
        models: dict[str, int] = {}
        cache_bytes = 0
        documents: dict[str, tuple[int, int, str | None]] = {}
        memory_bm25: dict[str, tuple[int, str]] = {}
        schema = settings.schema

        def exists(table: str) -> bool:
            relation = {"relation": f"{quote_schema(schema)}.{table}"}
            return bool(execute(connection, statement("db.relation_exists"), relation).scalar())

        if revision is not None:
            for table in TABLES:
                query = statement("stats.rows_per_tenant", schema, table=table)
                rows[table] = {tenant: count for tenant, count in execute(connection, query)}
            for tenant, kind, count in execute(connection, statement("stats.kinds", schema)):
                kinds.setdefault(tenant, {})[kind] = count
            models = {
                model: n for model, n in execute(connection, statement("stats.models", schema))
            }
            cache = {"relation": f"{quote_schema(schema)}.embedding_cache"}
            cache_bytes = execute(connection, statement("stats.relation_bytes"), cache).scalar_one()
            if exists("documents"):
                documents = {
                    tenant: (int(docs), int(chunks), config)
                    for tenant, docs, chunks, config in execute(
                        connection, statement("stats.documents", schema)
                    )
                }
            if exists("memory_corpus"):
                memory_bm25 = {
                    tenant: (int(count), str(config))
                    for tenant, count, config in execute(
                        connection, statement("stats.memory_bm25", schema)
                    )
                }
    stored = stored_embedding(engine, settings.schema) if revision else None
    return DatabaseOverview(
        server_version=version,
        extensions=extensions,
        schema=settings.schema,
        revision=revision,
        embedding_dim=stored.dim if stored else None,
        vector_type=stored.vector_type if stored else None,
        rows=rows,
        indexes=indexes,
        kinds=kinds,
        models=models,
        cache_bytes=int(cache_bytes),
        documents=documents,
        memory_bm25=memory_bm25,
    )


def render(overview: DatabaseOverview, *, indexes: bool = True) -> str:
    """A plain-text report of ``overview`` (with its index definitions unless told not to)."""
    lines = [
        f"PostgreSQL {overview.server_version}; extensions: "
        + ", ".join(f"{name} {version}" for name, version in overview.extensions.items()),
        f"schema {overview.schema!r} at revision {overview.revision or '(not migrated)'}; "
        f"embeddings: {overview.vector_type}({overview.embedding_dim})",
        "",
        _rows_table(overview),
    ]
    if overview.kinds:
        lines += ["", "memories per tenant and kind:"]
        for tenant, kinds in overview.kinds.items():
            lines.append(f"  {tenant}: " + ", ".join(f"{k} {n}" for k, n in kinds.items()))
    if overview.models:
        lines += ["", "embedding models (memories):"]
        lines += [f"  {model}: {count}" for model, count in overview.models.items()]
    if overview.documents:
        lines += ["", "documents per tenant:"]
        lines += [
            f"  {tenant}: {counted(docs, 'document')}, {counted(chunks, 'chunk')} "
            f"(text search: {config})"
            for tenant, (docs, chunks, config) in overview.documents.items()
        ]
    if overview.memory_bm25:
        lines += ["", "memories with words for the BM25 channel, per tenant:"]
        memories = overview.rows.get("memories", {})
        lines += [
            f"  {tenant}: {count} of {counted(memories.get(tenant, 0), 'memory')} "
            f"(text search: {config})"
            for tenant, (count, config) in overview.memory_bm25.items()
        ]
    cache_rows = overview.total_rows("embedding_cache")
    lines += ["", f"embedding cache: {cache_rows} entries, {overview.cache_bytes / 1e6:.1f} MB"]
    if indexes:
        lines += ["", "indexes:"]
        lines += [f"  {index.name}: {index.definition}" for index in overview.indexes]
    return "\n".join(lines)


_HEADINGS = {
    "memories": "memories",
    "memory_entities": "entity links",
    "decisions": "decisions",
    "tool_calls": "tool calls",
    "embedding_cache": "cache",
}


def _rows_table(overview: DatabaseOverview) -> str:
    tenants = sorted({tenant for counts in overview.rows.values() for tenant in counts})
    width = max([len("tenant"), len("total"), *map(len, tenants)])
    header = "tenant".ljust(width) + "".join(f"{_HEADINGS[t]:>14}" for t in TABLES)
    lines = ["rows per tenant and table:", header]
    for tenant in tenants:
        counts = "".join(f"{overview.rows.get(t, {}).get(tenant, 0):>14}" for t in TABLES)
        lines.append(tenant.ljust(width) + counts)
    lines.append("total".ljust(width) + "".join(f"{overview.total_rows(t):>14}" for t in TABLES))
    return "\n".join(lines)
