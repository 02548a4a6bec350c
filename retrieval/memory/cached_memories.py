"""Memories whose vectors the embedding cache already holds, written without reading them.

An all-cache-hit batch would otherwise read every vector out of ``embedding_cache`` (1.5 kB
each for 384 dimensions), decode and re-encode it, and send it back in the ``COPY``. Here
the rows travel without their vectors, by binary ``COPY`` into a per-connection staging
table, and one ``INSERT ... SELECT`` joins each to its cached vector inside PostgreSQL. The
cache rows were seen by the same transaction's lookup; if a concurrent ``forget`` of the
tenant removed some since, fewer rows join and the batch fails whole instead of losing rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, text

from retrieval.db.copy_rows import copy_rows
from retrieval.db.row_security import insert_each_tenant, row_security_active
from retrieval.errors import DatabaseError

STAGING = "retrieval_memory_staging_v2"
# A memory's columns but its vector, in COPY order (the writer's rows add the vector or its key).
MEMORY_FIELDS = (
    ("tenant_id", "text"),
    ("id", "int8"),
    ("content", "text"),
    ("kind", "text"),
    ("metadata", "bytea"),  # binary jsonb, see retrieval.db.copy_rows
    ("importance", "float8"),
    ("created_at", "timestamptz"),
    ("embedding_model", "text"),
    ("thread_id", "text"),
    ("position", "int4"),
)
COLUMNS = (*MEMORY_FIELDS, ("key", "bytea"))  # key: the embedding cache's key of the text
_CREATE = """
CREATE TEMP TABLE IF NOT EXISTS retrieval_memory_staging_v2 (
    tenant_id text, id bigint, content text, kind text, metadata jsonb, importance float8,
    created_at timestamptz, embedding_model text, thread_id text, position integer, key bytea
) ON COMMIT DELETE ROWS
"""
# {s}: the validated, quoted schema name.
_INSERT = """
INSERT INTO {s}.memories
    (tenant_id, id, content, kind, metadata, importance, created_at, embedding, embedding_model,
     thread_id, position)
SELECT s.tenant_id, s.id, s.content, s.kind, s.metadata, s.importance, s.created_at,
       c.embedding, s.embedding_model, s.thread_id, s.position
FROM pg_temp.retrieval_memory_staging_v2 AS s
JOIN {s}.embedding_cache AS c ON c.tenant_id = s.tenant_id AND c.key = s.key
{where}
"""
_CLEAR = "DELETE FROM pg_temp.retrieval_memory_staging_v2"


def copy_cached_memories(
    connection: Connection, schema: str, rows: Iterable[Sequence[Any]], count: int
) -> None:
    """Write ``count`` memory rows (``COLUMNS``), each taking its vector from the cache."""
    if count == 0:
        return
    connection.execute(text(_CREATE))
    names = [name for name, _ in COLUMNS]
    types = [kind for _, kind in COLUMNS]
    copy_rows(connection, "pg_temp", STAGING, names, types, rows)
    if row_security_active(connection, schema):  # one tenant at a time, named to the policies
        insert = _INSERT.format(s=f'"{schema}"', where="WHERE s.tenant_id = :tenant")
        written = insert_each_tenant(connection, schema, STAGING, insert)
    else:
        written = connection.execute(text(_INSERT.format(s=f'"{schema}"', where=""))).rowcount
    connection.execute(text(_CLEAR))
    if written != count:
        raise DatabaseError(
            f"{count - written} of {count} cached embeddings disappeared while the batch was "
            "written (a concurrent forget of the tenant?): nothing was written; retry the batch"
        )
