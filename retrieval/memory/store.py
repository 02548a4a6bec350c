"""The write path: memories, decisions and tool calls, validated, embedded and copied in.

Every batch is one transaction written with binary ``COPY``, and every row is validated before
that transaction commits (before the ``COPY`` starts, or, for rows that carry their vectors, as
they stream into it): a batch with one bad row lands nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine

from retrieval import arguments
from retrieval.arguments import check_tenant
from retrieval.db.config import schema_or_env
from retrieval.db.engine import Database, check_driver, stored_embedding
from retrieval.embedding.cache import CacheStats, DimensionCheck, EmbeddingCache
from retrieval.embedding.calibration import calibration_for
from retrieval.embedding.models import Embedder, Vectors
from retrieval.errors import ValidationError, translate_database_errors
from retrieval.memory.batch import StoreBatch
from retrieval.memory.config import WriteConfig
from retrieval.memory.episodic_writer import EpisodicWriter
from retrieval.memory.get_and_forget import Lookup
from retrieval.memory.history import memory_history
from retrieval.memory.namespaces import forgotten_namespace, list_namespaces, namespace_ids
from retrieval.memory.records import (
    Decision,
    DecisionInput,
    Forgotten,
    Memory,
    MemoryInput,
    MemoryVersion,
    SimilarMemory,
    StoredIds,
    ToolCall,
    ToolCallInput,
)
from retrieval.memory.similar import similar_memories
from retrieval.memory.turn_context import mixing_of
from retrieval.memory.validation import (
    Limits,
    known_kind,
    valid_decision,
    valid_memory,
    valid_tool_call,
)
from retrieval.memory.writer import Writer
from retrieval.observability.tracing import Tracing

# Expired memories removed per transaction by forget(expired=True).
FORGET_BATCH = 1000


class MemoryStore:
    """Stores an agent's memories, decisions and tool calls in one PostgreSQL schema.

    ``config`` defaults to the environment's (:meth:`WriteConfig.from_env`) and ``schema`` to
    ``RETRIEVAL_SCHEMA`` (else ``retrieval``). ``embedder`` defaults to sentence-transformers
    with ``config.embedding_model`` (the bundled all-MiniLM-L6-v2 unless set); it is loaded on
    first use, and refused if its dimension is not the database's. ``tracer_provider``
    (OpenTelemetry's; default the global one) receives a span per write call (see
    :mod:`retrieval.observability.tracing`).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        schema: str | None = None,
        embedder: Embedder | None = None,
        config: WriteConfig | None = None,
        tracer_provider: Any = None,
    ) -> None:
        check_driver(engine)
        self.engine = engine
        self.schema = schema = schema_or_env(schema)
        self.config = WriteConfig.from_env() if config is None else config
        self.embedder: Embedder = embedder or self.config.embedder()
        stored = stored_embedding(engine, schema)
        self.dim = stored.dim
        self.vector_type = stored.vector_type
        self.cache = EmbeddingCache(
            self.embedder,
            schema,
            lru_entries=self.config.cache_entries,
            before_model_call=DimensionCheck(engine, self.schema, self.embedder),
        )
        self._limits = Limits(
            max_text_chars=self.config.max_text_chars,
            dim=self.dim,
            kinds=self.config.memory_kinds(),
            max_entities=self.config.max_entities,
            max_json_bytes=self.config.max_metadata_bytes,
        )
        self._lookup = Lookup(schema, self.cache, mixing_of(self.config, self.embedder.model_id))
        self._episodic = EpisodicWriter(schema, self._lookup)
        self._writer = Writer(
            schema,
            self.cache,
            self._lookup,
            self.vector_type,
            collapse=self.config.collapse_duplicates,
            lifetime=self.config.lifetime if self.config.kind_lifetimes else None,
        )
        self.tracing = Tracing(tracer_provider)

    @classmethod
    def from_database(
        cls,
        database: Database,
        *,
        embedder: Embedder | None = None,
        config: WriteConfig | None = None,
    ) -> MemoryStore:
        """A store on a :class:`~retrieval.db.engine.Database` from :func:`retrieval.connect`."""
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
        embedding_model: str | None = None,
        thread_id: str | None = None,
        position: int | None = None,
        expires_at: datetime | None = None,
        supersedes: int | Sequence[int] | None = None,
        namespace: Sequence[str] | None = None,
        key: str | None = None,
    ) -> int:
        """Store one memory and return its id (see
        :class:`~retrieval.memory.records.MemoryInput`).

        A copy of a live memory of the tenant (the same kind and text, in NFC with whitespace
        collapsed; a turn: at the same thread and position) is not stored again: its id is
        returned and it is refreshed (``seen_count``, ``last_seen_at``, the larger importance,
        the later expiry). A message (kind ``message``) without a thread is a turn of a
        session inferred from time, never a copy: told again, it is stored again.
        ``supersedes`` names live memories this one corrects: they are retired at its
        ``created_at`` and kept for :meth:`history`. ``expires_at`` ends its life (default:
        its kind's lifetime in the settings, if any; it must be later than ``created_at``, or
        than now when that is not given). ``namespace`` places it in a scope below the tenant (a
        path of names such as ``("users", "u1")``; default: the tenant's top). ``key`` names it
        within its namespace: a live memory of the namespace under the same key is superseded
        by it (as with ``supersedes``), and it is never a copy of another memory.
        """
        item = MemoryInput(
            text=text,
            tenant_id=tenant_id,
            kind=kind,
            metadata=metadata,
            importance=importance,
            created_at=created_at,
            entities=entities,
            embedding=embedding,
            embedding_model=embedding_model,
            thread_id=thread_id,
            position=position,
            expires_at=expires_at,
            supersedes=supersedes,
            namespace=namespace,
            key=key,
        )
        with self._traced("retrieval.remember") as written, self.batch() as batch:
            return written(batch.write_memories([valid_memory(item, self._limits)]))[0]

    def remember_many(self, items: Iterable[MemoryInput | Mapping[str, Any]]) -> StoredIds:
        """Store a batch of memories in one transaction; return their ids in order.

        Items are :class:`MemoryInput` or dicts with the same keys. One bad item refuses the
        whole batch with a :class:`ValidationError` naming it, and nothing is written. The
        result is a list of ids whose ``duplicates`` counts the items that were copies (of a
        live memory, or of an earlier item: see :meth:`remember`).
        """
        with self._traced("retrieval.remember_many") as written, self.batch() as batch:
            return written(batch.remember_many(items))

    @property
    def limits(self) -> Limits:
        """What this store accepts: the longest text and the database's dimension."""
        return self._limits

    def check_embedder(self) -> None:
        """Load the embedder and refuse it if its dimension is not the database's."""
        self.cache.prepare_model()

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
        with self.batch() as batch:
            return batch.write_decisions([valid_decision(item, self._limits)])[0]

    def record_decisions(self, items: Iterable[DecisionInput | Mapping[str, Any]]) -> list[int]:
        """Store a batch of decisions in one transaction; return their ids in order."""
        with self.batch() as batch:
            return batch.record_decisions(items)

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
        with self.batch() as batch:
            return batch.write_tool_calls([valid_tool_call(item, self._limits)], single=True)[0]

    def record_tool_calls(self, items: Iterable[ToolCallInput | Mapping[str, Any]]) -> list[int]:
        """Store a batch of tool calls in one transaction; return their ids in order."""
        with self.batch() as batch:
            return batch.record_tool_calls(items)

    # -- reading and forgetting -------------------------------------------------------------

    def get_memory(self, memory_id: int, *, tenant_id: str) -> Memory | None:
        """The memory ``memory_id`` of ``tenant_id``, or ``None``."""
        found = self.get_memories([arguments.row_id("memory_id", memory_id)], tenant_id=tenant_id)
        return found[0] if found else None

    def get_memories(self, memory_ids: Sequence[int], *, tenant_id: str) -> list[Memory]:
        """The memories of ``tenant_id`` among ``memory_ids``, by id."""
        check_tenant(tenant_id)
        memory_ids = arguments.row_ids("memory_ids", memory_ids)
        with self._transaction() as connection:
            return self._lookup.memories(connection, tenant_id, memory_ids)

    def get_decision(self, decision_id: int, *, tenant_id: str) -> Decision | None:
        """The decision ``decision_id`` of ``tenant_id``, or ``None``."""
        check_tenant(tenant_id)
        decision_id = arguments.row_id("decision_id", decision_id)
        with self._transaction() as connection:
            found = self._lookup.decisions(connection, tenant_id, [decision_id])
        return found[0] if found else None

    def get_tool_call(self, tool_call_id: int, *, tenant_id: str) -> ToolCall | None:
        """The tool call ``tool_call_id`` of ``tenant_id``, or ``None``."""
        check_tenant(tenant_id)
        tool_call_id = arguments.row_id("tool_call_id", tool_call_id)
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
        expired: bool = False,
        namespace: Sequence[str] | None = None,
    ) -> Forgotten:
        """Erase rows of ``tenant_id`` and return what was removed.

        By id (``memory_ids``, ``decision_ids``, ``tool_call_ids``), by task (``task_id``: its
        decisions and their tool calls; stripped of surrounding whitespace, as when it was
        stored), by ``namespace`` (the memories in it and below it, their past versions
        included), the memories that have ``expired`` (in batches of
        :data:`FORGET_BATCH`, each its own transaction), or ``everything`` the tenant has:
        embedding cache, documents, their chunks and BM25 statistics included. A decision's
        tool calls go with it. A forgotten memory's cached vector goes with it (unless a live
        memory of the tenant has the same text), and its words leave the BM25 statistics, in
        the same transaction (docs/privacy.md).
        """
        check_tenant(tenant_id)
        task_id = arguments.optional_name("task_id", task_id)
        everything = arguments.flag("everything", everything)
        expired = arguments.flag("expired", expired)
        memory_ids = arguments.row_ids("memory_ids", memory_ids)
        decision_ids = arguments.row_ids("decision_ids", decision_ids)
        tool_call_ids = arguments.row_ids("tool_call_ids", tool_call_ids)
        scope = forgotten_namespace(namespace)
        chosen = memory_ids or decision_ids or tool_call_ids or task_id or everything or scope
        if not (chosen or expired):
            raise ValidationError(
                "forget needs something to remove: ids, a task_id, a namespace, expired=True "
                "or everything=True"
            )
        forgotten = Forgotten()
        asked = (tuple(memory_ids), tuple(decision_ids), tuple(tool_call_ids))
        if chosen:
            with self._transaction() as connection:
                if scope and not everything:
                    in_scope = namespace_ids(connection, self.schema, tenant_id, scope)
                    memory_ids = sorted(set(memory_ids) | set(in_scope))
                forgotten = self._lookup.forget(
                    connection,
                    tenant_id,
                    memory_ids=memory_ids,
                    decision_ids=decision_ids,
                    tool_call_ids=tool_call_ids,
                    task_id=task_id,
                    everything=everything,
                )
        while expired and not everything:
            with self._transaction() as connection:
                batch = self._lookup.forget_expired(connection, tenant_id, FORGET_BATCH)
            forgotten += batch
            expired = len(batch.memory_ids) == FORGET_BATCH
        if everything:
            self.cache.forget_tenant(tenant_id)
        else:
            self.cache.forget_keys(tenant_id, forgotten.cache_keys)
        if everything:
            return forgotten
        return replace(
            forgotten,
            missing_memory_ids=_missing(asked[0], forgotten.memory_ids),
            missing_decision_ids=_missing(asked[1], forgotten.decision_ids),
            missing_tool_call_ids=_missing(asked[2], forgotten.tool_call_ids),
        )

    def namespaces(
        self,
        *,
        tenant_id: str,
        prefix: Sequence[str] = (),
        suffix: Sequence[str] = (),
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The tenant's namespaces that hold live memories, in order: those that begin with
        ``prefix`` and end with ``suffix`` (``"*"`` stands for any one name), each cut to its
        first ``max_depth`` names (then listed once), a page of ``limit`` from ``offset``."""
        check_tenant(tenant_id)
        with self._transaction() as connection:
            return list_namespaces(
                connection, self.schema, tenant_id, prefix=prefix, suffix=suffix,
                max_depth=max_depth, limit=limit, offset=offset,
            )  # fmt: skip

    def similar(
        self,
        text: str,
        *,
        tenant_id: str,
        kind: str | None = None,
        limit: int = 5,
        threshold: float | None = None,
        exclude: Sequence[int] = (),
        namespace: Sequence[str] | None = None,
    ) -> list[SimilarMemory]:
        """Live memories of ``tenant_id`` close to ``text``: near duplicates for the caller to
        judge (a paraphrase to leave, an older value to supersede), most similar first.

        Those whose cosine similarity to ``text`` is at least ``threshold`` (default: the
        calibrated ``config.similar_threshold``), of ``kind`` and in ``namespace`` (exactly:
        ``()`` the tenant's top) if given, at most ``limit``, none of ``exclude`` (ids). A
        memory retired or expired by now is never shown; one whose correction is dated later
        is, until then (as :meth:`HybridRetriever.retrieve
        <retrieval.search.retriever.HybridRetriever.retrieve>` without ``as_of`` sees it).
        """
        check_tenant(tenant_id)
        limit = arguments.count("limit", limit, maximum=arguments.MAX_SIMILAR)
        kind = None if kind is None else known_kind(kind, self._limits)
        exclude = arguments.row_ids("exclude", exclude)
        scope = None if namespace is None else arguments.namespace("namespace", namespace)
        if threshold is None:
            threshold = calibration_for(self.embedder.model_id).own(
                "similar_threshold", self.config.similar_threshold
            )
        threshold = arguments.unit_number("threshold", threshold)
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("text: give the non-empty text to compare with")
        with self._transaction() as connection:
            return similar_memories(
                connection,
                self.schema,
                self.cache,
                self._lookup,
                text,
                tenant_id=tenant_id,
                kind=kind,
                limit=limit,
                threshold=threshold,
                exclude=exclude,
                namespace=scope,
            )

    def similarity(
        self, text: str, memory_ids: Sequence[int], *, tenant_id: str
    ) -> list[SimilarMemory]:
        """``tenant_id``'s memories among ``memory_ids`` (by id; an id the tenant has no
        memory under is left out), each with the cosine similarity of ``text`` to it: what a
        caller checks before it names them in ``supersedes``. A correction and what it
        corrects score 0.37 or more on the labelled pairs; two unrelated texts, under 0.35
        (the model's ``unrelated_below``, :mod:`retrieval.embedding.calibration`)."""
        check_tenant(tenant_id)
        memory_ids = arguments.row_ids("memory_ids", memory_ids)
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("text: give the non-empty text to compare with")
        with self._transaction() as connection:
            memories = self._lookup.memories(connection, tenant_id, memory_ids)
            if not memories:
                return []
            vector = self.cache.embed(connection, tenant_id, [text], store=False)[0]
        curve = calibration_for(self.embedder.model_id).thresholds.same_fact_curve
        return [
            SimilarMemory(memory, _cosine(memory.embedding, vector), curve) for memory in memories
        ]

    def history(self, memory_id: int, *, tenant_id: str) -> list[MemoryVersion]:
        """The versions of a memory in the order they held, oldest first: the memories it
        superseded and that superseded it (over any number of corrections), each with when it
        was valid (an older memory told again as the correction of a newer one comes after
        it). Empty if the tenant has no memory ``memory_id``."""
        check_tenant(tenant_id)
        memory_id = arguments.row_id("memory_id", memory_id)
        with self._transaction() as connection:
            return memory_history(connection, self.schema, self._lookup, tenant_id, memory_id)

    @contextmanager
    def batch(self) -> Iterator[StoreBatch]:
        """One transaction for several writes: everything in it lands, or nothing does.

        ``with store.batch() as batch:`` then ``batch.remember_many(...)``,
        ``batch.record_decisions(...)``, ``batch.record_tool_calls(...)``.
        """
        with self._transaction() as connection:
            yield StoreBatch(self._writer, self._episodic, self._limits, connection)

    @contextmanager
    def _traced(self, name: str) -> Iterator[Callable[[StoredIds], StoredIds]]:
        # A span around a write of memories; ``written(ids)`` notes what it wrote.
        with self.tracing.span(name) as span:
            if not span.recording:
                yield _as_is
                return
            stats = self.cache.stats
            before = (stats.hits, stats.embedded)

            def written(ids: StoredIds) -> StoredIds:
                span.set(
                    {
                        "retrieval.memories": len(ids),
                        "retrieval.cache_hits": stats.hits - before[0],
                        "retrieval.embedded": stats.embedded - before[1],
                    }
                )
                return ids

            yield written

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        with translate_database_errors(str(self.engine.url)), self.engine.begin() as connection:
            yield connection


def _cosine(a: Vectors, b: Vectors) -> float:
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b)) / norms if norms > 0 else 0.0


def _as_is(ids: StoredIds) -> StoredIds:
    return ids


def _missing(asked: Sequence[int], removed: Sequence[int]) -> tuple[int, ...]:
    # The ids of ``asked`` that were not removed, each once, in the order asked.
    gone = set(removed)
    return tuple(dict.fromkeys(row_id for row_id in asked if row_id not in gone))
