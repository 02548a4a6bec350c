"""The documents source's part of the plan: its shape for a call, and the values it binds.

A call reads chunks unless it names a namespace or reads only keyed memories (chunks lie in
neither). Their dense channel and BM25 are fused as the memories' are; with ``max_distance``
set a chunk is returned only with absolute evidence (``gated``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from retrieval.embedding.calibration import DenseCalibration
from retrieval.search.knowledge import TenantView
from retrieval.search.plan.parameters import HOUR, bm25_parameters, dense_parameters
from retrieval.search.plan.source import PlanSource
from retrieval.search.prepare.call import PreparedCall

SOURCE = "documents"


@dataclass(frozen=True)
class DocumentsQuery:
    """The shape of the documents' CTEs."""

    gated: bool = True  # behind the evidence gate (max_distance, bm25_min_coverage)
    capped: bool = False  # more query words than max_query_words: BM25 reads the rarest


def reported(call: PreparedCall) -> bool:
    """Whether the call reads chunks: the source on, with a limit, and the call naming no
    namespace and not reading only keyed memories (chunks lie in neither)."""
    config = call.config
    return (
        config.documents.enabled
        and config.documents.limit > 0
        and not call.namespace
        and not call.keyed
    )


def documents_query(call: PreparedCall, tenant: TenantView) -> DocumentsQuery | None:
    """The documents' CTEs' shape for ``call`` (the tenant changes nothing of it)."""
    config = call.config
    if not reported(call):
        return None
    return DocumentsQuery(
        gated=config.max_distance is not None,
        capped=call.query.words > config.max_query_words,
    )


def documents_parameters(
    query: DocumentsQuery, call: PreparedCall, calibration: DenseCalibration
) -> dict[str, Any]:
    """The values the documents' CTEs bind for ``call``."""
    config = call.config
    return {
        **dense_parameters(call, calibration),
        **bm25_parameters(config, call.query),
        "documents_candidates": config.pool,
        "documents_half_life": config.documents.half_life_hours * HOUR,
    }


# The documents source's part of the plan: a presence row tells whether a tenant holds chunks.
PLAN = PlanSource(SOURCE, reported, documents_query, documents_parameters, probed=True)
