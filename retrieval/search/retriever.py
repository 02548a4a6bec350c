"""The hybrid retriever: configuration, and the read pipeline's stages called in order.

``retrieve`` runs each stage once: prepare (the call checked, its query's words, the time it
names, its vector through the hashed cache: :mod:`retrieval.search.prepare`) -> plan (a pure
function of the call, the settings and what is known of the tenant: :mod:`retrieval.search.plan`)
-> read (the plan's ONE statement, rendered from per-source templates by
:mod:`retrieval.search.statement`, run on the read connections: :mod:`retrieval.search.read`)
-> rank (weights, threshold, the conversation lift, limits: :mod:`retrieval.search.rank`)
-> present (neighbours, notes, access counts, diagnostics: :mod:`retrieval.search.present`).
The tenant filter sits inside every CTE. (One exception to one statement: a tenant whose first
documents, decisions or tool calls arrived since the retriever's last call gets a second
statement, once; see :mod:`retrieval.search.knowledge`.)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from retrieval import arguments
from retrieval.arguments import check_tenant
from retrieval.db.config import schema_or_env
from retrieval.db.engine import Database, check_driver
from retrieval.db.read_pool import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_WAIT_SECONDS,
    ITERATIVE_SCAN,
    ReadConnections,
)
from retrieval.embedding.cache import EmbeddingCache
from retrieval.embedding.calibration import calibration_for
from retrieval.embedding.models import Embedder
from retrieval.memory.config import WriteConfig
from retrieval.memory.store import MemoryStore
from retrieval.observability.tracing import Tracing
from retrieval.search.config import Fusion, RetrievalConfig
from retrieval.search.knowledge import TenantKnowledge
from retrieval.search.plan.plan_cache import PLAN_CACHE_MODE, plan_cache_mode
from retrieval.search.plan.read_plan import ef_search, plan_read
from retrieval.search.prepare.call import prepare_call
from retrieval.search.prepare.query_vector import QueryVectors
from retrieval.search.present.access_counts import AccessRecorder
from retrieval.search.present.response import Clock, Presenter, span_attributes
from retrieval.search.rank.rank import rank
from retrieval.search.read.reader import Reader
from retrieval.search.results import RetrievalResponse
from retrieval.search.statement.render import Statements
from retrieval.search.timeline import TimelineEvent, timeline


class HybridRetriever:
    """Finds the most useful context for a query across an agent's memory.

    ``config`` defaults to the environment's (:meth:`RetrievalConfig.from_env`), ``schema`` to
    ``RETRIEVAL_SCHEMA`` (else ``retrieval``) and ``embedder`` to the model of
    ``RETRIEVAL_EMBEDDING_MODEL`` (else the bundled all-MiniLM-L6-v2); ``cache`` (for example a
    store's, see :meth:`from_store`) shares query vectors with the write path. ``background_writes``
    records accesses off the caller's path (see :mod:`retrieval.search.present.access_counts`).
    ``session_settings``
    are PostgreSQL settings for the retriever's connections, beside its own
    (``hnsw.iterative_scan = relaxed_order``, ``hnsw.ef_search``, and
    ``plan_cache_mode = force_custom_plan``: the statement is prepared after a few calls, and
    each call's statement names the plan it runs on, generic only where the generic plan's
    picture of the tenant holds, :mod:`~retrieval.search.plan.plan_cache`). At most
    ``max_connections`` of them are open at once (concurrent calls beyond wait up to
    ``wait_seconds`` for one, then raise :class:`~retrieval.errors.DatabaseError`). Close the
    retriever (or use it as a context manager) to release its connections.

    ``read_engine`` is a read-only copy of the database (a streaming replica): searches and
    timelines read there, while the embedding cache and the access counts go to ``engine``, the
    primary. A replica may not have replayed the latest writes yet; a call with
    ``read_your_writes=True`` reads the primary instead.

    ``tracer_provider`` (OpenTelemetry's) receives a span ``retrieval.retrieve`` per call,
    with a child per stage; default: the global provider, which records nothing unless the
    application set one (see :mod:`retrieval.observability.tracing`).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        schema: str | None = None,
        embedder: Embedder | None = None,
        config: RetrievalConfig | None = None,
        cache: EmbeddingCache | None = None,
        background_writes: bool = True,
        session_settings: Mapping[str, str] | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
        read_engine: Engine | None = None,
        tracer_provider: Any = None,
        memory_kinds: Collection[str] | None = None,
    ) -> None:
        check_driver(engine)
        if read_engine is not None:
            check_driver(read_engine)
        self.engine = engine
        # The kinds a timeline may filter on besides decision and tool_call: the store's.
        self.memory_kinds = (
            frozenset(memory_kinds)
            if memory_kinds is not None
            else WriteConfig.from_env().memory_kinds()
        )
        self.read_engine = read_engine
        self.schema = schema = schema_or_env(schema)
        self.config = RetrievalConfig.from_env() if config is None else config
        self._vectors = QueryVectors.on(engine, schema, cache=cache, embedder=embedder)
        self.cache, self.embedder = self._vectors.cache, self._vectors.cache.embedder
        settings = {**read_settings(self.config), **(session_settings or {})}
        pool = (settings, max_connections, wait_seconds, schema)
        self._connections = _read_connections(engine, *pool)
        # Where searches read: the replica when there is one, else the primary's connections.
        self._reads = (
            self._connections if read_engine is None else _read_connections(read_engine, *pool)
        )
        self._tracing = Tracing(tracer_provider)
        # The stages' state: what is known of tenants (learnt by the read stage, viewed by the
        # plan), each shape's statement, the presenter's statements and access counts.
        self._knowledge = TenantKnowledge()
        self._presence, self._sizes = self._knowledge.presence, self._knowledge.sizes
        self._statements = Statements(schema)
        self._reader = Reader(self._statements, self._knowledge)
        access = AccessRecorder(schema, self._connections.execute, background=background_writes)
        self._presenter = Presenter(schema, access, self._tracing)
        self._access = access
        # The embedding model's relevance scale (its id needs no model load).
        self._calibration = calibration_for(self.embedder.model_id)

    @classmethod
    def from_store(
        cls, store: MemoryStore, *, config: RetrievalConfig | None = None, **options: Any
    ) -> HybridRetriever:
        """A retriever over ``store``'s database sharing its embedder and embedding cache (and
        the memory kinds it accepts)."""
        options.setdefault("memory_kinds", store.limits.kinds)
        return cls(store.engine, schema=store.schema, config=config, cache=store.cache, **options)

    @classmethod
    def from_database(
        cls,
        database: Database,
        *,
        embedder: Embedder | None = None,
        config: RetrievalConfig | None = None,
        **options: Any,
    ) -> HybridRetriever:
        """A retriever on a :class:`~retrieval.db.engine.Database` from
        :func:`retrieval.connect` (reading its replica, ``RETRIEVAL_READ_DATABASE_URL``, if it
        has one)."""
        options.setdefault("read_engine", database.read_engine)
        return cls(
            database.engine,
            schema=database.config.schema,
            embedder=embedder,
            config=config,
            **options,
        )

    def retrieve(
        self,
        query: str,
        *,
        tenant_id: str,
        working_state: Sequence[Mapping[str, Any]] | None = None,
        task_id: str | None = None,
        mode: str = "semantic",
        as_of: datetime | None = None,
        config: RetrievalConfig | None = None,
        entities: Sequence[str] = (),
        fusion: Fusion | None = None,
        limit: int | None = None,
        neighbors: int = 0,
        read_your_writes: bool = False,
        filter: Mapping[str, Any] | None = None,
        namespace: Sequence[str] | None = None,
        keyed: bool = False,
    ) -> RetrievalResponse:
        """The best context for ``query`` in ``tenant_id``'s memory, ranked, with diagnostics.

        ``working_state`` is the caller's current messages (scored, never stored); ``task_id``
        narrows the episodic source to one task; ``mode`` names a filter preset of the config;
        ``as_of`` (aware datetime, default now) is the moment the memory is read as it stood:
        only memories stored by then and live then (not yet retired by a correction, not yet
        expired), decisions and tool calls stored by then, with recency measured from it;
        ``entities`` are entity ids for the entity-overlap signal; ``fusion`` overrides the
        config's fusion of BM25 and vectors (``convex``, ``max``, ``cascade``, ``rrf``);
        ``limit`` is the most results of this call (each source's limit scaled with it, see
        :meth:`RetrievalConfig.with_limit <retrieval.search.config.RetrievalConfig.with_limit>`);
        ``neighbors`` (0 to 20) adds to each memory that belongs to a thread the memories up to
        that many positions before and after it (``metadata["neighbors"]``).
        ``read_your_writes`` reads the primary even when the retriever has a replica, so that
        what this process has just stored is seen (see the class's ``read_engine``).
        ``filter`` keeps the memories and document chunks whose metadata meets it, inside the
        search (a filtered call still gets its full top k): ``{"user": "u1"}`` (the value at the
        key equals it), ``{"score": {"$gte": 3}}``, with ``$eq``, ``$ne``, ``$gt``, ``$gte``,
        ``$lt``, ``$lte``, ``$in``, ``$nin``, ``$all`` (a list holds these), ``$exists``; a dotted
        key names a nested one. Decisions
        and tool calls carry no metadata: a filtered call leaves them out
        (:mod:`retrieval.search.prepare.metadata_filter`). ``namespace`` (a path of names such
        as ``("users", "u1")``) reads the memories in that namespace and in every namespace
        below it, and nothing else (decisions, tool calls and documents lie in none).
        ``keyed`` reads only the memories stored under a key (a key-value store's items, as
        the LangGraph store writes them), inside the search, so they get the whole ``limit``.
        """
        with self._tracing.span("retrieval.retrieve") as call_span:
            clock = Clock()
            call = prepare_call(
                query, tenant_id=tenant_id, config=config, default=self.config,
                working_state=working_state, task_id=task_id, mode=mode, as_of=as_of,
                entities=entities, fusion=fusion, limit=limit, neighbors=neighbors,
                read_your_writes=read_your_writes, filter=filter, namespace=namespace,
                keyed=keyed,
            )  # fmt: skip
            with self._tracing.span("retrieval.embedding"):
                call = self._vectors.with_vector(call)
            clock.mark_prepared()
            reads = self._reads_for(call.read_your_writes)
            with self._tracing.span("retrieval.statement"):
                tenant = self._knowledge.view(call.tenant_id, reads)
                plan = plan_read(call, tenant, self._calibration)
                read = self._reader.read(plan, reads)
            clock.mark_read()
            with self._tracing.span("retrieval.ranking"):
                ranked = rank(plan, read)
            response = self._presenter.present(plan, ranked, read.statements, reads, clock)
            if call_span.recording:
                call_span.set(span_attributes(call.tenant_id, call.neighbors, response))
            return response

    def timeline(
        self,
        tenant_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 50,
        read_your_writes: bool = False,
        as_of: datetime | None = None,
        include_retired: bool = False,
        namespace: Sequence[str] | None = None,
    ) -> list[TimelineEvent]:
        """What happened in ``tenant_id``'s memory between ``since`` and ``until``, newest first.

        ``kinds`` filters memory kinds and the episodic kinds ``decision`` and ``tool_call``;
        ``read_your_writes`` reads the primary even when the retriever has a replica. Memories
        are those live at ``as_of`` (default now; with ``as_of``, the timeline as it stood
        then); ``include_retired`` shows superseded and expired ones too. ``namespace`` keeps
        the memories in it and below it (then no decision or tool call: they lie in none).
        """
        replica = None if arguments.flag("read_your_writes", read_your_writes) else self.read_engine
        return timeline(
            replica or self.engine,
            self.schema,
            tenant_id,
            since=since,
            until=until,
            kinds=kinds,
            limit=limit,
            memory_kinds=self.memory_kinds,
            as_of=as_of,
            include_retired=include_retired,
            namespace=namespace,
        )

    def holds(self, tenant_id: str, *, read_your_writes: bool = False) -> bool:
        """Whether ``tenant_id`` holds anything at all (a memory, live or not, a decision, a
        tool call or a document): what tells a mistyped tenant from one with nothing relevant."""
        tenant_id = check_tenant(tenant_id)
        return self._presenter.holds(tenant_id, self._reads_for(read_your_writes))

    def read_rows(
        self, statement: str, params: Mapping[str, Any], *, read_your_writes: bool = False
    ) -> list[tuple[Any, ...]]:
        """The rows of one of the library's read statements (``%(name)s`` placeholders, the
        tenant among its values as ``tenant_id``) read where the searches read: on the
        retriever's connections to its replica if it has one (the primary with
        ``read_your_writes``), prepared after a few calls, in one round trip. For what an
        integration reads about the results of a search (LangGraph's items' first puts)."""
        return self._reads_for(read_your_writes).execute(statement, params)

    def _reads_for(self, read_your_writes: bool) -> ReadConnections:
        # Where a read goes: the primary's connections when the caller must see its own
        # writes, else the searches' (the replica's, when there is one).
        primary = arguments.flag("read_your_writes", read_your_writes)
        return self._connections if primary else self._reads

    @property
    def max_connections(self) -> int:
        """The most connections this retriever opens at once (its concurrent calls)."""
        return self._connections.max_connections

    def flush(self) -> None:
        """Wait until the access counts of every returned memory are written."""
        self._access.flush()

    def close(self) -> None:
        """Write pending access counts and close the retriever's connections."""
        self._access.close()
        self._connections.close()
        if self._reads is not self._connections:
            self._reads.close()

    def __enter__(self) -> HybridRetriever:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _read_connections(
    engine: Engine,
    settings: Mapping[str, str],
    max_connections: int,
    wait_seconds: float,
    schema: str,
) -> ReadConnections:
    return ReadConnections(
        engine,
        settings=list(settings.items()),
        max_connections=max_connections,
        wait_seconds=wait_seconds,
        schema=schema,
    )


def read_settings(config: RetrievalConfig) -> dict[str, str]:
    """The session settings of the retriever's connections for ``config``: the HNSW scan
    iterates until the tenant's pool is full, ``ef_search`` covers the pool, and an execution
    is planned for its own values unless its statement says otherwise (see
    :class:`HybridRetriever`)."""
    return {
        ITERATIVE_SCAN: "relaxed_order",
        "hnsw.ef_search": ef_search(config),
        PLAN_CACHE_MODE: plan_cache_mode(False),
    }
