"""A retrieval result as a plain record: what the MCP tools and the framework retrievers return.

Text, source, the three scores, the ids and the date at the top; what a model or a caller can
use beside them (matched keywords, the thread, the user's metadata, neighbours) in ``details``;
the scoring's internals (signals, weights, the channels' ranks) stay in the library's
diagnostics.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from retrieval.search.results import RetrievalResponse, RetrievalResult
from retrieval.search.timeline import TimelineEvent

TOP_LEVEL = ("id", "item", "kind", "created_at", "task_id", "doc_id")
_SCORING_INTERNALS = frozenset(
    {
        "signals",
        "weights",
        "bm25",
        "bm25_rank",
        "bm25_relevance",
        "bm25_complete",
        "dense_rank",
        "dense_relevance",
        "inverse_distance",
        "fusion",
        "coverage",
        "found_by",
        "embedding_model",
        "access_count",
        "last_accessed_at",
    }
)


def result_record(
    result: RetrievalResult, rank: int, *, digits: int | None = None
) -> dict[str, Any]:
    """``result`` (ranked ``rank``, from 1) as a JSON-ready record, its scores rounded to
    ``digits`` decimals (``None``: as computed)."""

    def score(value: float) -> float:
        return value if digits is None else round(value, digits)

    metadata = jsonable(result.metadata)
    record: dict[str, Any] = {
        "rank": rank,
        "source": result.source,
        "content": result.content,
        "final_score": score(result.final_score),
        "relevance_score": score(result.relevance_score),
        "recency_score": score(result.recency_score),
    }
    for key in TOP_LEVEL:
        if key in metadata:
            record[key] = metadata.pop(key)
    record["details"] = {
        key: value
        for key, value in metadata.items()
        if key not in _SCORING_INTERNALS and value not in (None, {}, [])
    }
    return record


def record_key(record: Mapping[str, Any]) -> str:
    """A stable id of a record's row: ``memory:12``, ``decision:3``, ``chunk:doc.md#4``."""
    item = record.get("item") or record["source"]
    return f"{item}:{record.get('id')}"


def jsonable(value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` with dates as ISO strings and tuples as lists: what JSON carries."""
    loaded: dict[str, Any] = json.loads(json.dumps(dict(value), default=str))
    return loaded


def search_record(response: RetrievalResponse) -> dict[str, Any]:
    """A search's results as the MCP search tool returns them."""
    return {
        "results": [
            result_record(result, rank, digits=6) for rank, result in enumerate(response, start=1)
        ],
        "total_ms": round(response.diagnostics.total_ms, 3),
    }


def event_record(event: TimelineEvent) -> dict[str, Any]:
    """A timeline event as the MCP timeline tool returns it."""
    return {
        "source": event.source,
        "item": event.item,
        "id": event.id,
        "kind": event.kind,
        "content": event.content,
        "created_at": event.created_at.isoformat(),
        "details": jsonable(event.details),
    }
