"""Python's half of the scoring contract: weights, threshold, ranking and limits.

SQL hands over candidates with their relevance and recency (and the optional signals); here
``final = sum(weight * signal)`` with the source's weights, then ``final >= min_final_score``,
then a deterministic ranking, then the per-source and total limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC
from typing import Any

from retrieval import scoring
from retrieval.config import RetrievalConfig
from retrieval.results import SOURCES, RetrievalResult, SourceDiagnostics
from retrieval.sources.common import Candidate


def to_result(candidate: Candidate, weights: Mapping[str, float]) -> RetrievalResult:
    """The result of a database candidate, its final score from ``weights``."""
    signals = candidate.signals
    final = scoring.weighted_sum(signals, weights)
    metadata: dict[str, Any] = {
        "id": candidate.id,
        "item": candidate.item,
        "kind": candidate.kind,
        "created_at": candidate.created_at.astimezone(UTC).isoformat(),
        "signals": signals,
        "weights": dict(weights),
    }
    if candidate.distance is not None:
        metadata["distance"] = candidate.distance
    if candidate.matched is not None:
        metadata["matched_keywords"] = list(candidate.matched)
    if candidate.entities is not None:
        metadata["matched_entities"] = list(candidate.entities)
    metadata.update(candidate.details)
    return RetrievalResult(
        content=candidate.content,
        source=candidate.source,
        relevance_score=candidate.relevance,
        recency_score=candidate.recency,
        final_score=final,
        metadata=metadata,
    )


def rank_key(result: RetrievalResult) -> tuple[float, float, float, int, str, int]:
    """Best first: final, then relevance, then recency, then source, item and id (stable)."""
    identity = result.metadata.get("id", result.metadata.get("position", 0))
    return (
        -result.final_score,
        -result.relevance_score,
        -result.recency_score,
        SOURCES.index(result.source),
        str(result.metadata.get("item", "")),
        int(identity) if isinstance(identity, int) else 0,
    )


def select(
    scored: Mapping[str, Sequence[RetrievalResult]], config: RetrievalConfig
) -> tuple[list[RetrievalResult], dict[str, SourceDiagnostics]]:
    """Apply the threshold and the limits to each source's scored results; rank them all.

    Returns the results best first and, per source, what was scored, kept and returned.
    """
    chosen: list[RetrievalResult] = []
    kept_count: dict[str, int] = {}
    for name, results in scored.items():
        kept = sorted((r for r in results if r.final_score >= config.min_final_score), key=rank_key)
        kept_count[name] = len(kept)
        chosen.extend(kept[: config.source(name).limit])
    final = sorted(chosen, key=rank_key)[: config.total_limit]
    returned = {name: 0 for name in scored}
    for result in final:
        returned[result.source] += 1
    diagnostics = {
        name: SourceDiagnostics(
            candidates=len(results),
            kept=kept_count[name],
            returned=returned[name],
            mean_scores=_means(results),
        )
        for name, results in scored.items()
    }
    return final, diagnostics


def _means(results: Iterable[RetrievalResult]) -> dict[str, float]:
    items = list(results)
    if not items:
        return {}
    count = len(items)
    return {
        "relevance": sum(r.relevance_score for r in items) / count,
        "recency": sum(r.recency_score for r in items) / count,
        "final": sum(r.final_score for r in items) / count,
    }
