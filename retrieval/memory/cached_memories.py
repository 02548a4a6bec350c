"""Memories whose vectors the embedding cache already holds, written without reading them.

An all-cache-hit batch would otherwise read every vector out of ``embedding_cache`` (1.5 kB
each for 384 dimensions), decode and re-encode it, and send it back in the ``COPY``. Here each
tenant's rows travel without their vectors, as arrays of one ``INSERT ... SELECT`` that joins
each to its cached vector inside PostgreSQL: one statement per tenant, which names it (routed
to its shard on Citus, named to the policies of row-level security). The cache rows were seen
by the same transaction's lookup; if a concurrent ``forget`` of the tenant removed some since,
fewer rows join and the batch fails whole instead of losing rows.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Row

from retrieval.db.insert_values import ROWS_PER_STATEMENT, RawBinary, RawBinaryDumper
from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.db.vector_type import VectorType, require_vector_type
from retrieval.errors import DatabaseError
from retrieval.memory.fields import MEMORY, MEMORY_ARRAYS, copy_columns, insert_fragments

# A memory's columns but its vector, in COPY order (the writer's rows add the vector or its key).
MEMORY_FIELDS = copy_columns(MEMORY)
# The array parameters of memory.insert_sent and memory.insert_cached, in MEMORY_FIELDS order
# after the tenant; the last is the vector (insert_sent) or its cache key (insert_cached).
_FIELD_ARRAYS = tuple(str(field.array) for field in MEMORY_ARRAYS)
_SENT = (*_FIELD_ARRAYS, "embeddings")
_ARRAYS = (*_FIELD_ARRAYS, "keys")
_INSERT = insert_fragments()
# The arrays sent as JSON text: binary jsonb in the writer's rows, and lists of names.
_JSON_ARRAYS = tuple(index for index, field in enumerate(MEMORY_ARRAYS) if field.type == "jsonb")
_LIST_ARRAYS = tuple(index for index, field in enumerate(MEMORY_ARRAYS) if field.type == "text[]")


def _arrays(rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    # The writer's rows as the insert's arrays: a column each but the tenant's, jsonb and lists
    # of names as JSON text.
    columns = [list(column) for column in zip(*rows, strict=True)][1:]
    for index in _JSON_ARRAYS:
        columns[index] = [bytes(blob[1:]).decode("utf-8") for blob in columns[index]]
    for index in _LIST_ARRAYS:
        columns[index] = [json.dumps(names) if names else None for names in columns[index]]
    return columns


def insert_sent_memories(
    connection: Connection,
    schema: str,
    rows: Iterable[Sequence[Any]],
    vector_type: VectorType,
) -> list[Row[Any]]:
    """Write memory rows (``MEMORY_FIELDS`` and the vector in its binary form) as one
    statement of arrays per tenant and :data:`ROWS_PER_STATEMENT` rows; return what each
    returned (a row per memory: its key, id and whether it was new)."""
    by_tenant: dict[str, list[Sequence[Any]]] = defaultdict(list)
    for row in rows:
        by_tenant[row[0]].append(row)
    insert = statement(
        "memory.insert_sent",
        schema,
        refresh_copies=statement("memory.refresh_copies"),
        vector_type=vector_type,
        **_INSERT,
    )
    driver = connection.connection.driver_connection
    assert driver is not None
    driver.adapters.register_dumper(RawBinary, RawBinaryDumper)
    oid = vector_oid(connection, vector_type)
    written: list[Row[Any]] = []
    for tenant, tenant_rows in sorted(by_tenant.items()):
        bind_tenant(connection, schema, tenant)
        for start in range(0, len(tenant_rows), ROWS_PER_STATEMENT):
            chunk = tenant_rows[start : start + ROWS_PER_STATEMENT]
            columns = _arrays(chunk)
            columns[-1] = [RawBinary(oid, blob) for blob in columns[-1]]
            params = dict(zip(_SENT, columns, strict=True))
            written += execute(connection, insert, {"tenant_id": tenant, **params}).all()
    return written


def vector_oid(connection: Connection, vector_type: VectorType) -> int:
    """The oid of ``vector_type`` in the database (pgvector's types have no fixed oids)."""
    name = require_vector_type(vector_type)
    return int(execute(connection, "SELECT %(name)s::regtype::oid", {"name": name}).scalar_one())


def insert_cached_memories(
    connection: Connection,
    schema: str,
    rows: Iterable[Sequence[Any]],
    count: int,
    *,
    refresh: bool = True,
) -> list[Row[Any]]:
    """Write ``count`` memory rows (``MEMORY_FIELDS`` and the cache key of the text), each
    taking its vector from the cache. With ``refresh``, a copy of a live memory refreshes it
    and every statement returns a row per memory (its key, id and whether it was new,
    :mod:`retrieval.memory.copies`); without, a copy is refused by the live rows' unique key
    and nothing is returned."""
    if count == 0:
        return []
    by_tenant: dict[str, list[Sequence[Any]]] = defaultdict(list)
    for row in rows:
        by_tenant[row[0]].append(row)
    ending = statement("memory.refresh_copies") if refresh else ""
    insert = statement("memory.insert_cached", schema, refresh_copies=ending, **_INSERT)
    written: list[Row[Any]] = []
    inserted = 0
    for tenant, tenant_rows in sorted(by_tenant.items()):
        bind_tenant(connection, schema, tenant)
        columns = _arrays(tenant_rows)
        params = dict(zip(_ARRAYS, columns, strict=True))
        result = execute(connection, insert, {"tenant_id": tenant, **params})
        if refresh:
            returned = result.all()
            written += returned
            inserted += len(returned)
        else:
            inserted += result.rowcount
    if inserted != count:
        raise DatabaseError(
            f"{count - inserted} of {count} cached embeddings disappeared while the batch "
            "was written (a concurrent forget of the tenant?): nothing was written; retry the "
            "batch"
        )
    return written
