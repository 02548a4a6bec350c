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

from sqlalchemy import Connection

from retrieval.db.copy_rows import copy_rows
from retrieval.db.queries import execute, statement
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


def copy_cached_memories(
    connection: Connection, schema: str, rows: Iterable[Sequence[Any]], count: int
) -> None:
    """Write ``count`` memory rows (``COLUMNS``), each taking its vector from the cache."""
    if count == 0:
        return
    execute(connection, statement("memory.create_cached_staging", schema))
    names = [name for name, _ in COLUMNS]
    types = [kind for _, kind in COLUMNS]
    copy_rows(connection, "pg_temp", STAGING, names, types, rows)
    if row_security_active(connection, schema):  # one tenant at a time, named to the policies
        one_tenant = "WHERE s.tenant_id = %(tenant)s"
        insert = statement("memory.insert_cached", schema, where=one_tenant)
        written = insert_each_tenant(connection, schema, STAGING, insert)
    else:
        insert = statement("memory.insert_cached", schema, where="")
        written = execute(connection, insert).rowcount
    execute(connection, statement("memory.clear_cached_staging", schema))
    if written != count:
        raise DatabaseError(
            f"{count - written} of {count} cached embeddings disappeared while the batch was "
            "written (a concurrent forget of the tenant?): nothing was written; retry the batch"
        )
