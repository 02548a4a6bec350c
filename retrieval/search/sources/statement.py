"""The read path's one statement: which CTEs it holds (its shape), and the values it binds.

:func:`build_statement` joins a CTE per enabled source (:mod:`~retrieval.search.sources.semantic`,
:mod:`~retrieval.search.sources.episodic`, :mod:`~retrieval.search.sources.documents`), their
rows in one ``UNION ALL``, and a presence row for each source probed
(:mod:`~retrieval.search.sources.presence`). A :class:`StatementShape` says which; the retriever
builds each shape's statement once and keeps it. :func:`statement_parameters` gives the values
of a call, every one a bound parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from retrieval.embedding.calibration import DenseCalibration
from retrieval.embedding.models import Vectors
from retrieval.memory.kinds import MESSAGE_KIND
from retrieval.search import lexical_match, scoring
from retrieval.search.config import SIGNALS, Mode, RetrievalConfig
from retrieval.search.query import PreparedQuery
from retrieval.search.sources.common import SELECT_LIST
from retrieval.search.sources.context import (
    CONTEXT_COLUMNS,
    NO_CONTEXT,
    statement_context_ctes,
)
from retrieval.search.sources.documents import documents_ctes
from retrieval.search.sources.episodic import EpisodicQuery, band_parameters, episodic_ctes
from retrieval.search.sources.keyword_bands import Band, keyword_bands
from retrieval.search.sources.presence import presence_cte
from retrieval.search.sources.semantic import SemanticQuery, semantic_ctes

_HOUR = 3600.0


@dataclass(frozen=True)
class StatementShape:
    """Which parts the statement holds; equal shapes share one statement text.

    ``semantic`` and ``episodic``: the shape of those sources' CTEs (``None``: left out).
    ``documents``: the documents' CTEs, behind the distance gate when ``gated``. ``presence``:
    the sources whose presence rows are asked for. ``context``: the context turns of the
    semantic candidates (with a semantic source only).
    """

    semantic: SemanticQuery | None
    episodic: EpisodicQuery | None
    documents: bool = False
    gated: bool = True
    presence: tuple[str, ...] = ()
    capped: bool = False  # more query words than max_query_words: the documents read the rarest
    # The turns around the semantic candidates that are turns, read in the same statement
    # (sources.context): its rows then carry two more columns, the hit and the offset.
    context: bool = False


def build_statement(schema: str, shape: StatementShape) -> str:
    """The one statement of ``shape`` over ``schema``'s tables."""
    ctes: list[str] = []
    selects: list[str] = []
    if shape.semantic is not None:
        ctes += semantic_ctes(schema, shape.semantic)
        selects.append("semantic")
    if shape.episodic is not None:
        episodic, names = episodic_ctes(schema, shape.episodic)
        ctes += episodic
        selects += names
    if shape.documents:
        ctes += documents_ctes(schema, gated=shape.gated, capped=shape.capped)
        selects.append("documents")
    if shape.presence:
        ctes.append(presence_cte(schema, shape.presence))
        selects.append("source_presence")
    columns = {name: SELECT_LIST for name in selects}
    if shape.context and shape.semantic is not None:
        ctes += statement_context_ctes(schema, shape.semantic.mode)
        columns = {name: f"{SELECT_LIST}, {NO_CONTEXT}" for name in selects}
        columns["context"] = f"{SELECT_LIST}, {CONTEXT_COLUMNS}"
    union = "\nUNION ALL\n".join(f"SELECT {listed} FROM {name}" for name, listed in columns.items())
    return "WITH " + ",\n".join(ctes) + "\n" + union


@dataclass(frozen=True)
class CallValues:
    """What one call binds besides its config: the tenant, the query and its vector, the time
    recency is measured from, the task and the entities."""

    tenant_id: str
    query: PreparedQuery
    vector: Vectors | None
    as_of: datetime
    task_id: str | None
    entities: Sequence[str]
    mode: Mode
    # The past moment the call asks about (as_of given), else None: now.
    known_at: datetime | None = None


def statement_parameters(
    config: RetrievalConfig,
    shape: StatementShape,
    call: CallValues,
    calibration: DenseCalibration,
) -> dict[str, Any]:
    """Every value the statement of ``shape`` binds for ``call``."""
    # The episodic source reads only the postings of rows that can pass the threshold; with a
    # lexical score in its relevance (which keywords do not bound) it reads them all.
    keywords = call.query.keywords
    read = min(len(keywords), config.max_query_words)  # the rarest, when there are more
    bands = (
        keyword_bands(
            read,
            relevance_weight=config.episodic.relevance,
            recency_weight=config.episodic.recency,
            threshold=config.threshold("episodic"),
            half_life_seconds=config.episodic.half_life_hours * _HOUR,
            as_of=call.as_of,
        )
        if shape.episodic is None or shape.episodic.lexical is None
        else [Band(lists=read, since=None, until=None)]
    )
    params: dict[str, Any] = {
        **band_parameters(bands),
        **semantic_parameters(config, call, calibration),
        "semantic_candidates": config.pool,
        "max_distance": config.max_distance,
        "entity_ids": list(dict.fromkeys(call.entities)),
        "keywords": list(keywords),
        "patterns": [scoring.like_pattern(keyword) for keyword in keywords],
        "episodic_keywords": read,
        "episodic_candidates": config.pool,
        "episodic_half_life": config.episodic.half_life_hours * _HOUR,
        "episodic_relevance": config.episodic.relevance,
        "episodic_recency": config.episodic.recency,
        "task_id": call.task_id,
    }
    semantic, episodic = shape.semantic, shape.episodic
    if shape.context:
        params.update(context_parameters(config))
    if shape.documents or (semantic is not None and semantic.bm25):
        params.update(_bm25_parameters(config, call.query))
    if (semantic is not None and semantic.lexical) or (episodic is not None and episodic.lexical):
        params.update(_lexical_parameters(config, call.query))
    return params


def semantic_parameters(
    config: RetrievalConfig, call: CallValues, calibration: DenseCalibration
) -> dict[str, Any]:
    """The values a memory's signals bind (its dense relevance, recency, the mode's kinds):
    the semantic source's, and the context turns' (:mod:`retrieval.search.sources.context`)."""
    return {
        "tenant_id": call.tenant_id,
        "as_of": call.as_of,
        "known_at": call.known_at,
        "query_vector": call.vector,
        "semantic_half_life": config.semantic.half_life_hours * _HOUR,
        "dense_zero_squared": calibration.zero_squared,
        "dense_span_squared": calibration.span_squared,
        "include_kinds": (
            sorted(call.mode.include_kinds) if call.mode.include_kinds is not None else None
        ),
        "exclude_kinds": sorted(call.mode.exclude_kinds),
    }


def context_parameters(config: RetrievalConfig) -> dict[str, Any]:
    """The values the context turns bind besides a memory's signals
    (:mod:`retrieval.search.sources.context`)."""
    return {
        "context_window": config.context_window,
        "session_gap": timedelta(minutes=config.session_gap_minutes),
        "message_kind": MESSAGE_KIND,
        "untold_sessions": config.session_gap_minutes > 0,
        "context_hits": 2 * config.semantic.limit,
        **{f"weight_{name}": getattr(config.semantic, name) for name in SIGNALS},
    }


def _bm25_parameters(config: RetrievalConfig, query: PreparedQuery) -> dict[str, Any]:
    # The BM25 and fusion parameters, shared by the documents and the memories' BM25 channel;
    # the lexical channels read the query with its expansions.
    return {
        "query_text": query.lexical,
        "text_search_config": config.text_search_config,
        "documents_candidates": config.pool,
        "memory_bm25_rows": config.memory_bm25_rows,
        "max_query_words": config.max_query_words,
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


def _lexical_parameters(config: RetrievalConfig, query: PreparedQuery) -> dict[str, Any]:
    weights = config.lexical_weights
    return {
        "lexical_query": query.cleaned,
        "query_normalized": lexical_match.normalize(query.text),
        "query_words": list(dict.fromkeys(lexical_match.words(query.text))),
        "lexical_exact": weights["exact"],
        "lexical_fuzzy": weights["fuzzy"],
        "lexical_tokens": weights["tokens"],
        "lexical_semantic": weights["semantic"],
        "cascade_exact": lexical_match.DEFAULT_THRESHOLDS["exact"],
        "cascade_fuzzy": lexical_match.DEFAULT_THRESHOLDS["fuzzy"],
        "cascade_tokens": lexical_match.DEFAULT_THRESHOLDS["tokens"],
    }
