"""Writing validated rows with binary ``COPY`` on a connection the caller's transaction owns."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from pgvector import Vector
from psycopg.types.json import Jsonb
from sqlalchemy import Connection

from retrieval.bulk import copy_rows, reserve_ids
from retrieval.embedding import Vectors
from retrieval.embedding_cache import EmbeddingCache
from retrieval.errors import ValidationError
from retrieval.lookup import Lookup
from retrieval.validation import ValidDecision, ValidMemory, ValidToolCall

_MEMORY_COLUMNS = (
    ("tenant_id", "text"),
    ("id", "int8"),
    ("content", "text"),
    ("kind", "text"),
    ("metadata", "jsonb"),
    ("importance", "float8"),
    ("created_at", "timestamptz"),
    ("embedding", "vector"),
    ("embedding_model", "text"),
)
_ENTITY_COLUMNS = (("tenant_id", "text"), ("memory_id", "int8"), ("entity_id", "text"))
_DECISION_COLUMNS = (
    ("tenant_id", "text"),
    ("id", "int8"),
    ("task_id", "text"),
    ("action_type", "text"),
    ("content", "text"),
    ("status", "text"),
    ("created_at", "timestamptz"),
)
_TOOL_CALL_COLUMNS = (
    ("tenant_id", "text"),
    ("id", "int8"),
    ("decision_id", "int8"),
    ("tool_name", "text"),
    ("params", "jsonb"),
    ("result", "text"),
    ("created_at", "timestamptz"),
)


class Writer:
    """Writes rows of one schema; embeds memories without a vector through ``cache``."""

    def __init__(
        self,
        schema: str,
        cache: EmbeddingCache,
        lookup: Lookup,
    ) -> None:
        self.schema = schema
        self.cache = cache
        self.lookup = lookup

    def memories(self, connection: Connection, memories: Sequence[ValidMemory]) -> list[int]:
        """Embed (through the cache) and copy ``memories`` and their entity links."""
        if not memories:
            return []
        vectors = self._vectors(connection, memories)
        now, ids = reserve_ids(connection, self.schema, "memories", len(memories))
        model_id = self.cache.embedder.model_id
        rows = (
            (
                memory.tenant_id,
                memory_id,
                memory.text,
                memory.kind,
                Jsonb(memory.metadata_json, dumps=_already_json),
                memory.importance,
                memory.created_at or now,
                Vector(vector),
                memory.embedding_model or model_id,
            )
            for memory, memory_id, vector in zip(memories, ids, vectors, strict=True)
        )
        copy_rows(connection, self.schema, "memories", *_columns(_MEMORY_COLUMNS), rows)
        links = [
            (memory.tenant_id, memory_id, entity)
            for memory, memory_id in zip(memories, ids, strict=True)
            for entity in memory.entities
        ]
        if links:
            columns = _columns(_ENTITY_COLUMNS)
            copy_rows(connection, self.schema, "memory_entities", *columns, links)
        return ids

    def decisions(self, connection: Connection, decisions: Sequence[ValidDecision]) -> list[int]:
        """Copy ``decisions``."""
        if not decisions:
            return []
        now, ids = reserve_ids(connection, self.schema, "decisions", len(decisions))
        rows = (
            (d.tenant_id, i, d.task_id, d.action_type, d.content, d.status, d.created_at or now)
            for d, i in zip(decisions, ids, strict=True)
        )
        copy_rows(connection, self.schema, "decisions", *_columns(_DECISION_COLUMNS), rows)
        return ids

    def tool_calls(
        self, connection: Connection, calls: Sequence[ValidToolCall], *, single: bool = False
    ) -> list[int]:
        """Copy ``calls`` after checking that the decisions they name exist for their tenant."""
        if not calls:
            return []
        self._check_decisions_exist(connection, calls, single)
        now, ids = reserve_ids(connection, self.schema, "tool_calls", len(calls))
        rows = (
            (
                c.tenant_id,
                i,
                c.decision_id,
                c.tool_name,
                Jsonb(c.params_json, dumps=_already_json),
                c.result,
                c.created_at or now,
            )
            for c, i in zip(calls, ids, strict=True)
        )
        copy_rows(connection, self.schema, "tool_calls", *_columns(_TOOL_CALL_COLUMNS), rows)
        return ids

    def _vectors(self, connection: Connection, memories: Sequence[ValidMemory]) -> list[Vectors]:
        vectors: list[Vectors | None] = [memory.embedding for memory in memories]
        to_embed: dict[str, list[int]] = defaultdict(list)
        for index, memory in enumerate(memories):
            if memory.embedding is None:
                to_embed[memory.tenant_id].append(index)
        for tenant_id, indexes in to_embed.items():
            texts = [memories[index].text for index in indexes]
            embedded = self.cache.embed(connection, tenant_id, texts)
            for index, vector in zip(indexes, embedded, strict=True):
                vectors[index] = vector
        return [np.asarray(vector, dtype=np.float32) for vector in vectors]

    def _check_decisions_exist(
        self, connection: Connection, calls: Sequence[ValidToolCall], single: bool
    ) -> None:
        wanted: dict[str, set[int]] = defaultdict(set)
        for call in calls:
            if call.decision_id is not None:
                wanted[call.tenant_id].add(call.decision_id)
        for tenant_id, ids in wanted.items():
            missing = ids - self.lookup.existing_decisions(connection, tenant_id, sorted(ids))
            if not missing:
                continue
            index = next(
                i
                for i, call in enumerate(calls)
                if call.tenant_id == tenant_id and call.decision_id in missing
            )
            raise ValidationError(
                f"decision_id: decision {calls[index].decision_id} does not exist for tenant "
                f"{tenant_id!r}: record the decision first, or leave decision_id empty",
                item=None if single else index,
                field="decision_id",
            )


def _columns(spec: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    return [name for name, _ in spec], [kind for _, kind in spec]


def _already_json(value: Any) -> str:
    return str(value)
