"""The write path: memories, decisions and tool calls, validated, embedded and copied in.

Every batch is validated whole before anything is written, then written in one transaction
with binary ``COPY``: it lands whole or not at all.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
from pgvector import Vector
from psycopg.types.json import Jsonb
from sqlalchemy import Connection, Engine

from retrieval.bulk import copy_rows, reserve_ids
from retrieval.config import WriteConfig
from retrieval.db import Database, check_embedding_dim, stored_embedding_dim
from retrieval.embedding import Embedder, SentenceTransformerEmbedder, Vectors
from retrieval.embedding_cache import CacheStats, EmbeddingCache
from retrieval.errors import ValidationError, translate_database_errors
from retrieval.lookup import Lookup
from retrieval.records import (
    Decision,
    DecisionInput,
    Forgotten,
    Memory,
    MemoryInput,
    ToolCall,
    ToolCallInput,
)
from retrieval.validation import (
    Limits,
    ValidDecision,
    ValidMemory,
    ValidToolCall,
    valid_decision,
    valid_memory,
    valid_tool_call,
)

logger = logging.getLogger(__name__)

Input = TypeVar("Input", MemoryInput, DecisionInput, ToolCallInput)

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


class MemoryStore:
    """Stores an agent's memories, decisions and tool calls in one PostgreSQL schema.

    ``embedder`` defaults to sentence-transformers with ``config.embedding_model`` (the bundled
    all-MiniLM-L6-v2 unless set); it is loaded on first use, and refused if its dimension is not
    the database's.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        schema: str = "retrieval",
        embedder: Embedder | None = None,
        config: WriteConfig | None = None,
    ) -> None:
        self.engine = engine
        self.schema = schema
        self.config = config or WriteConfig()
        self.embedder: Embedder = embedder or SentenceTransformerEmbedder(
            self.config.embedding_model, batch_size=self.config.batch_size
        )
        self.dim = stored_embedding_dim(engine, schema)
        self.cache = EmbeddingCache(self.embedder, schema, lru_entries=self.config.cache_entries)
        self._limits = Limits(max_text_chars=self.config.max_text_chars, dim=self.dim)
        self._lookup = Lookup(schema)
        self._embedder_checked = False

    @classmethod
    def from_database(
        cls,
        database: Database,
        *,
        embedder: Embedder | None = None,
        config: WriteConfig | None = None,
    ) -> MemoryStore:
        """A store on a :class:`~retrieval.db.Database` from :func:`retrieval.connect`."""
        return cls(database.engine, schema=database.config.schema, embedder=embedder, config=config)

    @property
    def cache_stats(self) -> CacheStats:
        """Hits and misses of the embedding cache since this store was made."""
        return self.cache.stats

    # -- memories ---------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        tenant_id: str,
        kind: str = "fact",
        metadata: Mapping[str, Any] | None = None,
        importance: float | None = None,
        created_at: datetime | None = None,
        entities: Sequence[str] = (),
        embedding: Sequence[float] | Vectors | None = None,
    ) -> int:
        """Store one memory and return its id."""
        item = MemoryInput(
            text=text,
            tenant_id=tenant_id,
            kind=kind,
            metadata=metadata,
            importance=importance,
            created_at=created_at,
            entities=entities,
            embedding=embedding,
        )
        return self._write_memories([valid_memory(item, self._limits)])[0]

    def remember_many(self, items: Iterable[MemoryInput | Mapping[str, Any]]) -> list[int]:
        """Store a batch of memories in one transaction; return their ids in order.

        Items are :class:`MemoryInput` or dicts with the same keys. One bad item refuses the
        whole batch with a :class:`ValidationError` naming it, and nothing is written.
        """
        batch = [_as_input(item, MemoryInput, index) for index, item in enumerate(items)]
        return self._write_memories(
            [valid_memory(item, self._limits, index) for index, item in enumerate(batch)]
        )

    def _write_memories(self, memories: Sequence[ValidMemory]) -> list[int]:
        if not memories:
            return []
        with self._transaction() as connection:
            vectors = self._vectors(connection, memories)
            now, ids = reserve_ids(connection, self.schema, "memories", len(memories))
            model_id = self.embedder.model_id
            copy_rows(
                connection,
                self.schema,
                "memories",
                *_columns(_MEMORY_COLUMNS),
                (
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
                ),
            )
            links = [
                (memory.tenant_id, memory_id, entity)
                for memory, memory_id in zip(memories, ids, strict=True)
                for entity in memory.entities
            ]
            if links:
                copy_rows(
                    connection, self.schema, "memory_entities", *_columns(_ENTITY_COLUMNS), links
                )
        return ids

    def _vectors(self, connection: Connection, memories: Sequence[ValidMemory]) -> list[Vectors]:
        vectors: list[Vectors | None] = [memory.embedding for memory in memories]
        to_embed: dict[str, list[int]] = defaultdict(list)
        for index, memory in enumerate(memories):
            if memory.embedding is None:
                to_embed[memory.tenant_id].append(index)
        if to_embed:
            self._check_embedder()
        for tenant_id, indexes in to_embed.items():
            embedded = self.cache.embed(
                connection, tenant_id, [memories[index].text for index in indexes]
            )
            for index, vector in zip(indexes, embedded, strict=True):
                vectors[index] = vector
        return [np.asarray(vector, dtype=np.float32) for vector in vectors]

    def _check_embedder(self) -> None:
        if not self._embedder_checked:
            check_embedding_dim(self.engine, self.schema, self.embedder.model_id, self.embedder.dim)
            self._embedder_checked = True

    # -- decisions and tool calls -----------------------------------------------------------

    def record_decision(
        self,
        *,
        tenant_id: str,
        task_id: str | None,
        action_type: str,
        content: str,
        status: str,
        created_at: datetime | None = None,
    ) -> int:
        """Store one decision and return its id."""
        item = DecisionInput(
            tenant_id=tenant_id,
            task_id=task_id,
            action_type=action_type,
            content=content,
            status=status,
            created_at=created_at,
        )
        return self._write_decisions([valid_decision(item, self._limits)])[0]

    def record_decisions(self, items: Iterable[DecisionInput | Mapping[str, Any]]) -> list[int]:
        """Store a batch of decisions in one transaction; return their ids in order."""
        batch = [_as_input(item, DecisionInput, index) for index, item in enumerate(items)]
        return self._write_decisions(
            [valid_decision(item, self._limits, index) for index, item in enumerate(batch)]
        )

    def _write_decisions(self, decisions: Sequence[ValidDecision]) -> list[int]:
        if not decisions:
            return []
        with self._transaction() as connection:
            now, ids = reserve_ids(connection, self.schema, "decisions", len(decisions))
            copy_rows(
                connection,
                self.schema,
                "decisions",
                *_columns(_DECISION_COLUMNS),
                (
                    (
                        d.tenant_id,
                        i,
                        d.task_id,
                        d.action_type,
                        d.content,
                        d.status,
                        d.created_at or now,
                    )
                    for d, i in zip(decisions, ids, strict=True)
                ),
            )
        return ids

    def record_tool_call(
        self,
        *,
        tenant_id: str,
        decision_id: int | None,
        tool_name: str,
        params: Mapping[str, Any],
        result: str | None,
        created_at: datetime | None = None,
    ) -> int:
        """Store one tool call and return its id."""
        item = ToolCallInput(
            tenant_id=tenant_id,
            decision_id=decision_id,
            tool_name=tool_name,
            params=params,
            result=result,
            created_at=created_at,
        )
        return self._write_tool_calls([valid_tool_call(item, self._limits)], single=True)[0]

    def record_tool_calls(self, items: Iterable[ToolCallInput | Mapping[str, Any]]) -> list[int]:
        """Store a batch of tool calls in one transaction; return their ids in order."""
        batch = [_as_input(item, ToolCallInput, index) for index, item in enumerate(items)]
        return self._write_tool_calls(
            [valid_tool_call(item, self._limits, index) for index, item in enumerate(batch)]
        )

    def _write_tool_calls(
        self, calls: Sequence[ValidToolCall], *, single: bool = False
    ) -> list[int]:
        if not calls:
            return []
        with self._transaction() as connection:
            self._check_decisions_exist(connection, calls, single)
            now, ids = reserve_ids(connection, self.schema, "tool_calls", len(calls))
            copy_rows(
                connection,
                self.schema,
                "tool_calls",
                *_columns(_TOOL_CALL_COLUMNS),
                (
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
                ),
            )
        return ids

    def _check_decisions_exist(
        self, connection: Connection, calls: Sequence[ValidToolCall], single: bool
    ) -> None:
        wanted: dict[str, set[int]] = defaultdict(set)
        for call in calls:
            if call.decision_id is not None:
                wanted[call.tenant_id].add(call.decision_id)
        for tenant_id, ids in wanted.items():
            missing = ids - self._lookup.existing_decisions(connection, tenant_id, sorted(ids))
            if not missing:
                continue
            index = next(
                i
                for i, c in enumerate(calls)
                if c.tenant_id == tenant_id and c.decision_id in missing
            )
            raise ValidationError(
                f"decision_id: decision {calls[index].decision_id} does not exist for tenant "
                f"{tenant_id!r}: record the decision first, or leave decision_id empty",
                item=None if single else index,
                field="decision_id",
            )

    # -- reading and forgetting -------------------------------------------------------------

    def get_memory(self, memory_id: int, *, tenant_id: str) -> Memory | None:
        """The memory ``memory_id`` of ``tenant_id``, or ``None``."""
        found = self.get_memories([memory_id], tenant_id=tenant_id)
        return found[0] if found else None

    def get_memories(self, memory_ids: Sequence[int], *, tenant_id: str) -> list[Memory]:
        """The memories of ``tenant_id`` among ``memory_ids``, by id."""
        with self._transaction() as connection:
            return self._lookup.memories(connection, tenant_id, memory_ids)

    def get_decision(self, decision_id: int, *, tenant_id: str) -> Decision | None:
        """The decision ``decision_id`` of ``tenant_id``, or ``None``."""
        with self._transaction() as connection:
            found = self._lookup.decisions(connection, tenant_id, [decision_id])
        return found[0] if found else None

    def get_tool_call(self, tool_call_id: int, *, tenant_id: str) -> ToolCall | None:
        """The tool call ``tool_call_id`` of ``tenant_id``, or ``None``."""
        with self._transaction() as connection:
            found = self._lookup.tool_calls(connection, tenant_id, [tool_call_id])
        return found[0] if found else None

    def forget(
        self,
        *,
        tenant_id: str,
        memory_ids: Sequence[int] = (),
        decision_ids: Sequence[int] = (),
        tool_call_ids: Sequence[int] = (),
        task_id: str | None = None,
        everything: bool = False,
    ) -> Forgotten:
        """Remove rows of ``tenant_id`` and return what was removed.

        By id (``memory_ids``, ``decision_ids``, ``tool_call_ids``), by task (``task_id``: its
        decisions and their tool calls), or ``everything`` the tenant has, embedding cache
        included. A decision's tool calls go with it.
        """
        if not (memory_ids or decision_ids or tool_call_ids or task_id or everything):
            raise ValidationError(
                "forget needs something to remove: ids, a task_id, or everything=True"
            )
        with self._transaction() as connection:
            forgotten = self._lookup.forget(
                connection,
                tenant_id,
                memory_ids=memory_ids,
                decision_ids=decision_ids,
                tool_call_ids=tool_call_ids,
                task_id=task_id,
                everything=everything,
            )
        if everything:
            self.cache.forget_tenant(tenant_id)
        return forgotten

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        with translate_database_errors(str(self.engine.url)), self.engine.begin() as connection:
            yield connection


def _as_input(item: object, kind: type[Input], index: int) -> Input:
    if isinstance(item, kind):
        return item
    if not isinstance(item, Mapping):
        raise ValidationError(
            f"must be a {kind.__name__} or a dict, got {type(item).__name__}", item=index
        )
    known = {field.name for field in fields(kind)}
    unknown = sorted(set(item) - known)
    if unknown:
        raise ValidationError(
            f"unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}",
            item=index,
            field=unknown[0],
        )
    try:
        return kind(**item)
    except TypeError as error:
        raise ValidationError(str(error), item=index) from None


def _columns(spec: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    return [name for name, _ in spec], [kind for _, kind in spec]


def _already_json(value: Any) -> str:
    return str(value)
