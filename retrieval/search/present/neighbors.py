"""The turns around a hit: memories of the same thread within N positions of it.

A memory that carries a thread (``thread_id``, a conversation or session) and a ``position``
in it is one turn of a conversation; an answer often needs the turns next to the one that
matched ("Which one?" ... "The red one."). After ranking, one statement reads, for every
returned memory that has a thread, the memories of its thread whose position is within
``neighbors`` of its own (through the index on tenant, thread and position), and each result's
metadata gets them as ``neighbors``, in position order (the hit itself not among them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from retrieval.db.queries import statement
from retrieval.search.results import RetrievalResult
from retrieval.search.statement.common import live_sql

Execute = Callable[[str, Mapping[str, Any]], list[tuple[Any, ...]]]


def neighbors_statement(schema: str) -> str:
    """The statement of :func:`with_neighbors` for ``schema``."""
    return statement("search.neighbors", schema, live=live_sql("m"))


def with_neighbors(
    results: Sequence[RetrievalResult],
    *,
    tenant_id: str,
    neighbors: int,
    statement: str,
    execute: Execute,
    as_of: datetime | None = None,
    known_at: datetime | None = None,
) -> list[RetrievalResult]:
    """``results`` with ``metadata["neighbors"]`` on each memory that has a thread: the
    memories within ``neighbors`` positions of it in its thread (id, content, kind, position,
    created_at, metadata), in position order, live at ``as_of`` (stored by ``known_at``, a
    past moment asked about). One statement for all of them."""
    hits = [
        result
        for result in results
        if result.source == "semantic"
        and result.metadata.get("thread_id") is not None
        and result.metadata.get("position") is not None
    ]
    if neighbors <= 0 or not hits:
        return list(results)
    rows = execute(
        statement,
        {
            "tenant_id": tenant_id,
            "hit_ids": [hit.metadata["id"] for hit in hits],
            "threads": [hit.metadata["thread_id"] for hit in hits],
            "positions": [hit.metadata["position"] for hit in hits],
            "neighbors": neighbors,
            "as_of": as_of or datetime.now(UTC),
            "known_at": known_at,
        },
    )
    found: dict[int, list[dict[str, Any]]] = {hit.metadata["id"]: [] for hit in hits}
    for hit_id, memory_id, content, kind, position, created_at, metadata in rows:
        found[hit_id].append(
            {
                "id": memory_id,
                "content": content,
                "kind": kind,
                "position": position,
                "created_at": created_at.astimezone(UTC).isoformat(),
                "metadata": json.loads(metadata),
            }
        )
    return [
        replace(result, metadata={**result.metadata, "neighbors": found[result.metadata["id"]]})
        if result.source == "semantic" and result.metadata["id"] in found
        else result
        for result in results
    ]
