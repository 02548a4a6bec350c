"""Rows written as ``INSERT ... VALUES`` with binary parameters, one tenant at a time.

A role that row-level security binds may not ``COPY FROM`` into the tables (PostgreSQL refuses
it), and on a Citus cluster an ``INSERT ... SELECT`` from anything but a distributed table is
run by the coordinator as a ``COPY`` into the shards, refused the same way on the workers. A
multi-row ``INSERT ... VALUES`` naming one tenant is neither: PostgreSQL checks each row against
the policies, and Citus routes the statement whole to the tenant's shard. So a bound role's
rows (and the ingest keys of every role) are written here: grouped by tenant, the tenant named
to the policies first, in statements of at most :data:`ROWS_PER_STATEMENT` rows.

The values are the ``COPY`` rows as they are: vectors and jsonb already in PostgreSQL's binary
formats (:mod:`retrieval.db.copy_rows`) are sent as binary parameters declared with their
column's type, so the server decodes them with the same receive functions as a ``COPY``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.pq import Format
from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant

# PostgreSQL takes at most 65,535 parameters a statement; fewer rows keep the plan small.
ROWS_PER_STATEMENT = 1000
_MAX_PARAMETERS = 65_535
_BYTEA = 17  # the oid of bytea: a column of that type takes its bytes as they are


class RawBinary(NamedTuple):
    """A value already in the binary format of the type ``oid`` (a vector, a jsonb)."""

    oid: int
    data: bytes


class RawBinaryDumper(Dumper):
    """Sends a :class:`RawBinary` as it is, declared with its own type."""

    format = Format.BINARY

    def get_key(self, obj: Any, format: Any) -> Any:
        return (RawBinary, obj.oid)

    def upgrade(self, obj: Any, format: Any) -> Dumper:
        dumper = RawBinaryDumper(RawBinary)
        dumper.oid = obj.oid
        return dumper

    def dump(self, obj: Any) -> bytes:
        return bytes(obj.data)


def insert_rows(
    connection: Connection,
    schema: str,
    table: str,
    columns: Sequence[str],
    types: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    suffix: str = "",
) -> int:
    """Insert ``rows`` (``COPY`` rows: ``columns`` with their copy ``types``; ``tenant_id``
    among them) into ``schema.table``; ``suffix`` ends each statement (an ``ON CONFLICT``
    clause, fixed by the caller). Return the rows inserted."""
    driver = connection.connection.driver_connection
    assert driver is not None
    driver.adapters.register_dumper(RawBinary, RawBinaryDumper)
    relation = f"{sql.Identifier(schema).as_string(None)}.{sql.Identifier(table).as_string(None)}"
    oids = _column_oids(connection, relation)
    raw = [
        index
        for index, (name, kind) in enumerate(zip(columns, types, strict=True))
        if kind == "bytea" and oids[name] != _BYTEA
    ]
    tenant_at = list(columns).index("tenant_id")
    by_tenant: dict[str, list[list[Any]]] = defaultdict(list)
    for row in rows:
        values = list(row)
        for index in raw:
            if values[index] is not None:
                values[index] = RawBinary(oids[columns[index]], values[index])
        by_tenant[values[tenant_at]].append(values)
    per_statement = max(1, min(ROWS_PER_STATEMENT, _MAX_PARAMETERS // len(columns)))
    inserted = 0
    for tenant in sorted(by_tenant):
        bind_tenant(connection, schema, tenant)
        tenant_rows = by_tenant[tenant]
        for start in range(0, len(tenant_rows), per_statement):
            chunk = tenant_rows[start : start + per_statement]
            query = _insert(relation, columns, len(chunk), suffix)
            params = [value for values in chunk for value in values]
            with driver.cursor() as cursor:
                cursor.execute(query, params)
                inserted += max(cursor.rowcount, 0)
    return inserted


def _column_oids(connection: Connection, relation: str) -> dict[str, int]:
    rows = execute(connection, statement("db.column_types"), {"relation": relation})
    return {str(name): int(oid) for name, oid in rows}


def _insert(relation: str, columns: Sequence[str], count: int, suffix: str) -> sql.Composed:
    names = sql.SQL(", ").join(sql.Identifier(column) for column in columns)
    row = sql.SQL("({})").format(sql.SQL(", ").join(sql.Placeholder() * len(columns)))
    return sql.SQL("INSERT INTO {} ({}) VALUES {} {}").format(
        sql.SQL(relation), names, sql.SQL(", ").join([row] * count), sql.SQL(suffix)
    )
