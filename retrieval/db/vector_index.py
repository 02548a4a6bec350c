"""The HNSW index on memory embeddings: dropped and rebuilt around a large first import.

Inserting one vector into the HNSW graph costs about 0.8 ms of server CPU (m = 12); building the
graph once with ``CREATE INDEX`` over rows already loaded is several times faster. Without the
index, nearest-neighbour queries scan the table, so do this while nobody searches.
"""

from __future__ import annotations

import time

from sqlalchemy import Engine, text

from retrieval.db.schema import HNSW_LINKS
from retrieval.errors import translate_database_errors

INDEX_NAME = "memories_embedding_hnsw_idx"
# {s}: the validated, quoted schema name (identifiers cannot be bound parameters). The
# definition is the one migration 0008 creates, so `alembic check` sees no drift afterwards.
_DROP = "DROP INDEX IF EXISTS {s}.memories_embedding_hnsw_idx"
_BUILD = (
    "CREATE INDEX IF NOT EXISTS memories_embedding_hnsw_idx ON {s}.memories "
    f"USING hnsw (embedding vector_l2_ops) WITH (m = {HNSW_LINKS})"
)
# The graph is built fastest when it fits in memory; pgvector warns when it does not.
_BUILD_MEMORY = "SET LOCAL maintenance_work_mem = '1GB'"
_EXISTS = "SELECT to_regclass(:name) IS NOT NULL"


def has_vector_index(engine: Engine, schema: str) -> bool:
    """Whether ``schema.memories`` has its HNSW index."""
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        name = f'"{schema}".{INDEX_NAME}'
        return bool(connection.execute(text(_EXISTS), {"name": name}).scalar())


def drop_vector_index(engine: Engine, schema: str) -> None:
    """Drop the HNSW index of ``schema.memories`` (no error if it is not there)."""
    with translate_database_errors(str(engine.url)), engine.begin() as connection:
        connection.execute(text(_DROP.format(s=f'"{schema}"')))


def build_vector_index(engine: Engine, schema: str) -> float:
    """Build the HNSW index of ``schema.memories`` if missing; return the seconds it took."""
    began = time.perf_counter()
    with translate_database_errors(str(engine.url)), engine.begin() as connection:
        connection.execute(text(_BUILD_MEMORY))
        connection.execute(text(_BUILD.format(s=f'"{schema}"')))
    return time.perf_counter() - began
