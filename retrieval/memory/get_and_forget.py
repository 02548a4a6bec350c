"""Reading rows back by id, and forgetting them (``retrieval/sql/memory.sql``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from pgvector import HalfVector, Vector
from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.db.statistics_lock import lock_term_statistics
from retrieval.embedding.cache import EmbeddingCache
from retrieval.memory.erasure import erase_cached_texts, unmix_next_messages, unmix_next_turns
from retrieval.memory.fields import DECISION, MEMORY, TOOL_CALL, select_list
from retrieval.memory.kinds import MESSAGE_KIND
from retrieval.memory.records import Decision, Forgotten, Memory, ToolCall
from retrieval.memory.turn_context import NO_MIXING, Mixing


class Lookup:
    """The read-by-id and forget statements of one schema."""

    def __init__(self, schema: str, cache: EmbeddingCache, mixing: Mixing = NO_MIXING) -> None:
        self._memories = statement("memory.memories_by_id", schema, memory=select_list(MEMORY, "m"))
        self._decisions = statement(
            "memory.decisions_by_id", schema, decision=select_list(DECISION)
        )
        self._tool_calls = statement(
            "memory.tool_calls_by_id", schema, tool_call=select_list(TOOL_CALL)
        )
        self._existing_decisions = statement("memory.existing_decisions", schema)
        self._forget = statement("memory.forget", schema)
        self._forget_the_rest = statement("memory.forget_the_rest", schema)
        self._forget_expired = statement("memory.forget_expired", schema)
        self._revive_superseded = statement("memory.revive_superseded", schema)
        self._orphan_superseded = statement("memory.orphan_superseded", schema)
        self._schema = schema
        self.cache = cache
        # How the store mixes turns: what forgetting one makes again (retrieval.memory.erasure).
        self.mixing = mixing

    def memories(self, connection: Connection, tenant_id: str, ids: Sequence[int]) -> list[Memory]:
        bind_tenant(connection, self._schema, tenant_id)
        rows = execute(connection, self._memories, {"tenant_id": tenant_id, "ids": list(ids)})
        return [_memory(row) for row in rows]

    def decisions(
        self, connection: Connection, tenant_id: str, ids: Sequence[int]
    ) -> list[Decision]:
        bind_tenant(connection, self._schema, tenant_id)
        rows = execute(connection, self._decisions, {"tenant_id": tenant_id, "ids": list(ids)})
        return [Decision(**row._asdict()) for row in rows]

    def tool_calls(
        self, connection: Connection, tenant_id: str, ids: Sequence[int]
    ) -> list[ToolCall]:
        bind_tenant(connection, self._schema, tenant_id)
        rows = execute(connection, self._tool_calls, {"tenant_id": tenant_id, "ids": list(ids)})
        return [ToolCall(**row._asdict()) for row in rows]

    def existing_decisions(
        self, connection: Connection, tenant_id: str, ids: Sequence[int]
    ) -> set[int]:
        bind_tenant(connection, self._schema, tenant_id)
        rows = execute(
            connection, self._existing_decisions, {"tenant_id": tenant_id, "ids": list(ids)}
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
        removed = execute(
            connection,
            self._forget,
            {
                "tenant_id": tenant_id,
                "memory_ids": list(memory_ids),
                "decision_ids": list(decision_ids),
                "tool_call_ids": list(tool_call_ids),
                "task_id": task_id,
                "everything": everything,
                "message_kind": MESSAGE_KIND,
            },
        ).one()
        memories, decisions, tool_calls, texts, models, *turns = removed
        cache, documents, keys, revived = 0, [], list[bytes](), list[int]()
        if memories and not everything:
            revived = self._revive(connection, tenant_id, memories)
        if everything:
            cache, documents = execute(
                connection, self._forget_the_rest, {"tenant_id": tenant_id}
            ).one()
        else:
            keys, cache = erase_cached_texts(connection, self._schema, tenant_id, texts, models)
            self._unmix(connection, tenant_id, *turns)
        return Forgotten(
            memory_ids=tuple(memories),
            decision_ids=tuple(decisions),
            tool_call_ids=tuple(tool_calls),
            cache_entries=int(cache),
            document_ids=tuple(documents),
            cache_keys=tuple(keys),
            revived_ids=tuple(revived),
        )

    def _revive(self, connection: Connection, tenant_id: str, ids: Sequence[int]) -> list[int]:
        """The memories the forgotten ``ids`` superseded, live again (``memory.revive_superseded``):
        those that are."""
        params = {"tenant_id": tenant_id, "ids": list(ids)}
        rows = execute(connection, self._revive_superseded, params).all()
        return sorted(row.id for row in rows if row.revived)

    def forget_expired(self, connection: Connection, tenant_id: str, batch: int) -> Forgotten:
        """Remove the next ``batch`` of the tenant's expired memories and their cached vectors
        (one transaction: the caller's)."""
        bind_tenant(connection, self._schema, tenant_id)
        lock_term_statistics(connection, self._schema, [tenant_id])
        params = {"tenant_id": tenant_id, "batch": batch, "message_kind": MESSAGE_KIND}
        ids, texts, models, *turns = execute(connection, self._forget_expired, params).one()
        keys, cache = erase_cached_texts(connection, self._schema, tenant_id, texts, models)
        self._unmix(connection, tenant_id, *turns)
        if ids:  # what an expired correction retired stays retired, with no newer version
            execute(connection, self._orphan_superseded, {"tenant_id": tenant_id, "ids": ids})
        return Forgotten(memory_ids=tuple(ids), cache_entries=cache, cache_keys=tuple(keys))

    def _unmix(
        self,
        connection: Connection,
        tenant_id: str,
        threads: Sequence[str],
        positions: Sequence[int],
        message_ids: Sequence[int],
        message_times: Sequence[datetime],
    ) -> None:
        # The turns and messages that took a share of the forgotten ones' vectors, made again.
        unmix_next_turns(connection, self._schema, self.cache, tenant_id, threads, positions)
        unmix_next_messages(
            connection, self._schema, self.cache, tenant_id, message_ids, message_times, self.mixing
        )


def _memory(row: Any) -> Memory:
    vector = row.embedding
    # A halfvec column (RETRIEVAL_VECTOR_TYPE=halfvec) reads back as float16 values.
    raw = vector.to_numpy() if isinstance(vector, Vector | HalfVector) else vector
    array = np.array(raw, dtype=np.float32)  # a copy of its own
    return Memory(
        **row._asdict()
        | {"entities": tuple(row.entities), "namespace": tuple(row.namespace), "embedding": array}
    )
