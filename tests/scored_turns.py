"""A candidate of the semantic source scored as the rank stage scores it, for the rank stage's
unit tests: every field but the ones a test varies at a fixed value."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from retrieval.search.candidate import Candidate
from retrieval.search.rank import ranking

WHEN = datetime(2026, 7, 1, tzinfo=UTC)
WEIGHTS = {"relevance": 0.8, "recency": 0.2}


def scored_memory(
    memory_id: int,
    content: str,
    relevance: float,
    *,
    kind: str = "message",
    created_at: datetime = WHEN,
    distance: float = 0.5,
    newer: list[int] | None = None,
) -> ranking.Scored:
    """Memory ``memory_id`` of ``kind`` with ``content`` and ``relevance`` (recency 0.5,
    importance 0.5), scored with :data:`WEIGHTS`."""
    candidate = Candidate(
        source="semantic", item="memory", id=memory_id, content=content, kind=kind,
        created_at=created_at, relevance=relevance, recency=0.5, importance=0.5,
        popularity=0.0, entity=0.0, distance=distance, matched=None, entities=None,
        details=json.dumps({"metadata": {}}), newer=newer,
    )  # fmt: skip
    return ranking.scored_candidate(candidate, WEIGHTS)
