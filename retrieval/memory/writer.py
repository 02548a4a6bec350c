"""Writing validated rows with binary ``COPY`` on a connection the caller's transaction owns."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection

from retrieval.db.copy_rows import (
    copy_rows,
    encode_jsonb,
    encode_vectors,
    reserve_ids,
)
from retrieval.db.vector_type import VectorType
from retrieval.embedding.cache import EmbeddingCache
from retrieval.embedding.models import Vectors
from retrieval.errors import ValidationError
from retrieval.memory.cached_memories import MEMORY_FIELDS, insert_cached_memories
from retrieval.memory.get_and_forget import Lookup
from retrieval.memory.records import MemoryInput
from retrieval.memory.turn_context import Place, in_context, previous_texts
from retrieval.memory.validation import (
    Limits,
    ValidDecision,
    ValidMemory,
    ValidToolCall,
    checked_embeddings,
    valid_memory,
)

_MEMORY_COLUMNS = (
    *MEMORY_FIELDS,
    ("embedding", "bytea"),
)  # binary vector, see retrieval.db.copy_rows
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
    ("params", "bytea"),  # binary jsonb, see retrieval.db.copy_rows
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
        vector_type: VectorType = "vector",
        turn_context: float = 0.0,
    ) -> None:
        self.schema = schema
        self.cache = cache
        self.lookup = lookup
        self.vector_type = vector_type
        # The previous turn's share of a conversation turn's vector (retrieval.memory.turn_context).
        self.turn_context = turn_context

    def memories(self, connection: Connection, memories: Sequence[ValidMemory]) -> list[int]:
        """Embed (through the cache) and copy ``memories`` and their entity links.

        All new texts of the batch go to the model in one call: its batches are sorted by
        length, so one call pads least. (Overlapping the model with the database was measured
        and lost: on two cores both are CPU-bound; see benchmarks/README.md, ingest-overlap.)
        """
        if not memories:
            return []
        needing = [row for row, memory in enumerate(memories) if memory.embedding is None]
        before = self._previous_turns(connection, memories, needing)
        items = [(memories[row].tenant_id, memories[row].text) for row in needing]
        items += [(memories[row].tenant_id, text) for row, text in before.items()]
        # Turns in context need both vectors in hand (their own and the previous turn's, which
        # another process or store may have cached): their batch reads the cached ones. A batch
        # with none joins the cache table in SQL instead (retrieval.memory.cached_memories).
        plan = self.cache.plan(connection, items, read_stored=bool(before), uncounted=len(before))
        if plan.missing:
            self.cache.prepare_model()
            self.cache.add(plan, plan.missing, self.cache.model([t for _, t in plan.missing]))
        now, ids = reserve_ids(connection, self.schema, "memories", len(memories))
        model_id = self.cache.embedder.model_id
        # Rows whose vector the cache table holds take it there (retrieval.memory.cached_memories);
        # the others are copied with their vectors.
        entry_of = {row: plan.entries[index] for index, row in enumerate(needing)}
        in_table = [row for row in needing if entry_of[row] in plan.stored]
        with_vector = [row for row in range(len(memories)) if entry_of.get(row) not in plan.stored]
        if with_vector:
            previous_of = {
                row: plan.entries[len(needing) + index] for index, row in enumerate(before)
            }

            def vector_of(row: int) -> Vectors:
                if row in previous_of:
                    own, previous = plan.found[entry_of[row]], plan.found[previous_of[row]]
                    return in_context(own, previous, self.turn_context)
                if row in entry_of:
                    return plan.found[entry_of[row]]
                embedding = memories[row].embedding
                assert embedding is not None  # rows without one are in entry_of
                return embedding

            matrix = np.stack([vector_of(row) for row in with_vector])
            rows = (
                (*_memory_fields(memories[row], ids[row], now, model_id), vector)
                for row, vector in zip(
                    with_vector, encode_vectors(matrix, self.vector_type), strict=True
                )
            )
            copy_rows(connection, self.schema, "memories", *_columns(_MEMORY_COLUMNS), rows)
        cached = (
            (*_memory_fields(memories[row], ids[row], now, model_id), entry_of[row][1])
            for row in in_table
        )
        insert_cached_memories(connection, self.schema, cached, len(in_table))
        self.cache.save(connection, plan)
        self._copy_links(
            connection,
            [
                (memory.tenant_id, memory_id, entity)
                for memory, memory_id in zip(memories, ids, strict=True)
                for entity in memory.entities
            ],
        )
        return ids

    def _previous_turns(
        self, connection: Connection, memories: Sequence[ValidMemory], needing: Sequence[int]
    ) -> dict[int, str]:
        """The previous turn's text of each row to embed that is a turn of a thread and has
        one (in the batch or stored), by row; none when turn context is off."""
        if self.turn_context <= 0.0:
            return {}

        def place(memory: ValidMemory) -> Place | None:
            if memory.thread_id is None or memory.position is None:
                return None
            return (memory.tenant_id, memory.thread_id, memory.position)

        batch = {p: m.text for m in memories if (p := place(m)) is not None}
        places = [place(memories[row]) for row in needing]
        found = previous_texts(connection, self.schema, places, batch)
        return {needing[index]: text for index, text in found.items()}

    def memories_streamed(
        self, connection: Connection, items: Sequence[MemoryInput], limits: Limits
    ) -> list[int]:
        """Copy memories that all carry their embedding, validating each as it streams.

        Nothing needs the model, so each row is checked while the server stores the previous
        ones; a bad row aborts the ``COPY`` and the caller's transaction rolls back whole.
        """
        matrix = checked_embeddings(items, limits.dim)
        if matrix is None:  # a bad vector: check row by row to name the first bad item
            checked = [valid_memory(item, limits, index) for index, item in enumerate(items)]
            return self.memories(connection, checked)
        vectors = encode_vectors(matrix, self.vector_type)
        now, ids = reserve_ids(connection, self.schema, "memories", len(items))
        model_id = self.cache.embedder.model_id
        links: list[tuple[str, int, str]] = []

        def rows() -> Iterator[tuple[Any, ...]]:
            for index, (item, memory_id) in enumerate(zip(items, ids, strict=True)):
                memory = valid_memory(item, limits, index, checked_embedding=matrix[index])
                links.extend((memory.tenant_id, memory_id, entity) for entity in memory.entities)
                yield (*_memory_fields(memory, memory_id, now, model_id), vectors[index])

        copy_rows(connection, self.schema, "memories", *_columns(_MEMORY_COLUMNS), rows())
        self._copy_links(connection, links)
        return ids

    def _copy_links(self, connection: Connection, links: list[tuple[str, int, str]]) -> None:
        if links:
            columns = _columns(_ENTITY_COLUMNS)
            copy_rows(connection, self.schema, "memory_entities", *columns, links)

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
                encode_jsonb(c.params_json),
                c.result,
                c.created_at or now,
            )
            for c, i in zip(calls, ids, strict=True)
        )
        copy_rows(connection, self.schema, "tool_calls", *_columns(_TOOL_CALL_COLUMNS), rows)
        return ids

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


def _memory_fields(
    memory: ValidMemory, memory_id: int, now: datetime, model_id: str
) -> tuple[Any, ...]:
    # The values of MEMORY_FIELDS.
    return (
        memory.tenant_id,
        memory_id,
        memory.text,
        memory.kind,
        encode_jsonb(memory.metadata_json),
        memory.importance,
        memory.created_at or now,
        memory.embedding_model or model_id,
        memory.thread_id,
        memory.position,
    )


def _columns(spec: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    return [name for name, _ in spec], [kind for _, kind in spec]
