"""The values a read binds that more than one source shares: every one a bound parameter of the
statement, named as it names them.

Each source binds its own (``parameters`` of its :class:`~retrieval.search.plan.source.PlanSource`,
in :mod:`retrieval.search.sources`) and takes the groups it shares from here: the call's
tenant, times and scope (:func:`call_parameters`), the evidence gate, BM25 and its fusion
(:func:`bm25_parameters`), the lexical match (:func:`lexical_parameters`), the context turns
(:func:`context_parameters`). The plan (:mod:`retrieval.search.plan.read_plan`) joins them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from retrieval.embedding.calibration import DenseCalibration
from retrieval.memory.kinds import MESSAGE_KIND
from retrieval.search import lexical_match
from retrieval.search.config import SIGNALS, RetrievalConfig
from retrieval.search.prepare.call import PreparedCall
from retrieval.search.prepare.query import PreparedQuery

HOUR = 3600.0


def call_parameters(call: PreparedCall) -> dict[str, Any]:
    """The values every statement binds: the tenant, the times it is read as of, and the
    call's metadata filter and namespace when it has them."""
    params: dict[str, Any] = {
        "tenant_id": call.tenant_id,
        "as_of": call.as_of,
        "known_at": call.known_at,
    }
    if call.metadata_filter is not None:
        params |= call.metadata_filter.parameters()
    if call.namespace:
        params["namespace"] = list(call.namespace)
    return params


def dense_parameters(call: PreparedCall, calibration: DenseCalibration) -> dict[str, Any]:
    """The values of a dense channel (memories, chunks): the query's vector, the model's
    calibrated relevance span, and the evidence gate ``max_distance`` in the model's own
    distances (None: off)."""
    config = call.config
    return {
        "query_vector": call.vector,
        "dense_zero_squared": calibration.zero_squared,
        "dense_span_squared": calibration.span_squared,
        "max_distance": (
            None
            if config.max_distance is None
            else calibration.own("max_distance", config.max_distance)
        ),
    }


def context_parameters(config: RetrievalConfig) -> dict[str, Any]:
    """The values the context turns bind besides a memory's signals
    (:mod:`retrieval.search.statement.context`)."""
    return {
        "context_window": config.context_window,
        "context_lift": config.context_lift,
        "session_gap": timedelta(minutes=config.session_gap_minutes),
        "message_kind": MESSAGE_KIND,
        "untold_sessions": config.session_gap_minutes > 0,
        "context_hits": config.semantic.limit,
        **{f"weight_{name}": getattr(config.semantic, name) for name in SIGNALS},
    }


def bm25_parameters(config: RetrievalConfig, query: PreparedQuery) -> dict[str, Any]:
    """The BM25 and fusion values, shared by the documents and the memories' BM25 channel; the
    lexical channels read the query with its expansions."""
    return {
        "query_text": query.lexical,
        "text_search_config": config.text_search_config,
        "memory_bm25_rows": config.memory_bm25_rows,
        "max_query_words": config.max_query_words,
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


def lexical_parameters(config: RetrievalConfig, query: PreparedQuery) -> dict[str, Any]:
    """The values of the lexical match of the whole query (memories, decisions, tool calls)."""
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
