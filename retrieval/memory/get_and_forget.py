"""Reading rows back by id, and forgetting them: the SQL of ``get_*`` and ``forget``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pgvector import Vector
from sqlalchemy import Connection, text

from retrieval.db.row_security import bind_tenant
from retrieval.db.statistics_lock import lock_term_statistics
from retrieval.memory.records import Decision, Forgotten, Memory, ToolCall

# {s} is the validated, quoted schema name: identifiers cannot be bound parameters.
_MEMORIES = """
SELECT m.id, m.tenant_id, m.content, m.kind, m.metadata, m.importance, m.access_count,
       m.last_accessed_at, m.created_at, m.embedding_model, m.thread_id, m.position,
       coalesce((SELECT array_agg(e.entity_id ORDER BY e.entity_id)
                   FROM {s}.memory_entities e
                  WHERE e.tenant_id = m.tenant_id AND e.memory_id = m.id), '{{}}') AS entities,
       m.embedding
FROM {s}.memories m
WHERE m.tenant_id = :tenant_id AND m.id = ANY(CAST(:ids AS bigint[]))
ORDER BY m.id
"""
_DECISIONS = """
SELECT id, tenant_id, task_id, action_type, content, status, created_at
FROM {s}.decisions
WHERE tenant_id = :tenant_id AND id = ANY(CAST(:ids AS bigint[]))
ORDER BY id
"""
_TOOL_CALLS = """
SELECT id, tenant_id, decision_id, tool_name, params, result, created_at
FROM {s}.tool_calls
WHERE tenant_id = :tenant_id AND id = ANY(CAST(:ids AS bigint[]))
ORDER BY id
"""
_EXISTING_DECISIONS = """
SELECT id FROM {s}.decisions WHERE tenant_id = :tenant_id AND id = ANY(CAST(:ids AS bigint[]))
"""

# One statement per call: the selected decisions (by id or task) go with their tool calls.
_FORGET = """
WITH chosen_decisions AS (
    SELECT id FROM {s}.decisions
    WHERE tenant_id = :tenant_id
      AND (:everything OR id = ANY(CAST(:decision_ids AS bigint[])) OR task_id = :task_id)
), removed_tool_calls AS (
    DELETE FROM {s}.tool_calls
    WHERE tenant_id = :tenant_id
      AND (:everything OR id = ANY(CAST(:tool_call_ids AS bigint[]))
           OR decision_id IN (SELECT id FROM chosen_decisions))
    RETURNING id
), removed_decisions AS (
    DELETE FROM {s}.decisions
    WHERE tenant_id = :tenant_id AND id IN (SELECT id FROM chosen_decisions)
    RETURNING id
), removed_memories AS (
    -- Their BM25 statistics are taken back by the memories' triggers (revision 0010).
    DELETE FROM {s}.memories
    WHERE tenant_id = :tenant_id
      AND (:everything OR id = ANY(CAST(:memory_ids AS bigint[])))
    RETURNING id
), removed_cache AS (
    DELETE FROM {s}.embedding_cache WHERE tenant_id = :tenant_id AND :everything
    RETURNING 1
), removed_documents AS (
    -- Their chunks and postings go with them (ON DELETE CASCADE).
    DELETE FROM {s}.documents WHERE tenant_id = :tenant_id AND :everything
    RETURNING doc_id
), removed_term_stats AS (
    DELETE FROM {s}.document_term_stats WHERE tenant_id = :tenant_id AND :everything
), removed_corpus AS (
    DELETE FROM {s}.document_corpus WHERE tenant_id = :tenant_id AND :everything
)
SELECT (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM removed_memories),
       (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM removed_decisions),
       (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM removed_tool_calls),
       (SELECT count(*) FROM removed_cache),
       (SELECT coalesce(array_agg(doc_id ORDER BY doc_id), '{{}}') FROM removed_documents)
"""


class Lookup:
    """The read-by-id and forget statements of one schema."""

    def __init__(self, schema: str) -> None:
        quoted = f'"{schema}"'
        self._memories = text(_MEMORIES.format(s=quoted))
        self._decisions = text(_DECISIONS.format(s=quoted))
        self._tool_calls = text(_TOOL_CALLS.format(s=quoted))
        self._existing_decisions = text(_EXISTING_DECISIONS.format(s=quoted))
        self._forget = text(_FORGET.format(s=quoted))
        self._schema = schema

    def memories(self, connection: Connection, tenant_id: str, ids: Sequence[int]) -> list[Memory]:
        bind_tenant(connection, self._schema, tenant_id)
        rows = connection.execute(self._memories, {"tenant_id": tenant_id, "ids": list(ids)})
        return [_memory(row) for row in rows]

    def decisions(
        self, connection: Connection, tenant_id: str, ids: Sequence[int]
    ) -> list[Decision]:
        bind_tenant(connection, self._schema, tenant_id)
        rows = connection.execute(self._decisions, {"tenant_id": tenant_id, "ids": list(ids)})
        return [Decision(*row) for row in rows]

    def tool_calls(
        self, connection: Connection, tenant_id: str, ids: Sequence[int]
    ) -> list[ToolCall]:
        bind_tenant(connection, self._schema, tenant_id)
        rows = connection.execute(self._tool_calls, {"tenant_id": tenant_id, "ids": list(ids)})
        return [ToolCall(*row) for row in rows]

    def existing_decisions(
        self, connection: Connection, tenant_id: str, ids: Sequence[int]
    ) -> set[int]:
        bind_tenant(connection, self._schema, tenant_id)
        rows = connection.execute(
            self._existing_decisions, {"tenant_id": tenant_id, "ids": list(ids)}
        )
        return set(rows.scalars())

    def forget(
        self,
        connection: Connection,
        tenant_id: str,
        *,
        memory_ids: Sequence[int],
        decision_ids: Sequence[int],
        tool_call_ids: Sequence[int],
        task_id: str | None,
        everything: bool,
    ) -> Forgotten:
        bind_tenant(connection, self._schema, tenant_id)
        # The statistics this statement takes back are shared with the tenant's writers.
        lock_term_statistics(connection, self._schema, [tenant_id])
        memories, decisions, tool_calls, cache, documents = connection.execute(
            self._forget,
            {
                "tenant_id": tenant_id,
                "memory_ids": list(memory_ids),
                "decision_ids": list(decision_ids),
                "tool_call_ids": list(tool_call_ids),
                "task_id": task_id,
                "everything": everything,
            },
        ).one()
        return Forgotten(
            memory_ids=tuple(memories),
            decision_ids=tuple(decisions),
            tool_call_ids=tuple(tool_calls),
            cache_entries=int(cache),
            document_ids=tuple(documents),
        )


def _memory(row: Any) -> Memory:
    vector = row.embedding
    array = vector.to_numpy() if isinstance(vector, Vector) else np.asarray(vector)
    return Memory(
        id=row.id,
        tenant_id=row.tenant_id,
        content=row.content,
        kind=row.kind,
        metadata=row.metadata,
        importance=row.importance,
        access_count=row.access_count,
        last_accessed_at=row.last_accessed_at,
        created_at=row.created_at,
        embedding_model=row.embedding_model,
        entities=tuple(row.entities),
        thread_id=row.thread_id,
        position=row.position,
        embedding=array.astype(np.float32),
    )
