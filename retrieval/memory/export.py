"""A tenant's memory as the JSON Lines that ``retrieval ingest`` reads back to the same rows.

Decisions come first, each with a ``ref`` (``decision-1``, ``decision-2``, ... in the order they
were stored) that its tool calls name in ``decision_ref``; then the tool calls, then the
memories with their kind, metadata, importance, entities, thread, position and expiry, oldest
first. A memory retired by a correction has a ``ref`` (``memory-<id>``) that the correction
names in ``supersedes_ref``, so the chains of versions come back as they were. Times keep their
zone. A memory's seen count is not exported. Ids are not exported: ingesting the file stores
new rows with new ids. Documents are not part of it (``retrieval ingest-docs`` reads their
files).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from retrieval.arguments import check_tenant
from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import translate_database_errors
from retrieval.memory.store import MemoryStore


def export_records(store: MemoryStore, tenant_id: str) -> Iterator[dict[str, Any]]:
    """The tenant's decisions, tool calls and memories as ``retrieval ingest`` lines."""
    check_tenant(tenant_id)
    params = {"tenant_id": tenant_id}
    with translate_database_errors(str(store.engine.url)), store.engine.begin() as connection:
        bind_tenant(connection, store.schema, tenant_id)
        decisions = execute(connection, statement("memory.export_decisions", store.schema), params)
        refs: dict[int, str] = {}
        for number, (row_id, task_id, action_type, content, status, created_at) in enumerate(
            decisions, start=1
        ):
            refs[row_id] = f"decision-{number}"
            yield _line(
                "decision",
                tenant_id,
                created_at,
                ref=refs[row_id],
                task_id=task_id,
                action_type=action_type,
                content=content,
                status=status,
            )
        tool_calls = execute(
            connection, statement("memory.export_tool_calls", store.schema), params
        )
        for decision_id, tool_name, call_params, result, created_at in tool_calls:
            yield _line(
                "tool_call",
                tenant_id,
                created_at,
                tool_name=tool_name,
                params=call_params,
                result=result,
                decision_ref=refs.get(decision_id),
            )
        # A correction names the memories it retired by their lines' refs.
        retired_by: dict[int, list[int]] = {}
        for row_id, superseded_by in execute(
            connection, statement("memory.export_corrections", store.schema), params
        ):
            retired_by.setdefault(superseded_by, []).append(row_id)
        retired = {row_id for ids in retired_by.values() for row_id in ids}
        memories = execute(connection, statement("memory.export_memories", store.schema), params)
        for row in memories:
            yield _line(
                "memory",
                tenant_id,
                row.created_at,
                ref=f"memory-{row.id}" if row.id in retired else None,
                supersedes_ref=[f"memory-{one}" for one in retired_by.get(row.id, [])] or None,
                text=row.content,
                kind=row.kind,
                metadata=row.metadata,
                importance=row.importance,
                entities=list(row.entities),
                thread_id=row.thread_id,
                position=row.position,
                expires_at=None if row.expires_at is None else row.expires_at.isoformat(),
            )


def _line(item: str, tenant_id: str, created_at: datetime, **fields: Any) -> dict[str, Any]:
    present = {name: value for name, value in fields.items() if value is not None}
    return {"type": item, "tenant_id": tenant_id, "created_at": created_at.isoformat(), **present}
