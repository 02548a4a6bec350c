"""Idempotency keys of ingested records: what makes a re-run of ``retrieval ingest`` a no-op.

A line's ``id`` (a string unique in its tenant) is stored in ``ingest_keys`` with the row it
made, in the transaction that writes the row. An ingest first looks up the keys its file holds
and skips the lines already stored; a decision skipped this way still lends its row to the
tool calls that name it by ``decision_ref``. A concurrent run of the same file fails on the
table's primary key instead of storing a record twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from sqlalchemy import Connection

from retrieval.arguments import check_storable
from retrieval.db.insert_values import insert_rows
from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import ValidationError

MAX_KEY_CHARS = 512


class StoredKey(NamedTuple):
    """The row an earlier ingest made for a key."""

    item: str  # 'memory' | 'decision' | 'tool_call'
    row_id: int


def ingest_key(value: object) -> str | None:
    """A line's ``id`` as a key (an integer is taken as its decimal text), or ``None``."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(
            f"id must be a non-empty string (the record's idempotency key), got {value!r}",
            field="id",
        )
    if len(value) > MAX_KEY_CHARS:
        raise ValidationError(
            f"id is {len(value)} characters long: at most {MAX_KEY_CHARS}", field="id"
        )
    check_storable("id", value)
    return value


def stored_keys(
    connection: Connection, schema: str, wanted: Mapping[str, Iterable[str]]
) -> dict[tuple[str, str], StoredKey]:
    """The keys of ``wanted`` (tenant -> keys) that earlier ingests stored."""
    query = statement("memory.known_ingest_keys", schema)
    found: dict[tuple[str, str], StoredKey] = {}
    for tenant, keys in wanted.items():
        bind_tenant(connection, schema, tenant)
        rows = execute(connection, query, {"tenant_id": tenant, "keys": list(keys)})
        found.update(((tenant, key), StoredKey(item, int(row_id))) for key, item, row_id in rows)
    return found


def store_keys(
    connection: Connection,
    schema: str,
    made: Iterable[tuple[str, str, str, int]],
) -> None:
    """Keep the keys of rows just written: (tenant, key, item, row id) each, one tenant's at
    a time (:mod:`retrieval.db.insert_values`: routed to its shard on Citus)."""
    columns = ["tenant_id", "key", "item", "row_id"]
    insert_rows(connection, schema, "ingest_keys", columns, ["text", "text", "text", "int8"], made)
