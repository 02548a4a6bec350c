"""What retrieval returns: results whose scores are in [0, 1] and carry their evidence."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

SOURCES = ("working_state", "semantic", "episodic", "documents")


@dataclass(frozen=True)
class RetrievalResult:
    """One piece of context: its text, where it came from, and why it ranks where it does.

    Every score is in [0, 1], higher is better; ``final_score`` combines the others with the
    source's weights. ``metadata`` holds the evidence (raw distance, matched keywords, ids,
    timestamps). An out-of-range score raises ``ValueError``.
    """

    content: str
    source: str
    relevance_score: float
    recency_score: float
    final_score: float
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source {self.source!r} is not one of {', '.join(SOURCES)}")
        for name in ("relevance_score", "recency_score", "final_score"):
            check_score(name, getattr(self, name))


def check_score(name: str, value: object) -> None:
    """A ``ValueError`` naming ``name`` unless ``value`` is a number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}={value!r} is outside [0, 1]")


@dataclass(frozen=True)
class SourceDiagnostics:
    """What one source did in one call.

    ``candidates`` were scored, ``kept`` passed the threshold, ``returned`` survived the limits.
    ``mean_scores`` averages each score (relevance, recency, final) over the candidates.
    """

    candidates: int
    kept: int
    returned: int
    mean_scores: Mapping[str, float]


@dataclass(frozen=True)
class Diagnostics:
    """Where the time of one call went and what each source found.

    Milliseconds: ``embedding_ms`` (query vector, from the cache or the model), ``sql_ms`` (the
    one statement, round trip included), ``fusion_ms`` (weights, threshold, ranking in Python),
    ``total_ms``. ``statements`` is the number of SQL statements the call ran: 0 or 1, or 2
    on the first call after a tenant that held no documents, or no decisions and tool calls,
    got some, or whose candidates held no two facts that may be versions of one another found
    such a pair (see :mod:`retrieval.search.knowledge`), one more for the turns around a
    hit of a conversation when the statement did not read them (a tenant's first turns), and
    one more when nothing was found (does the tenant hold anything?).
    ``notes`` says what the caller should know about an empty answer: a tenant that holds
    nothing at all is named (a mistyped tenant id reads otherwise as "nothing relevant").
    """

    embedding_ms: float
    sql_ms: float
    fusion_ms: float
    total_ms: float
    sources: Mapping[str, SourceDiagnostics]
    keywords: tuple[str, ...]
    mode: str
    as_of: datetime
    query_embedding_cached: bool
    statements: int
    # What the caller should know about an empty answer (a tenant that holds nothing).
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view of the diagnostics."""
        return {
            "embedding_ms": round(self.embedding_ms, 3),
            "sql_ms": round(self.sql_ms, 3),
            "fusion_ms": round(self.fusion_ms, 3),
            "total_ms": round(self.total_ms, 3),
            "statements": self.statements,
            "notes": list(self.notes),
            "keywords": list(self.keywords),
            "mode": self.mode,
            "as_of": self.as_of.isoformat(),
            "query_embedding_cached": self.query_embedding_cached,
            "sources": {
                name: {
                    "candidates": source.candidates,
                    "kept": source.kept,
                    "returned": source.returned,
                    "mean_scores": {k: round(v, 6) for k, v in source.mean_scores.items()},
                }
                for name, source in self.sources.items()
            },
        }


@dataclass(frozen=True)
class RetrievalResponse:
    """The ranked results of one call, best first, and its diagnostics."""

    results: tuple[RetrievalResult, ...]
    diagnostics: Diagnostics

    def __iter__(self) -> Iterator[RetrievalResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, index: int) -> RetrievalResult:
        return self.results[index]
