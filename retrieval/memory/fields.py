"""The fields of a memory, a decision and a tool call, declared once.

Each :class:`Field` is a column of the record's table (or, for a memory's entities and the ids
it supersedes, a field kept elsewhere) and says where it goes: what a caller gives
(:class:`~retrieval.memory.records.MemoryInput`, ``remember``'s keywords, an ingested line, the
MCP tools), what the writer sends (its ``COPY`` columns, the insert statements' arrays), what a
read gives back (:class:`~retrieval.memory.records.Memory`), what the search statement reads of
each memory candidate, and what an export writes.

Derived from these tuples: the writer's ``COPY`` columns, the column lists of the insert and
read statements of ``retrieval/sql/memory.sql`` (their ``{placeholders}``), the search
statement's memory columns, the records built from rows and the exported lines. The dataclasses
and named tuples, ``remember``'s keywords, the MCP tools' parameters, the ingested file's
columns and the tables are Python or SQLAlchemy declarations of their own: a test
(``tests/unit/test_fields.py``) holds each of them to these tuples.
"""

from __future__ import annotations

from typing import NamedTuple


class Field(NamedTuple):
    """One field of a record, in the order its table's ``COPY`` sends the written ones."""

    name: str  # its column, and the attribute of the stored record
    type: str  # the PostgreSQL type the writer sends (jsonb: binary in COPY, text in arrays)
    given: str | None = None  # the keyword a caller gives it by (None: the store sets it)
    written: bool = True  # the writer sends it
    array: str | None = None  # its array parameter in the insert statements (memories)
    read: bool = True  # an attribute of the stored record (Memory, Decision, ToolCall)
    column: bool = True  # a column of the record's table
    candidate: bool = False  # read by the search statement for a memory candidate
    exported: bool = False  # written by an export (beside its type, tenant and time)
    tool: bool = False  # a parameter of the MCP tool that stores it


# A memory. The tenant is bound once per insert statement, not sent as an array; the vector is
# sent apart, after the other written fields (binary, or as its cache key).
MEMORY = (
    Field("tenant_id", "text", "tenant_id"),
    Field("id", "int8", array="ids", candidate=True),
    Field("content", "text", "text", array="contents", candidate=True, exported=True, tool=True),
    Field("kind", "text", "kind", array="kinds", candidate=True, exported=True, tool=True),
    Field(
        "metadata", "jsonb", "metadata", array="metadata", candidate=True, exported=True, tool=True
    ),
    Field(
        "importance",
        "float8",
        "importance",
        array="importance",
        candidate=True,
        exported=True,
        tool=True,
    ),
    Field("entities", "text[]", "entities", written=False, column=False, exported=True, tool=True),
    Field("access_count", "int4", written=False, candidate=True),
    Field("last_accessed_at", "timestamptz", written=False, candidate=True),
    Field("created_at", "timestamptz", "created_at", array="created_at", candidate=True, tool=True),
    Field("embedding_model", "text", "embedding_model", array="models", candidate=True),
    Field(
        "thread_id", "text", "thread_id", array="threads", candidate=True, exported=True, tool=True
    ),
    Field(
        "position", "int4", "position", array="positions", candidate=True, exported=True, tool=True
    ),
    Field("expires_at", "timestamptz", "expires_at", array="expires_at", exported=True, tool=True),
    Field(
        "namespace",
        "text[]",
        "namespace",
        array="namespaces",
        candidate=True,
        exported=True,
        tool=True,
    ),
    Field("key", "text", "key", array="memory_keys", candidate=True, exported=True, tool=True),
    Field("distinct_copy", "bool", array="distinct_copy", read=False),
    Field("seen_count", "int4", array="seen_count"),
    Field("last_seen_at", "timestamptz", array="last_seen_at", candidate=True),
    Field("retired_at", "timestamptz", written=False),
    Field("superseded_by", "int8", written=False),
    Field("embedding", "vector", "embedding", written=False),
    Field("supersedes", "int8[]", "supersedes", written=False, read=False, column=False, tool=True),
)

DECISION = (
    Field("tenant_id", "text", "tenant_id"),
    Field("id", "int8"),
    Field("task_id", "text", "task_id", exported=True, tool=True),
    Field("action_type", "text", "action_type", exported=True, tool=True),
    Field("content", "text", "content", exported=True, tool=True),
    Field("status", "text", "status", exported=True, tool=True),
    Field("created_at", "timestamptz", "created_at"),
)

TOOL_CALL = (
    Field("tenant_id", "text", "tenant_id"),
    Field("id", "int8"),
    Field("decision_id", "int8", "decision_id", tool=True),
    Field("tool_name", "text", "tool_name", exported=True, tool=True),
    Field("params", "jsonb", "params", exported=True, tool=True),
    Field("result", "text", "result", exported=True, tool=True),
    Field("created_at", "timestamptz", "created_at"),
)


def given(fields: tuple[Field, ...]) -> tuple[str, ...]:
    """The keywords a caller gives a record by, in declared order."""
    return tuple(field.given for field in fields if field.given is not None)


def read_names(fields: tuple[Field, ...]) -> tuple[str, ...]:
    """The attributes of the stored record, in declared order."""
    return tuple(field.name for field in fields if field.read)


def copy_columns(fields: tuple[Field, ...]) -> tuple[tuple[str, str], ...]:
    """The writer's ``COPY`` columns and their binary types (jsonb as bytea, see
    :mod:`retrieval.db.copy_rows`), in declared order: a memory's vector left out."""
    return tuple(
        (field.name, "bytea" if field.type == "jsonb" else field.type)
        for field in fields
        if field.written
    )


def select_list(fields: tuple[Field, ...], alias: str = "", *, where: str = "read") -> str:
    """``fields``' columns for which ``where`` (``read``, ``candidate``, ``exported``) holds,
    of the row ``alias``, as a select list."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(
        prefix + field.name for field in fields if field.column and getattr(field, where)
    )


# The search statement's columns of a memory candidate, in order.
MEMORY_CANDIDATE_COLUMNS = tuple(field.name for field in MEMORY if field.candidate)
# The memory fields sent as arrays by memory.insert_sent and memory.insert_cached, in order.
MEMORY_ARRAYS = tuple(field for field in MEMORY if field.array is not None)


def _array_type(field: Field) -> str:
    # jsonb and text[] travel as JSON text (an array parameter of arrays must be rectangular).
    return "text" if field.type in ("jsonb", "text[]") else field.type


def _value(field: Field) -> str:
    # A field's value from the unnested row ``s``.
    if field.type == "jsonb":
        return f"s.{field.name}::jsonb"
    if field.type == "text[]":
        return f"ARRAY(SELECT jsonb_array_elements_text(s.{field.name}::jsonb))"
    return f"s.{field.name}"


def insert_fragments() -> dict[str, str]:
    """The column lists of ``memory.insert_sent`` and ``memory.insert_cached``: ``{columns}``
    (the table's, the tenant and vector apart), ``{values}`` (each from the unnested row ``s``),
    ``{arrays}`` (the bound arrays) and ``{names}`` (the unnested row's)."""
    names = ", ".join(field.name for field in MEMORY_ARRAYS)
    return {
        "columns": names,
        "values": ", ".join(_value(field) for field in MEMORY_ARRAYS),
        "arrays": ", ".join(
            f"%({field.array})b::{_array_type(field)}[]" for field in MEMORY_ARRAYS
        ),
        "names": names,
    }
