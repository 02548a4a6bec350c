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
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine

from retrieval.db.config import require_schema
from retrieval.db.engine import Database, check_embedding_dim
from retrieval.db.read_pool import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_WAIT_SECONDS,
    ReadConnections,
)
from retrieval.embedding.cache import EmbeddingCache
from retrieval.embedding.calibration import DenseCalibration, calibration_for
from retrieval.embedding.models import Embedder, SentenceTransformerEmbedder, Vectors
from retrieval.errors import ValidationError, translate_database_errors
from retrieval.memory.store import MemoryStore
from retrieval.memory.validation import aware_datetime, check_storable, check_tenant
from retrieval.search import lexical_match, ranking, scoring
from retrieval.search.access_counts import AccessRecorder
from retrieval.search.config import Fusion, RetrievalConfig
from retrieval.search.neighbors import MAX_NEIGHBORS, neighbors_statement, with_neighbors
from retrieval.search.query import clean, expand
from retrieval.search.results import Diagnostics, RetrievalResponse
from retrieval.search.sources.common import SELECT_LIST, Candidate
from retrieval.search.sources.documents import documents_ctes
from retrieval.search.sources.episodic import (
    DECISION,
    MAX_BITS,
    TOOL_CALL,
    EpisodicQuery,
    band_parameters,
    episodic_ctes,
)
from retrieval.search.sources.keyword_bands import Band, keyword_bands
from retrieval.search.sources.presence import (
    DOCUMENTS,
    EPISODIC,
    SourcePresence,
    presence_cte,
    split_presence,
)
from retrieval.search.sources.semantic import SemanticQuery, semantic_ctes
from retrieval.search.sources.working_state import LexicalOption, score_working_state
from retrieval.search.timeline import TimelineEvent, timeline

_HOUR = 3600.0


class HybridRetriever:
    """Finds the most useful context for a query across an agent's memory.

    ``embedder`` defaults to the bundled all-MiniLM-L6-v2; ``cache`` (for example a store's,
    see :meth:`from_store`) shares query vectors with the write path. ``background_writes``
    records accesses off the caller's path (see :mod:`retrieval.search.access_counts`).
    ``session_settings``
    are PostgreSQL settings for the retriever's connections, beside its own
    (``hnsw.iterative_scan = relaxed_order``, ``hnsw.ef_search``, and
    ``plan_cache_mode = force_custom_plan``: the statement is prepared after a few calls, and a
    generic plan, blind to the query's keywords and vector, is slower). At most
    ``max_connections`` of them are open at once (concurrent calls beyond wait up to
    ``wait_seconds`` for one, then raise :class:`~retrieval.errors.DatabaseError`). Close the
    retriever (or use it as a context manager) to release its connections.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        schema: str = "retrieval",
        embedder: Embedder | None = None,
        config: RetrievalConfig | None = None,
        cache: EmbeddingCache | None = None,
        background_writes: bool = True,
        session_settings: Mapping[str, str] | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> None:
        self.engine = engine
        self.schema = require_schema(schema)
        self.config = config or RetrievalConfig()
        if cache is None:
            cache = EmbeddingCache(
                embedder or SentenceTransformerEmbedder(),
                schema,
                before_model_call=self._check_embedder,
            )
        self.cache = cache
        self.embedder = cache.embedder
        self._embedder_checked = False
        settings = read_settings(self.config)
        settings.update(session_settings or {})
        self._connections = ReadConnections(
            engine,
            settings=list(settings.items()),
            max_connections=max_connections,
            wait_seconds=wait_seconds,
            schema=self.schema,
        )
        self._access = AccessRecorder(
            schema, self._connections.execute, background=background_writes
        )
        self._statements: dict[tuple[object, ...], str] = {}
        self._presence = SourcePresence()
        self._neighbors = neighbors_statement(schema)
        # The embedding model's relevance scale (its id needs no model load).
        self._dense = _dense_parameters(calibration_for(self.embedder.model_id))

    @classmethod
    def from_store(
        cls, store: MemoryStore, *, config: RetrievalConfig | None = None, **options: Any
    ) -> HybridRetriever:
        """A retriever over ``store``'s database sharing its embedder and embedding cache."""
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
        :func:`retrieval.connect`."""
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
    ) -> RetrievalResponse:
        """The best context for ``query`` in ``tenant_id``'s memory, ranked, with diagnostics.

        ``working_state`` is the caller's current messages (scored, never stored); ``task_id``
        narrows the episodic source to one task; ``mode`` names a filter preset of the config;
        ``as_of`` (aware datetime, default now) is the time recency is measured from;
        ``entities`` are entity ids for the entity-overlap signal; ``fusion`` overrides the
        config's fusion of BM25 and vectors (``convex``, ``max``, ``cascade``, ``rrf``);
        ``limit`` is the most results of this call (each source's limit scaled with it, see
        :meth:`RetrievalConfig.with_limit <retrieval.search.config.RetrievalConfig.with_limit>`);
        ``neighbors`` (0 to 20) adds to each memory that belongs to a thread the memories up to
        that many positions before and after it (``metadata["neighbors"]``).
        """
        started = time.perf_counter()
        _check_query(query, tenant_id, task_id, as_of, entities)
        _check_call(limit, neighbors)
        config = config or self.config
        if fusion is not None:
            config = replace(config, fusion=fusion)
        if limit is not None:
            config = config.with_limit(limit)
        chosen_mode = config.mode(mode)
        as_of = as_of or datetime.now(UTC)
        # The lexical channels read the query with its expansions (the keywords of the
        # episodic source and the working state too); the vector channels read it as written.
        lexical_query = expand(query, config.query_expansions)
        keywords = scoring.extract_keywords(
            lexical_query,
            min_length=config.keyword_min_length,
            stop_words=config.stop_words,
        )
        semantic = config.semantic.enabled and config.semantic.limit > 0
        kinds = [
            kind
            for kind in (DECISION, TOOL_CALL)
            if (chosen_mode.include_kinds is None or kind in chosen_mode.include_kinds)
            and kind not in chosen_mode.exclude_kinds
        ]
        episodic_on = (
            config.episodic.enabled and config.episodic.limit > 0 and bool(keywords) and bool(kinds)
        )
        documents_on = config.documents.enabled and config.documents.limit > 0
        # A source whose tables held nothing of the tenant's at the last call is left out;
        # the statement's presence rows (one per source probed) say if that changed (see
        # sources.presence).
        probed = [
            source for source, on in ((EPISODIC, episodic_on), (DOCUMENTS, documents_on)) if on
        ]
        episodic = episodic_on and self._presence.may_hold(tenant_id, EPISODIC)
        documents = documents_on and self._presence.may_hold(tenant_id, DOCUMENTS)
        vector, cached = (
            self._query_vector(query, tenant_id) if semantic or documents_on else (None, True)
        )
        embedded = time.perf_counter()

        memory_bm25 = semantic and config.memory_bm25
        semantic_lexical = (
            config.lexical_match if semantic and "semantic" in config.lexical_sources else None
        )
        episodic_lexical = (
            config.lexical_match if episodic_on and "episodic" in config.lexical_sources else None
        )

        def shape(episodic: bool, documents: bool) -> tuple[Any, ...]:
            return (
                semantic,
                chosen_mode if semantic else None,
                config.max_distance is not None,
                bool(entities),
                episodic and DECISION in kinds,
                episodic and TOOL_CALL in kinds,
                task_id is not None,
                documents,
                semantic_lexical,
                episodic_lexical,
                memory_bm25,
                len(keywords) > MAX_BITS,
                tuple(probed),
                self._connections.row_security_active(),
            )

        candidates: list[Candidate] = []
        statements = 0
        if semantic or probed:
            params = _parameters(
                config,
                tenant_id,
                vector,
                keywords,
                as_of,
                task_id,
                entities,
                episodic_pruning=episodic_lexical is None,
            )
            params.update(self._dense)
            if documents_on or memory_bm25:
                params.update(_document_parameters(config, lexical_query))
            if semantic_lexical is not None or episodic_lexical is not None:
                params.update(_lexical_parameters(config, query))
            params.update(_mode_parameters(chosen_mode))
            settings = {"hnsw.ef_search": _ef_search(config)}
            candidates, counts = self._run(shape(episodic, documents), params, settings)
            statements = 1
            self._presence.learn(tenant_id, counts)
            if (not episodic and counts.get(EPISODIC, 0) > 0) or (
                not documents and counts.get(DOCUMENTS, 0) > 0
            ):  # a source left out has its first rows: ask again with every source in
                candidates, _ = self._run(shape(episodic_on, documents_on), params, settings)
                statements = 2
        queried = time.perf_counter()

        scored: dict[str, list[ranking.Scored]] = {}
        if semantic:
            scored["semantic"] = []
        if config.episodic.enabled and config.episodic.limit > 0:
            scored["episodic"] = []
        if documents_on:
            scored["documents"] = []
        weights = {name: config.source(name).weights for name in scored}
        for candidate in candidates:
            source = candidate.source
            scored[source].append(ranking.scored_candidate(candidate, weights[source]))
        if working_state is not None and config.working_state.enabled:
            lexical = (
                LexicalOption(
                    query=query,
                    strategy=config.lexical_match,
                    weights=config.lexical_weights,
                )
                if config.lexical_match is not None and "working_state" in config.lexical_sources
                else None
            )
            scored["working_state"] = [
                ranking.scored_result(result)
                for result in score_working_state(
                    working_state, keywords, config.working_state, lexical=lexical
                )
            ]
        results, per_source = ranking.select(scored, config)
        if neighbors:
            results = with_neighbors(
                results,
                tenant_id=tenant_id,
                neighbors=neighbors,
                statement=self._neighbors,
                execute=self._connections.execute,
            )
        fused = time.perf_counter()

        if config.record_access:
            returned = [r.metadata["id"] for r in results if r.source == "semantic"]
            self._access.record(tenant_id, returned)
        diagnostics = Diagnostics(
            embedding_ms=(embedded - started) * 1000,
            sql_ms=(queried - embedded) * 1000,
            fusion_ms=(fused - queried) * 1000,
            total_ms=(time.perf_counter() - started) * 1000,
            sources=per_source,
            keywords=keywords,
            mode=mode,
            as_of=as_of,
            query_embedding_cached=cached,
            statements=statements,
        )
        return RetrievalResponse(results=tuple(results), diagnostics=diagnostics)

    def timeline(
        self,
        tenant_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 50,
    ) -> list[TimelineEvent]:
        """What happened in ``tenant_id``'s memory between ``since`` and ``until``, newest first.

        ``kinds`` filters memory kinds and the episodic kinds ``decision`` and ``tool_call``.
        """
        return timeline(
            self.engine,
            self.schema,
            tenant_id,
            since=since,
            until=until,
            kinds=kinds,
            limit=limit,
        )

    def flush(self) -> None:
        """Wait until the access counts of every returned memory are written."""
        self._access.flush()

    def close(self) -> None:
        """Write pending access counts and close the retriever's connections."""
        self._access.close()
        self._connections.close()

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

    def _check_embedder(self) -> None:
        if not self._embedder_checked:
            check_embedding_dim(self.engine, self.schema, self.embedder.model_id, self.embedder.dim)
            self._embedder_checked = True

    def _run(
        self, shape: tuple[Any, ...], params: dict[str, Any], settings: Mapping[str, str]
    ) -> tuple[list[Candidate], dict[str, int]]:
        # The statement's candidates, and what its presence rows counted per source.
        rows = self._connections.execute(self._statement(shape), params, settings=settings)
        return split_presence([Candidate(*row) for row in rows])

    def _statement(self, shape: tuple[Any, ...]) -> str:
        statement = self._statements.get(shape)
        if statement is None:
            statement = build_statement(self.schema, *shape)
            self._statements[shape] = statement
        return statement


def read_settings(config: RetrievalConfig) -> dict[str, str]:
    """The session settings of the retriever's connections for ``config``: the HNSW scan
    iterates until the tenant's pool is full, ``ef_search`` covers the pool, and every
    execution is planned for its own values (see :class:`HybridRetriever`)."""
    return {
        "hnsw.iterative_scan": "relaxed_order",
        "hnsw.ef_search": _ef_search(config),
        "plan_cache_mode": "force_custom_plan",
    }


def build_statement(
    schema: str,
    semantic: bool,
    mode: Any,
    max_distance: bool,
    with_entities: bool,
    decisions: bool,
    tool_calls: bool,
    with_task: bool,
    documents: bool = False,
    lexical: str | None = None,
    episodic_lexical: str | None = None,
    memory_bm25: bool = False,
    many_keywords: bool = False,
    presence: tuple[str, ...] = (),
    bound: bool = False,
) -> str:
    """The one statement: a CTE per enabled source, their rows in one ``UNION ALL``, and a
    presence row for each source named in ``presence`` (see
    :mod:`retrieval.search.sources.presence`)."""
    ctes: list[str] = []
    selects: list[str] = []
    if semantic:
        ctes += semantic_ctes(
            schema,
            SemanticQuery(
                mode=mode,
                with_max_distance=max_distance,
                with_entities=with_entities,
                lexical=lexical,
                bm25=memory_bm25,
                bound=bound,
            ),
        )
        selects.append("semantic")
    if decisions or tool_calls:
        episodic, names = episodic_ctes(
            schema,
            EpisodicQuery(
                decisions=decisions,
                tool_calls=tool_calls,
                with_task=with_task,
                lexical=episodic_lexical,
                many_keywords=many_keywords,
                bound=bound,
            ),
        )
        ctes += episodic
        selects += names
    if documents:
        ctes += documents_ctes(schema, gated=max_distance)
        selects.append("documents")
    if presence:
        ctes.append(presence_cte(schema, presence))
        selects.append("source_presence")
    union = "\nUNION ALL\n".join(f"SELECT {SELECT_LIST} FROM {name}" for name in selects)
    return "WITH " + ",\n".join(ctes) + "\n" + union


def _parameters(
    config: RetrievalConfig,
    tenant_id: str,
    vector: Vectors | None,
    keywords: Sequence[str],
    as_of: datetime,
    task_id: str | None,
    entities: Sequence[str],
    *,
    episodic_pruning: bool = True,
) -> dict[str, Any]:
    # The episodic source reads only the postings of rows that can pass the threshold; with a
    # lexical score in its relevance (which keywords do not bound) it reads them all.
    bands = (
        keyword_bands(
            len(keywords),
            relevance_weight=config.episodic.relevance,
            recency_weight=config.episodic.recency,
            threshold=config.threshold("episodic"),
            half_life_seconds=config.episodic.half_life_hours * _HOUR,
            as_of=as_of,
        )
        if episodic_pruning
        else [Band(lists=len(keywords), since=None, until=None)]
    )
    return {
        **band_parameters(bands),
        "tenant_id": tenant_id,
        "as_of": as_of,
        "query_vector": vector,
        "semantic_candidates": config.pool,
        "semantic_half_life": config.semantic.half_life_hours * _HOUR,
        "max_distance": config.max_distance,
        "entity_ids": list(dict.fromkeys(entities)),
        "keywords": list(keywords),
        "patterns": [scoring.like_pattern(keyword) for keyword in keywords],
        "episodic_candidates": config.pool,
        "episodic_half_life": config.episodic.half_life_hours * _HOUR,
        "episodic_relevance": config.episodic.relevance,
        "episodic_recency": config.episodic.recency,
        "task_id": task_id,
    }


def _document_parameters(config: RetrievalConfig, lexical_query: str) -> dict[str, Any]:
    # The BM25 and fusion parameters, shared by the documents and the memories' BM25 channel;
    # ``lexical_query`` is the query with its expansions.
    return {
        "query_text": lexical_query,
        "text_search_config": config.text_search_config,
        "documents_candidates": config.pool,
        "memory_bm25_rows": config.memory_bm25_rows,
        "documents_half_life": config.documents.half_life_hours * _HOUR,
        "bm25_k1": config.bm25_k1,
        "bm25_b": config.bm25_b,
        "bm25_common_share": config.bm25_common_share,
        "bm25_min_coverage": config.bm25_min_coverage,
        "fusion": config.fusion,
        "rrf_k": config.rrf_k,
        "bm25_weight": config.bm25_weight,
        "dense_weight": 1.0 - config.bm25_weight,
        "cascade_threshold": config.cascade_threshold,
    }


def _ef_search(config: RetrievalConfig) -> str:
    # The HNSW search covers the candidate pool (pgvector's default, 40, at least).
    return str(max(config.pool, 40))


def _dense_parameters(calibration: DenseCalibration) -> dict[str, Any]:
    return {
        "dense_zero_squared": calibration.zero_squared,
        "dense_span_squared": calibration.span_squared,
    }


def _lexical_parameters(config: RetrievalConfig, query: str) -> dict[str, Any]:
    weights = config.lexical_weights
    return {
        "lexical_query": clean(query),
        "query_normalized": lexical_match.normalize(query),
        "query_words": list(dict.fromkeys(lexical_match.words(query))),
        "lexical_exact": weights["exact"],
        "lexical_fuzzy": weights["fuzzy"],
        "lexical_tokens": weights["tokens"],
        "lexical_semantic": weights["semantic"],
        "cascade_exact": lexical_match.DEFAULT_THRESHOLDS["exact"],
        "cascade_fuzzy": lexical_match.DEFAULT_THRESHOLDS["fuzzy"],
        "cascade_tokens": lexical_match.DEFAULT_THRESHOLDS["tokens"],
    }


def _mode_parameters(mode: Any) -> dict[str, Any]:
    return {
        "include_kinds": sorted(mode.include_kinds) if mode.include_kinds is not None else None,
        "exclude_kinds": sorted(mode.exclude_kinds),
    }


def _check_call(limit: object, neighbors: object) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValidationError(
            f"limit must be a positive integer (the most results) or None, got {limit!r}",
            field="limit",
        )
    if (
        isinstance(neighbors, bool)
        or not isinstance(neighbors, int)
        or not 0 <= neighbors <= MAX_NEIGHBORS
    ):
        raise ValidationError(
            f"neighbors must be an integer from 0 to {MAX_NEIGHBORS} (turns before and after "
            f"each hit), got {neighbors!r}",
            field="neighbors",
        )


def _check_query(
    query: object,
    tenant_id: object,
    task_id: object,
    as_of: datetime | None,
    entities: Sequence[str],
) -> None:
    if not isinstance(query, str) or not query.strip():
        raise ValidationError(
            f"query is empty ({query!r}): give the text to find context for", field="query"
        )
    check_storable("query", query)
    check_tenant(tenant_id)
    if task_id is not None and (not isinstance(task_id, str) or not task_id.strip()):
        raise ValidationError(
            f"task_id must be a non-empty string or None, got {task_id!r}", field="task_id"
        )
    aware_datetime("as_of", as_of)
    if isinstance(entities, str) or not all(
        isinstance(entity, str) and entity for entity in entities
    ):
        raise ValidationError(
            f"entities must be a list of non-empty entity ids, got {entities!r}",
            field="entities",
        )
    check_storable("task_id", task_id)
    for entity in entities:
        check_storable("entities", entity)
