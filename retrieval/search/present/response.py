"""The present stage: the ranked results as the caller gets them.

The turns around each hit (``neighbors``), a note when an empty answer comes from a tenant that
holds nothing at all, the returned memories' access counts (written off the caller's path by
default), the diagnostics, and what the call's span says.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from retrieval.db.queries import statement
from retrieval.db.read_pool import ReadConnections
from retrieval.observability.tracing import Attributes, Tracing, tenant_hash
from retrieval.search.plan.read_plan import ReadPlan
from retrieval.search.present.access_counts import AccessRecorder
from retrieval.search.present.neighbors import neighbors_statement, with_neighbors
from retrieval.search.present.tenants import unknown_tenant_note
from retrieval.search.results import (
    Diagnostics,
    RetrievalResponse,
    RetrievalResult,
    SourceDiagnostics,
)


@dataclass
class Clock:
    """When a call's stages ended (``time.perf_counter``), for its diagnostics."""

    started: float = field(default_factory=time.perf_counter)
    prepared: float = 0.0  # the query's vector in hand
    read: float = 0.0  # the statement's rows decoded

    def mark_prepared(self) -> None:
        self.prepared = time.perf_counter()

    def mark_read(self) -> None:
        self.read = time.perf_counter()


class Presenter:
    """Presents the calls of one retriever: its neighbours' and tenants' statements, its
    access counts and its spans."""

    def __init__(self, schema: str, access: AccessRecorder, tracing: Tracing) -> None:
        self._neighbors = neighbors_statement(schema)
        self._tenant_holds = statement("search.tenant_holds", schema)
        self._access = access
        self._tracing = tracing

    def holds(self, tenant_id: str, reads: ReadConnections) -> bool:
        """Whether ``tenant_id`` holds anything at all (one statement of four indexed probes)."""
        rows = reads.execute(self._tenant_holds, {"tenant_id": tenant_id})
        return bool(rows[0][0])

    def present(
        self,
        plan: ReadPlan,
        ranked: tuple[list[RetrievalResult], dict[str, SourceDiagnostics]],
        statements: int,
        reads: ReadConnections,
        clock: Clock,
    ) -> RetrievalResponse:
        """The response of ``plan``'s call from its ranked results."""
        call = plan.call
        results, per_source = ranked
        if call.neighbors:
            with self._tracing.span("retrieval.neighbors"):
                results = with_neighbors(
                    results,
                    tenant_id=call.tenant_id,
                    neighbors=call.neighbors,
                    statement=self._neighbors,
                    execute=reads.execute,
                    as_of=call.as_of,
                    known_at=call.known_at,
                )
        notes: tuple[str, ...] = ()
        if not results:
            statements += 1
            if not self.holds(call.tenant_id, reads):
                notes = (unknown_tenant_note(call.tenant_id),)
        ranked_at = time.perf_counter()
        if call.config.record_access:
            with self._tracing.span("retrieval.access_counts"):
                returned = [r.metadata["id"] for r in results if r.source == "semantic"]
                self._access.record(call.tenant_id, returned)
        diagnostics = Diagnostics(
            embedding_ms=(clock.prepared - clock.started) * 1000,
            sql_ms=(clock.read - clock.prepared) * 1000,
            fusion_ms=(ranked_at - clock.read) * 1000,
            total_ms=(time.perf_counter() - clock.started) * 1000,
            sources=per_source,
            keywords=call.query.keywords,
            mode=call.mode_name,
            as_of=call.as_of,
            query_embedding_cached=call.vector_cached,
            statements=statements,
            notes=notes,
        )
        return RetrievalResponse(results=tuple(results), diagnostics=diagnostics)


def span_attributes(tenant_id: str, neighbors: int, response: RetrievalResponse) -> Attributes:
    """What retrieve()'s span says of a call: never its text, its tenant only as a hash."""
    diagnostics = response.diagnostics
    return {
        "retrieval.tenant.hash": tenant_hash(tenant_id),
        "retrieval.mode": diagnostics.mode,
        "retrieval.sources": tuple(diagnostics.sources),
        "retrieval.candidates": sum(s.candidates for s in diagnostics.sources.values()),
        "retrieval.results": len(response),
        "retrieval.statements": diagnostics.statements,
        "retrieval.query_embedding_cached": diagnostics.query_embedding_cached,
        "retrieval.neighbors": neighbors,
    }
