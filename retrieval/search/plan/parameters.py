"""The values a read binds: every one a bound parameter of the statement, named as it names them.

:func:`statement_parameters` gives the values of a call for its statement's shape; the plan
(:mod:`retrieval.search.plan.read_plan`) keeps them with the shape.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from retrieval.embedding.calibration import DenseCalibration
from retrieval.memory.kinds import MESSAGE_KIND
from retrieval.search import lexical_match, scoring
from retrieval.search.config import SIGNALS, RetrievalConfig
from retrieval.search.plan.keyword_bands import Band, keyword_bands
from retrieval.search.plan.shape import EpisodicQuery, StatementShape
from retrieval.search.prepare.call import PreparedCall
from retrieval.search.prepare.query import PreparedQuery

_HOUR = 3600.0
# The semantic source's most relevant candidates whose newer versions are looked for: this many
# times what it returns (a version further down does not reach the results).
VERSION_CANDIDATES = 2


def statement_parameters(
    config: RetrievalConfig,
    shape: StatementShape,
    call: PreparedCall,
    calibration: DenseCalibration,
) -> dict[str, Any]:
    """Every value the statement of ``shape`` binds for ``call``: only those of the parts
    it holds."""
    semantic, episodic = shape.semantic, shape.episodic
    thresholds = calibration.thresholds
    gate = (
        None
        if config.max_distance is None
        else calibration.own("max_distance", config.max_distance)
    )
    params: dict[str, Any] = {
        "tenant_id": call.tenant_id,
        "as_of": call.as_of,
        "known_at": call.known_at,
    }
    if semantic is not None:
        params |= semantic_parameters(config, call, calibration)
        params |= {
            "semantic_candidates": config.pool,
            "max_distance": gate,
            "entity_ids": list(dict.fromkeys(call.entities)),
        }
        if semantic.with_max_distance:
            params["fallback_results"] = config.fallback_results
        if semantic.versions:
            params["version_similarity"] = calibration.own(
                "version_similarity", config.version_similarity
            )
            params["version_shared_words"] = config.version_shared_words
            params["version_words_similarity"] = thresholds.version_words_similarity
            params["update_similarity"] = thresholds.update_similarity
            params["version_candidates"] = VERSION_CANDIDATES * config.semantic.limit
    if episodic is not None:
        params |= _episodic_parameters(config, episodic, call)
    if shape.documents:
        params |= {
            "query_vector": call.vector,
            "max_distance": gate,
            "dense_zero_squared": calibration.zero_squared,
            "dense_span_squared": calibration.span_squared,
        }
    if shape.context:
        params |= context_parameters(config)
    if call.metadata_filter is not None:
        params |= call.metadata_filter.parameters()
    if call.namespace:
        params["namespace"] = list(call.namespace)
    if shape.documents or (semantic is not None and semantic.bm25):
        params |= _bm25_parameters(config, call.query)
    if (semantic is not None and semantic.lexical) or (episodic is not None and episodic.lexical):
        params |= _lexical_parameters(config, call.query)
    return params


# A decision or tool call matching several of a query's keywords shares more than a word with
# it: two, or a third of a long query's (docs/decisions/0023).
SEVERAL_KEYWORDS = 2
SEVERAL_SHARE = 1 / 3


def min_keyword_hits(keywords: int, share: float) -> int:
    """The keywords of ``keywords`` a decision or tool call must match: ``share`` of them,
    rounded up, at least one, and never more than several (:data:`SEVERAL_KEYWORDS`, or a
    third of a long query's): "why does the nightly build fail with a flaky test?" is answered
    by "Quarantine the flaky payment test"."""
    several = max(SEVERAL_KEYWORDS, math.ceil(SEVERAL_SHARE * keywords - 1e-9))
    return max(1, min(math.ceil(share * keywords - 1e-9), several))


def _episodic_parameters(
    config: RetrievalConfig, episodic: EpisodicQuery, call: PreparedCall
) -> dict[str, Any]:
    # The episodic source reads only the postings of rows that can pass the threshold; with a
    # lexical score in its relevance (which keywords do not bound) it reads them all.
    keywords = call.query.keywords
    read = min(len(keywords), config.max_query_words)  # the rarest, when there are more
    min_hits = min_keyword_hits(read, config.episodic_min_keyword_share)
    bands = (
        keyword_bands(
            read,
            relevance_weight=config.episodic.relevance,
            recency_weight=config.episodic.recency,
            threshold=config.threshold("episodic"),
            half_life_seconds=config.episodic.half_life_hours * _HOUR,
            as_of=call.as_of,
            min_hits=min_hits,
        )
        if episodic.lexical is None
        else [Band(lists=read, since=None, until=None)]
    )
    return {
        **band_parameters(bands),
        "keywords": list(keywords),
        "patterns": [scoring.like_pattern(keyword) for keyword in keywords],
        "episodic_keywords": read,
        "episodic_min_hits": min_hits,
        "episodic_candidates": config.pool,
        "episodic_half_life": config.episodic.half_life_hours * _HOUR,
        "episodic_relevance": config.episodic.relevance,
        "episodic_recency": config.episodic.recency,
        "task_id": call.task_id,
    }


def semantic_parameters(
    config: RetrievalConfig, call: PreparedCall, calibration: DenseCalibration
) -> dict[str, Any]:
    """The values a memory's signals bind (its dense relevance, recency, the mode's kinds):
    the semantic source's, and the context turns' (:mod:`retrieval.search.statement.context`)."""
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
    (:mod:`retrieval.search.statement.context`)."""
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


def band_parameters(bands: list[Band]) -> dict[str, list[object]]:
    """The bound parameters of the bands the episodic source reads (see :func:`keyword_bands`)."""
    return {
        "episodic_band_lists": [band.lists for band in bands],
        "episodic_band_since": [band.since for band in bands],
        "episodic_band_until": [band.until for band in bands],
    }
