"""What a database holds: server, extensions, revision, tables, row counts and indexes."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine, text

from retrieval.db.engine import stored_embedding_dim
from retrieval.db.extensions import SCHEMA_EXTENSIONS
from retrieval.db.migrate import MigrationSettings, current_revision
from retrieval.db.schema import TABLES
from retrieval.errors import translate_database_errors

_EXTENSIONS = text(
    "SELECT extname, extversion FROM pg_extension "
    "WHERE extname = ANY(CAST(:names AS text[])) ORDER BY extname"
)
_INDEXES = text(
    "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = :schema "
    "ORDER BY tablename, indexname"
)
# Row counts per table and tenant. Table names come from the fixed tuple TABLES and the
# schema is a validated identifier: identifiers cannot be bound parameters.
_COUNT = "SELECT tenant_id, count(*) FROM {schema}.{table} GROUP BY tenant_id ORDER BY tenant_id"
_KINDS = (
    "SELECT tenant_id, kind, count(*) FROM {schema}.memories "
    "GROUP BY tenant_id, kind ORDER BY tenant_id, kind"
)
_MODELS = (
    "SELECT embedding_model, count(*) FROM {schema}.memories "
    "GROUP BY embedding_model ORDER BY embedding_model"
)
_CACHE_BYTES = "SELECT pg_total_relation_size(CAST(:table AS regclass))"
_HAS_TABLE = "SELECT to_regclass(:table) IS NOT NULL"
_DOCUMENTS = """
SELECT d.tenant_id, count(DISTINCT d.id), count(c.id),
       (SELECT text_search_config FROM {schema}.document_corpus AS k
        WHERE k.tenant_id = d.tenant_id)
FROM {schema}.documents AS d
LEFT JOIN {schema}.document_chunks AS c ON c.tenant_id = d.tenant_id AND c.document_id = d.id
GROUP BY d.tenant_id ORDER BY d.tenant_id
"""
_MEMORY_BM25 = """
SELECT k.tenant_id, k.memories, k.text_search_config FROM {schema}.memory_corpus AS k
ORDER BY k.tenant_id
"""


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
        version = str(connection.execute(text("SHOW server_version")).scalar())
        installed = connection.execute(_EXTENSIONS, {"names": list(SCHEMA_EXTENSIONS)})
        extensions = {row[0]: row[1] for row in installed}
        indexes = [
            IndexInfo(table=row[0], name=row[1], definition=row[2])
            for row in connection.execute(_INDEXES, {"schema": settings.schema})
        ]
        rows: dict[str, dict[str, int]] = {}
        kinds: dict[str, dict[str, int]] = {}
        models: dict[str, int] = {}
        cache_bytes = 0
        documents: dict[str, tuple[int, int, str | None]] = {}
        memory_bm25: dict[str, tuple[int, str]] = {}
        schema = f'"{settings.schema}"'
        if revision is not None:
            for table in TABLES:
                query = text(_COUNT.format(schema=schema, table=table))
                rows[table] = {tenant: count for tenant, count in connection.execute(query)}
            for tenant, kind, count in connection.execute(text(_KINDS.format(schema=schema))):
                kinds.setdefault(tenant, {})[kind] = count
            models = {
                model: n for model, n in connection.execute(text(_MODELS.format(schema=schema)))
            }
            cache_table = f"{schema}.embedding_cache"
            cache_bytes = connection.execute(
                text(_CACHE_BYTES), {"table": cache_table}
            ).scalar_one()
            if connection.execute(text(_HAS_TABLE), {"table": f"{schema}.documents"}).scalar_one():
                documents = {
                    tenant: (int(docs), int(chunks), config)
                    for tenant, docs, chunks, config in connection.execute(
                        text(_DOCUMENTS.format(schema=schema))
                    )
                }
            if connection.execute(
                text(_HAS_TABLE), {"table": f"{schema}.memory_corpus"}
            ).scalar_one():
                memory_bm25 = {
                    tenant: (int(count), str(config))
                    for tenant, count, config in connection.execute(
                        text(_MEMORY_BM25.format(schema=schema))
                    )
                }
    return DatabaseOverview(
        server_version=version,
        extensions=extensions,
        schema=settings.schema,
        revision=revision,
        embedding_dim=stored_embedding_dim(engine, settings.schema) if revision else None,
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
        f"embeddings: vector({overview.embedding_dim})",
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
            f"  {tenant}: {docs} documents, {chunks} chunks (text search: {config})"
            for tenant, (docs, chunks, config) in overview.documents.items()
        ]
    if overview.memory_bm25:
        lines += ["", "memories with words for the BM25 channel, per tenant:"]
        memories = overview.rows.get("memories", {})
        lines += [
            f"  {tenant}: {count} of {memories.get(tenant, 0)} memories (text search: {config})"
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
