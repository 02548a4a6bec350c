"""A tenant's memory as the JSON Lines that ``retrieval ingest`` reads back to the same rows.

Decisions come first, then the tool calls (each naming its decision's line in ``decision_ref``),
then the memories with their kind, metadata, importance, entities, thread, position, expiry and
namespace, oldest first. Every line has an ``id`` (``memory-<id>``, ``decision-<id>``,
``tool_call-<id>``, from the row's id): ingesting the file again stores nothing twice, and ingesting
it into the tenant it came from stores nothing (a line that describes a row the tenant holds, with
the same id, text and time, is that row). A memory retired by a correction has a ``ref`` that the
correction names in ``supersedes_ref``, so the chains of versions come back as they were; a memory
retired with no newer version (it expired and was told again, or its correction expired and was
forgotten) has its ``retired_at``. Times keep their zone. A memory's seen count is not exported.
Documents are not part of it (``retrieval ingest-docs`` reads their files).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from retrieval.arguments import check_tenant
from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import translate_database_errors
from retrieval.memory.fields import DECISION, MEMORY, TOOL_CALL, Field, select_list
from retrieval.memory.store import MemoryStore

# A line's id as line_id writes it: the row's type and id.
_LINE_ID = re.compile(r"^(memory|decision|tool_call)-([1-9][0-9]{0,17})$")


def export_records(store: MemoryStore, tenant_id: str) -> Iterator[dict[str, Any]]:
    """The tenant's decisions, tool calls and memories as ``retrieval ingest`` lines."""
    check_tenant(tenant_id)
    params = {"tenant_id": tenant_id}
    with translate_database_errors(str(store.engine.url)), store.engine.begin() as connection:
        bind_tenant(connection, store.schema, tenant_id)
        decisions = execute(
            connection,
            statement("memory.export_decisions", store.schema, decision=_columns(DECISION)),
            params,
        )
        for row in decisions:
            yield _line(
                "decision",
                tenant_id,
                row.created_at,
                id=line_id("decision", row.id),
                ref=line_id("decision", row.id),
                **_exported(DECISION, row),
            )
        tool_calls = execute(
            connection,
            statement("memory.export_tool_calls", store.schema, tool_call=_columns(TOOL_CALL)),
            params,
        )
        for row in tool_calls:
            decision_id = row.decision_id
            yield _line(
                "tool_call",
                tenant_id,
                row.created_at,
                id=line_id("tool_call", row.id),
                **_exported(TOOL_CALL, row),
                decision_ref=None if decision_id is None else line_id("decision", decision_id),
            )
        # A correction names the memories it retired by their lines' refs.
        retired_by: dict[int, list[int]] = {}
        for row_id, superseded_by in execute(
            connection, statement("memory.export_corrections", store.schema), params
        ):
            retired_by.setdefault(superseded_by, []).append(row_id)
        retired = {row_id for ids in retired_by.values() for row_id in ids}
        memories = execute(
            connection,
            statement("memory.export_memories", store.schema, memory=_columns(MEMORY)),
            params,
        )
        for row in memories:
            alone = row.retired_at is not None and row.superseded_by is None
            yield _line(
                "memory",
                tenant_id,
                row.created_at,
                id=line_id("memory", row.id),
                ref=line_id("memory", row.id) if row.id in retired else None,
                supersedes_ref=[line_id("memory", one) for one in retired_by.get(row.id, [])]
                or None,
                retired_at=row.retired_at.isoformat() if alone else None,
                **_exported(MEMORY, row),
            )


def line_id(item: str, row_id: int) -> str:
    """The ``id`` of the line of an exported row: ``memory-12``."""
    return f"{item}-{row_id}"


def exported_row(key: str | None) -> tuple[str, int] | None:
    """The row (its type and id) a line's ``id`` names if it is an export's (:func:`line_id`),
    else None."""
    found = _LINE_ID.match(key or "")
    return None if found is None else (found[1], int(found[2]))


def _columns(fields: tuple[Field, ...]) -> str:
    # The columns of the fields an export writes.
    return select_list(fields, where="exported")


def _exported(fields: tuple[Field, ...], row: Any) -> dict[str, Any]:
    # The exported fields of ``row`` by the names a line gives them (times in ISO 8601).
    values = {}
    for field in fields:
        if field.exported:
            value = getattr(row, field.name)
            if isinstance(value, datetime):
                value = value.isoformat()
            if field.name == "namespace":
                value = value or None  # the tenant's top: left out of the line
            values[str(field.given)] = value
    return values


def _line(item: str, tenant_id: str, created_at: datetime, **fields: Any) -> dict[str, Any]:
    present = {name: value for name, value in fields.items() if value is not None}
    return {"type": item, "tenant_id": tenant_id, "created_at": created_at.isoformat(), **present}
