"""The hybrid retriever: one SQL statement for every database source, ranked in Python.

``retrieve`` embeds the query (through the hashed cache), runs ONE statement whose CTEs find
each source's candidates and compute their relevance and recency, scores the caller's working
state in Python, then applies the weights, the threshold, the ranking and the limits
(:mod:`retrieval.search.ranking`). The tenant filter sits inside every CTE. (One exception: a
tenant whose first documents, decisions or tool calls arrived since the retriever's last call
gets a second statement, once; see :mod:`retrieval.search.sources.presence`.)
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine

from retrieval import arguments
from retrieval.arguments import aware_datetime, check_tenant
from retrieval.db.config import schema_or_env
from retrieval.db.engine import Database, check_driver
from retrieval.db.queries import statement
from retrieval.db.read_pool import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_WAIT_SECONDS,
    ReadConnections,
)
from retrieval.db.versions import versions_of
from retrieval.embedding.cache import DimensionCheck, EmbeddingCache
from retrieval.embedding.calibration import calibration_for
from retrieval.embedding.models import Embedder, Vectors
from retrieval.errors import ValidationError, translate_database_errors
from retrieval.memory.config import WriteConfig
from retrieval.memory.store import MemoryStore
from retrieval.observability.tracing import Attributes, Tracing, tenant_hash
from retrieval.search import ranking, scoring
from retrieval.search.access_counts import AccessRecorder
from retrieval.search.config import Fusion, RetrievalConfig
from retrieval.search.context_lift import context_candidates
from retrieval.search.neighbors import MAX_NEIGHBORS, neighbors_statement, with_neighbors
from retrieval.search.query import prepare_query
from retrieval.search.query_time import TimeWindow, query_window
from retrieval.search.results import (
    Diagnostics,
    RetrievalResponse,
    RetrievalResult,
    SourceDiagnostics,
)
from retrieval.search.sources.common import Candidate
from retrieval.search.sources.context import context_statement
from retrieval.search.sources.episodic import DECISION, MAX_BITS, TOOL_CALL, EpisodicQuery
from retrieval.search.sources.exact_read import SIZE_ROWS, TenantSizes
from retrieval.search.sources.presence import (
    DOCUMENTS,
    EPISODIC,
    TURNS,
    SourcePresence,
    split_presence,
)
from retrieval.search.sources.semantic import SemanticQuery
from retrieval.search.sources.statement import (
    CallValues,
    StatementShape,
    build_statement,
    context_parameters,
    semantic_parameters,
    statement_parameters,
)
from retrieval.search.sources.working_state import LexicalOption, score_working_state
from retrieval.search.tenants import unknown_tenant_note
from retrieval.search.timeline import TimelineEvent, timeline


@dataclass(frozen=True)
class _Call:
    """One call, planned: its config, its values, the episodic kinds its mode keeps, and
    which database sources it reads."""

    config: RetrievalConfig
    values: CallValues
    kinds: tuple[str, ...]
    semantic: bool
    episodic: bool
    documents: bool
    window: TimeWindow | None = None  # the time the query names, when time_weight is on

    @property
    def probed(self) -> tuple[str, ...]:
        """The sources the statement's presence rows are asked for (those the call reads)."""
        pairs = ((EPISODIC, self.episodic), (DOCUMENTS, self.documents))
        return tuple(source for source, on in pairs if on)


class HybridRetriever:
    """Finds the most useful context for a query across an agent's memory.

    ``config`` defaults to the environment's (:meth:`RetrievalConfig.from_env`), ``schema`` to
    ``RETRIEVAL_SCHEMA`` (else ``retrieval``) and ``embedder`` to the model of
    ``RETRIEVAL_EMBEDDING_MODEL`` (else the bundled all-MiniLM-L6-v2); ``cache`` (for example a
    store's, see :meth:`from_store`) shares query vectors with the write path. ``background_writes``
    records accesses off the caller's path (see :mod:`retrieval.search.access_counts`).
    ``session_settings``
    are PostgreSQL settings for the retriever's connections, beside its own
    (``hnsw.iterative_scan = relaxed_order``, ``hnsw.ef_search``, and
    ``plan_cache_mode = force_custom_plan``: the statement is prepared after a few calls, and a
    generic plan, blind to the query's keywords and vector, is slower). At most
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
        if cache is None:
            embedder = embedder or WriteConfig.from_env().embedder()
            check = DimensionCheck(engine, self.schema, embedder)
            cache = EmbeddingCache(embedder, schema, before_model_call=check)
        self.cache = cache
        self.embedder = cache.embedder
        settings = read_settings(self.config)
        settings.update(session_settings or {})
        self._connections = ReadConnections(
            engine,
            settings=list(settings.items()),
            max_connections=max_connections,
            wait_seconds=wait_seconds,
            schema=self.schema,
        )
        # Where searches read: the replica when there is one, else the primary's connections.
        self._reads = (
            self._connections
            if read_engine is None
            else ReadConnections(
                read_engine,
                settings=list(settings.items()),
                max_connections=max_connections,
                wait_seconds=wait_seconds,
                schema=self.schema,
            )
        )
        self._access = AccessRecorder(
            schema, self._connections.execute, background=background_writes
        )
        self._statements: dict[StatementShape, str] = {}
        self._presence = SourcePresence()
        self._sizes = TenantSizes()
        self._neighbors = neighbors_statement(schema)
        self._tenant_holds = statement("search.tenant_holds", schema)
        self._scan: bool | None = None  # pgvector's iterative scan, once known
        # The embedding model's relevance scale (its id needs no model load).
        self._calibration = calibration_for(self.embedder.model_id)
        self._tracing = Tracing(tracer_provider)

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
        """
        # One span for the call, and one per stage inside it.
        with self._tracing.span("retrieval.retrieve") as call_span:
            started = time.perf_counter()
            reads = (
                self._connections
                if arguments.flag("read_your_writes", read_your_writes)
                else self._reads
            )
            working_state = arguments.messages("working_state", working_state)
            call = self._plan(
                query, tenant_id, task_id, mode, as_of, config, entities, fusion, limit, neighbors
            )
            with self._tracing.span("retrieval.embedding"):
                vector, cached = self._vector(call)
            embedded = time.perf_counter()
            with self._tracing.span("retrieval.statement"):
                candidates, statements, turns = self._candidates(call, vector, reads)
                candidates, context = self._with_context(call, vector, candidates, turns, reads)
            statements += context
            queried = time.perf_counter()
            with self._tracing.span("retrieval.ranking"):
                results, per_source = self._rank(call, candidates, working_state)
            if neighbors:
                with self._tracing.span("retrieval.neighbors"):
                    results = with_neighbors(
                        results,
                        tenant_id=tenant_id,
                        neighbors=neighbors,
                        statement=self._neighbors,
                        execute=reads.execute,
                        as_of=call.values.as_of,
                        known_at=call.values.known_at,
                    )
            notes: tuple[str, ...] = ()
            if not results:
                statements += 1
                if not self._holds(tenant_id, reads):
                    notes = (unknown_tenant_note(tenant_id),)
            fused = time.perf_counter()
            if call.config.record_access:
                with self._tracing.span("retrieval.access_counts"):
                    returned = [r.metadata["id"] for r in results if r.source == "semantic"]
                    self._access.record(tenant_id, returned)
            diagnostics = Diagnostics(
                embedding_ms=(embedded - started) * 1000,
                sql_ms=(queried - embedded) * 1000,
                fusion_ms=(fused - queried) * 1000,
                total_ms=(time.perf_counter() - started) * 1000,
                sources=per_source,
                keywords=call.values.query.keywords,
                mode=mode,
                as_of=call.values.as_of,
                query_embedding_cached=cached,
                statements=statements,
                notes=notes,
            )
            response = RetrievalResponse(results=tuple(results), diagnostics=diagnostics)
            if call_span.recording:
                call_span.set(_span_attributes(tenant_id, neighbors, response))
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
    ) -> list[TimelineEvent]:
        """What happened in ``tenant_id``'s memory between ``since`` and ``until``, newest first.

        ``kinds`` filters memory kinds and the episodic kinds ``decision`` and ``tool_call``;
        ``read_your_writes`` reads the primary even when the retriever has a replica. Memories
        are those live at ``as_of`` (default now; with ``as_of``, the timeline as it stood
        then); ``include_retired`` shows superseded and expired ones too.
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
        )

    def _iterative_scan(self) -> bool:
        # Whether the database's pgvector has the iterative scan (read once); without it, the
        # connections do not set it (docs/deployment.md).
        if self._scan is None:
            supported = versions_of(self._reads.engine).iterative_scan
            if not supported:
                for pool in {id(p): p for p in (self._connections, self._reads)}.values():
                    pool.settings = tuple(
                        (name, value) for name, value in pool.settings if name != ITERATIVE_SCAN
                    )
            self._scan = supported
        return self._scan

    def holds(self, tenant_id: str, *, read_your_writes: bool = False) -> bool:
        """Whether ``tenant_id`` holds anything at all (a memory, live or not, a decision, a
        tool call or a document): what tells a mistyped tenant from one with nothing relevant."""
        tenant_id = check_tenant(tenant_id)
        self._iterative_scan()  # before the first connection is opened with its settings
        replica = arguments.flag("read_your_writes", read_your_writes)
        reads = self._connections if replica else self._reads
        return self._holds(tenant_id, reads)

    def _holds(self, tenant_id: str, reads: ReadConnections) -> bool:
        rows = reads.execute(self._tenant_holds, {"tenant_id": tenant_id})
        return bool(rows[0][0])

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

    def _query_vector(self, query: str, tenant_id: str) -> tuple[Vectors, bool]:
        vector = self.cache.remembered(tenant_id, query)
        if vector is not None:
            return vector, True
        before = self.cache.stats.embedded
        # A read never writes: the query's vector is looked up in the cache table, and a new
        # one is kept in the in-process LRU only.
        with translate_database_errors(str(self.engine.url)), self.engine.connect() as connection:
            vectors = self.cache.embed(connection, tenant_id, [query], store=False)
        return vectors[0], self.cache.stats.embedded == before

    def _plan(
        self,
        query: str,
        tenant_id: str,
        task_id: str | None,
        mode: str,
        as_of: datetime | None,
        config: RetrievalConfig | None,
        entities: Sequence[str],
        fusion: Fusion | None,
        limit: int | None,
        neighbors: int,
    ) -> _Call:
        # What the call asks for, checked, and which sources it reads.
        if config is not None and not isinstance(config, RetrievalConfig):
            raise ValidationError(
                f"config must be a RetrievalConfig or None, got {type(config).__name__}",
                field="config",
            )
        config = config or self.config
        prepared = prepare_query(query, config)
        checked = _checked_call(tenant_id, task_id, as_of, entities, limit, neighbors)
        if fusion is not None:
            config = replace(config, fusion=fusion)
        if checked.limit is not None:
            config = config.with_limit(checked.limit)
        if not isinstance(mode, str):
            raise ValidationError(
                f"mode must be the name of a mode, got {type(mode).__name__}", field="mode"
            )
        chosen = config.mode(mode)
        kinds = tuple(
            kind
            for kind in (DECISION, TOOL_CALL)
            if (chosen.include_kinds is None or kind in chosen.include_kinds)
            and kind not in chosen.exclude_kinds
        )
        semantic = config.semantic.enabled and config.semantic.limit > 0
        episodic = (
            config.episodic.enabled
            and config.episodic.limit > 0
            and bool(prepared.keywords)
            and bool(kinds)
        )
        moment = as_of or datetime.now(UTC)
        return _Call(
            config=config,
            values=CallValues(
                tenant_id=tenant_id,
                query=prepared,
                vector=None,
                as_of=moment,
                task_id=checked.task_id,
                entities=checked.entities,
                mode=chosen,
                known_at=as_of,
            ),
            kinds=kinds,
            semantic=semantic,
            episodic=episodic,
            documents=config.documents.enabled and config.documents.limit > 0,
            window=query_window(prepared.text, moment) if config.time_weight > 0 else None,
        )

    def _vector(self, call: _Call) -> tuple[Vectors | None, bool]:
        # The query's vector, when a source reads one; whether the cache had it.
        if not (call.semantic or call.documents):
            return None, True
        return self._query_vector(call.values.query.text, call.values.tenant_id)

    def _candidates(
        self, call: _Call, vector: Vectors | None, reads: ReadConnections
    ) -> tuple[list[Candidate], int, list[tuple[Any, ...]] | None]:
        # One statement for every database source; a source whose tables held nothing of the
        # tenant's at the last call is left out, and the statement's presence rows say if that
        # changed (then a second statement asks again with it: see sources.presence). With
        # the turns around the semantic candidates when the tenant's last hits had turns among
        # them (None: not read).
        tenant_id = call.values.tenant_id
        self._iterative_scan()  # known before the statement's shape is chosen
        probed = tuple(
            source for source, on in ((EPISODIC, call.episodic), (DOCUMENTS, call.documents)) if on
        )
        if not (call.semantic or probed):
            return [], 0, None
        values = replace(call.values, vector=vector)
        episodic = call.episodic and self._presence.may_hold(tenant_id, EPISODIC)
        documents = call.documents and self._presence.may_hold(tenant_id, DOCUMENTS)
        context = self._lifts(call) and self._presence.may_hold(tenant_id, TURNS)
        shape = self._shape(call, episodic, documents, context)
        candidates, counts, turns = self._run(call, values, shape, reads)
        self._presence.learn(tenant_id, counts)
        self._sizes.learn(tenant_id, counts)
        if (not episodic and counts.get(EPISODIC, 0) > 0) or (
            not documents and counts.get(DOCUMENTS, 0) > 0
        ):  # a source left out has its first rows: ask again with every source in
            full = self._shape(call, call.episodic, call.documents, context)
            candidates, _, turns = self._run(call, values, full, reads)
            return candidates, 2, turns
        return candidates, 1, turns

    @staticmethod
    def _lifts(call: _Call) -> bool:
        # Whether the call's turns lift their neighbours (context_lift).
        config = call.config
        return call.semantic and config.context_lift > 0.0 and config.context_window > 0

    def _with_context(
        self,
        call: _Call,
        vector: Vectors | None,
        candidates: list[Candidate],
        turns: list[tuple[Any, ...]] | None,
        reads: ReadConnections,
    ) -> tuple[list[Candidate], int]:
        # The turns around the best memories, lifted by their relevance (context_lift); the
        # statements it sent: none when the read's statement brought the turns (``turns``) or
        # no best memory is a turn, else one.
        config = call.config
        semantic = [c for c in candidates if c.source == "semantic"]
        if not semantic or not self._lifts(call):
            return candidates, 0
        weights = config.semantic.weights
        best = sorted(
            semantic, key=lambda c: ranking.rank_key(ranking.scored_candidate(c, weights))
        )
        sent = 0
        asked = False  # whether a leading hit was a turn

        def fetch(
            ids: Sequence[int], threads: Sequence[str | None], positions: Sequence[int | None]
        ) -> Any:
            nonlocal sent, asked
            asked = True
            if turns is not None:  # read with the candidates: the rows of these hits
                chosen = set(ids)
                return sorted((row for row in turns if row[0] in chosen), key=lambda row: row[:3])
            sent += 1
            values = replace(call.values, vector=vector)
            params = semantic_parameters(config, values, self._calibration)
            params |= context_parameters(config)
            found = {"hit_ids": list(ids), "threads": list(threads), "positions": list(positions)}
            return reads.execute(context_statement(self.schema, values.mode), params | found)

        lifted = context_candidates(
            best[: config.semantic.limit],
            {c.id: c for c in semantic},
            lift=config.context_lift,
            fetch=fetch,
            focus=config.context_focus,
            untold_sessions=config.session_gap_minutes > 0,
        )
        # The next statements read the turns in while the tenant's leading hits are turns.
        self._presence.learn(call.values.tenant_id, {TURNS: int(asked)})
        if not lifted:
            return candidates, sent
        kept = [lifted.pop(c.id, c) if c.source == "semantic" else c for c in candidates]
        return kept + list(lifted.values()), sent

    def _rank(
        self,
        call: _Call,
        candidates: Sequence[Candidate],
        working_state: Sequence[Mapping[str, Any]] | None,
    ) -> tuple[list[RetrievalResult], dict[str, SourceDiagnostics]]:
        # Each candidate scored by its source's weights (and, when the query names a time, by
        # how well its date fits it), the working state scored in Python, then the thresholds,
        # the ranking and the limits.
        config = call.config
        scored: dict[str, list[ranking.Scored]] = {}
        if call.semantic:
            scored["semantic"] = []
        if config.episodic.enabled and config.episodic.limit > 0:
            scored["episodic"] = []
        if call.documents:
            scored["documents"] = []
        window = call.window
        weights = {
            name: (
                config.source(name).weights
                if window is None
                else scoring.with_time(config.source(name).weights, config.time_weight)
            )
            for name in scored
        }
        for candidate in candidates:
            source = candidate.source
            extra = None
            if window is not None:
                distance = window.distance_days(candidate.created_at)
                extra = {"time": scoring.time_fit(distance, config.time_half_life_days)}
            scored[source].append(ranking.scored_candidate(candidate, weights[source], extra))
        if working_state is not None and config.working_state.enabled:
            lexical = (
                LexicalOption(
                    query=call.values.query.text,
                    strategy=config.lexical_match,
                    weights=config.lexical_weights,
                )
                if config.lexical_match is not None and "working_state" in config.lexical_sources
                else None
            )
            scored["working_state"] = [
                ranking.scored_result(result)
                for result in score_working_state(
                    working_state, call.values.query.keywords, config.working_state, lexical=lexical
                )
            ]
        return ranking.select(scored, config)

    def _shape(
        self, call: _Call, episodic: bool, documents: bool, context: bool = False
    ) -> StatementShape:
        # The statement of this call, with the episodic and documents CTEs in or out.
        config, values = call.config, call.values
        lexical = config.lexical_match
        bound = self._connections.row_security_active()
        # Whether the tenant is read exactly, from the sizes the retriever last saw; they are
        # asked for again when they are stale (see sources.exact_read).
        readable = (
            call.semantic and config.exact_scan_factor > 0 and not self._connections.distributed()
        )
        sized = readable and self._sizes.stale(values.tenant_id)
        exact = readable and (
            self._sizes.read_exactly(values.tenant_id, config.exact_scan_factor, config.pool)
            # Without the iterative scan (pgvector before 0.8), a filtered graph walk stops at
            # ef_search rows: every tenant but one holding most of the table is read exactly.
            or not (self._scan or self._sizes.holds_most(values.tenant_id))
        )
        # A query of more words than the BM25 channels read: they choose the rarest lexemes (a
        # word gives one lexeme, or a few for a compound such as "read-only").
        many_words = values.query.words > config.max_query_words
        return StatementShape(
            semantic=SemanticQuery(
                mode=values.mode,
                with_max_distance=config.max_distance is not None,
                with_entities=bool(values.entities),
                lexical=lexical if "semantic" in config.lexical_sources else None,
                bm25=config.memory_bm25,
                bound=bound,
                exact=exact,
                capped=many_words,
            )
            if call.semantic
            else None,
            episodic=EpisodicQuery(
                decisions=DECISION in call.kinds,
                tool_calls=TOOL_CALL in call.kinds,
                with_task=values.task_id is not None,
                lexical=lexical if "episodic" in config.lexical_sources else None,
                many_keywords=min(len(values.query.keywords), config.max_query_words) > MAX_BITS,
                bound=bound,
                capped=len(values.query.keywords) > config.max_query_words,
            )
            if episodic
            else None,
            documents=documents,
            gated=config.max_distance is not None,
            capped=many_words,
            presence=call.probed + (SIZE_ROWS if sized else ()),
            context=context,
        )

    def _run(
        self, call: _Call, values: CallValues, shape: StatementShape, reads: ReadConnections
    ) -> tuple[list[Candidate], dict[str, int], list[tuple[Any, ...]] | None]:
        # The statement's candidates, what its presence rows counted per source, and the
        # context turns' rows (hit, offset, then a candidate's columns) when it read them.
        params = statement_parameters(call.config, shape, values, self._calibration)
        settings = {"hnsw.ef_search": _ef_search(call.config)}
        rows = reads.execute(self._statement(shape), params, settings=settings)
        if not shape.context:
            return (*split_presence([Candidate(*row) for row in rows]), None)
        read: list[Candidate] = []
        turns: list[tuple[Any, ...]] = []
        for *columns, hit_id, offset in rows:
            if hit_id is None:
                read.append(Candidate(*columns))
            else:
                turns.append((hit_id, offset, *columns))
        return (*split_presence(read), turns)

    def _statement(self, shape: StatementShape) -> str:
        statement = self._statements.get(shape)
        if statement is None:
            statement = build_statement(self.schema, shape)
            self._statements[shape] = statement
        return statement


def _span_attributes(tenant_id: str, neighbors: int, response: RetrievalResponse) -> Attributes:
    # What retrieve()'s span says of a call: never its text, its tenant only as a hash.
    diagnostics = response.diagnostics
    sources = diagnostics.sources
    return {
        "retrieval.tenant.hash": tenant_hash(tenant_id),
        "retrieval.mode": diagnostics.mode,
        "retrieval.sources": tuple(sources),
        "retrieval.candidates": sum(source.candidates for source in sources.values()),
        "retrieval.results": len(response),
        "retrieval.statements": diagnostics.statements,
        "retrieval.query_embedding_cached": diagnostics.query_embedding_cached,
        "retrieval.neighbors": neighbors,
    }


ITERATIVE_SCAN = "hnsw.iterative_scan"


def read_settings(config: RetrievalConfig) -> dict[str, str]:
    """The session settings of the retriever's connections for ``config``: the HNSW scan
    iterates until the tenant's pool is full, ``ef_search`` covers the pool, and every
    execution is planned for its own values (see :class:`HybridRetriever`)."""
    return {
        ITERATIVE_SCAN: "relaxed_order",
        "hnsw.ef_search": _ef_search(config),
        "plan_cache_mode": "force_custom_plan",
    }


def _ef_search(config: RetrievalConfig) -> str:
    # The HNSW search keeps ef_search candidates, and at least the candidate pool (pgvector
    # takes at most 1,000).
    return str(min(max(config.pool, config.ef_search), arguments.MAX_RESULTS))


@dataclass(frozen=True)
class _Arguments:
    """A call's arguments, checked and normalized (names stripped, entities a tuple)."""

    task_id: str | None
    entities: tuple[str, ...]
    limit: int | None


def _checked_call(
    tenant_id: object,
    task_id: object,
    as_of: datetime | None,
    entities: object,
    limit: object,
    neighbors: object,
) -> _Arguments:
    check_tenant(tenant_id)
    aware_datetime("as_of", as_of)
    if (
        isinstance(neighbors, bool)
        or not isinstance(neighbors, int)
        or not 0 <= neighbors <= MAX_NEIGHBORS
    ):
        raise ValidationError(
            f"neighbors must be an integer from 0 to {MAX_NEIGHBORS} (turns before and after "
            f"each hit), got {neighbors!r:.40}",
            field="neighbors",
        )
    return _Arguments(
        task_id=arguments.optional_name("task_id", task_id),
        entities=arguments.names("entities", entities),
        limit=arguments.optional_count("limit", limit, maximum=arguments.MAX_RESULTS),
    )
