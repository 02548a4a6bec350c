"""An agent's context for one turn: retrieved memory plus its working state, never an exception.

:func:`build_context` retrieves for the query, turns the response into chat messages
(:func:`~retrieval.search.context.to_messages`) and measures it. If the database is down, a
statement fails or the embedding model fails, it logs one warning and returns the working state
alone, the failure named in the metrics, so the agent's turn goes on. With
``RETRIEVAL_ENABLED=false`` it returns the working state without touching the database or the
model. Bad arguments (an empty tenant, an unknown mode) still raise: they are the caller's bug,
not an outage.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any, Literal

from retrieval.errors import DatabaseError, EmbeddingError
from retrieval.search.context import to_messages
from retrieval.search.results import RetrievalResponse
from retrieval.search.retriever import HybridRetriever
from retrieval.settings import configurable, from_env, setting

logger = logging.getLogger(__name__)

Status = Literal["retrieved", "disabled", "failed"]
# What an outage raises: the database (down, a statement failing, no connection free in time)
# or the embedding model. Validation errors are not among them.
OUTAGES = (DatabaseError, EmbeddingError)


@configurable
@dataclass(frozen=True)
class ContextConfig:
    """The context builder's switch."""

    enabled: bool = setting(
        True,
        env="RETRIEVAL_ENABLED",
        help="false: build_context returns the working state alone and touches no database "
        "(a switch for an outage or a rollout)",
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ContextConfig:
        """Read ``RETRIEVAL_ENABLED``."""
        return from_env(cls, environ)


@dataclass(frozen=True)
class ContextMetrics:
    """What one turn's retrieval gave: ``status`` (``retrieved``, ``disabled`` or ``failed``),
    results per source, the mean scores of the results (``None`` without results), the time
    it took, and on failure the error's type and message."""

    status: Status
    results_per_source: Mapping[str, int] = field(default_factory=dict)
    mean_final_score: float | None = None
    mean_relevance_score: float | None = None
    mean_recency_score: float | None = None
    total_ms: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (for a log line or a trace)."""
        return {
            "status": self.status,
            "results_per_source": dict(self.results_per_source),
            "mean_final_score": self.mean_final_score,
            "mean_relevance_score": self.mean_relevance_score,
            "mean_recency_score": self.mean_recency_score,
            "total_ms": round(self.total_ms, 3),
            "error": self.error,
        }


@dataclass(frozen=True)
class AgentContext:
    """The messages to send for this turn, the metrics, and the response (``None`` when
    retrieval was disabled or failed)."""

    messages: list[Mapping[str, Any]]
    metrics: ContextMetrics
    response: RetrievalResponse | None = None


def build_context(
    retriever: HybridRetriever,
    query: str,
    working_state: Sequence[Mapping[str, Any]],
    *,
    tenant_id: str,
    config: ContextConfig | None = None,
    **options: Any,
) -> AgentContext:
    """The chat messages for this turn: the retrieved context, best first, then
    ``working_state`` unchanged; on an outage, ``working_state`` alone (one warning logged).

    ``options`` go to :meth:`HybridRetriever.retrieve` (``mode``, ``task_id``, ``limit``,
    ``neighbors``, ...); the working state is scored with the query, as ``retrieve`` does.
    ``config`` defaults to the environment (``RETRIEVAL_ENABLED``), read at each call.
    """
    config = config or ContextConfig.from_env()
    if not config.enabled:
        return _disabled(working_state)
    started = time.perf_counter()
    try:
        response = retriever.retrieve(
            query, tenant_id=tenant_id, working_state=working_state, **options
        )
    except OUTAGES as error:
        return _failed(working_state, error, started)
    return _retrieved(response, working_state, started)


def _disabled(working_state: Sequence[Mapping[str, Any]]) -> AgentContext:
    return AgentContext(messages=list(working_state), metrics=ContextMetrics(status="disabled"))


def _failed(
    working_state: Sequence[Mapping[str, Any]], error: Exception, started: float
) -> AgentContext:
    named = f"{type(error).__name__}: {error}"
    logger.warning("retrieval failed, the turn goes on with its working state alone: %s", named)
    metrics = ContextMetrics(
        status="failed", total_ms=(time.perf_counter() - started) * 1000, error=named
    )
    return AgentContext(messages=list(working_state), metrics=metrics)


def _retrieved(
    response: RetrievalResponse, working_state: Sequence[Mapping[str, Any]], started: float
) -> AgentContext:
    per_source: dict[str, int] = {}
    for result in response:
        per_source[result.source] = per_source.get(result.source, 0) + 1
    results = response.results

    def mean(name: str) -> float | None:
        return fmean(getattr(result, name) for result in results) if results else None

    metrics = ContextMetrics(
        status="retrieved",
        results_per_source=per_source,
        mean_final_score=mean("final_score"),
        mean_relevance_score=mean("relevance_score"),
        mean_recency_score=mean("recency_score"),
        total_ms=(time.perf_counter() - started) * 1000,
    )
    return AgentContext(
        messages=to_messages(response, working_state), metrics=metrics, response=response
    )
