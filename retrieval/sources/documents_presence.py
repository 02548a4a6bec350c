"""Whether a tenant holds documents: the documents source is left out of the statement for
tenants that held none at the retriever's last call, and the statement says if that changed.

Planning the documents source's CTEs costs every call about 1.5-2.5 ms, and a statement
carrying them plans slower as a whole, even for a tenant without a single chunk (on the read
benchmark's tenant without documents, interleaved over 150 claims, all sources p50 13.74 ms
with them against 10.44 ms with this module). So the retriever remembers, per tenant, whether
the tenant's corpus held chunks; a tenant not seen yet, or seen with chunks, gets the
documents CTEs.

Nothing is ever missed: every statement of a retriever with the documents source on carries
the :func:`presence_cte` row, the tenant's chunk count read in the same snapshot as the rest.
If the documents CTEs were left out and the count is now above zero, the retriever runs the
statement again with them (a second statement, once, when a tenant's first documents arrive).
"""

from __future__ import annotations

import threading

from retrieval.sources.common import Candidate

SOURCE = "documents"
PRESENCE_ITEM = "corpus"  # the item of the presence row; its ``id`` is the chunk count
_MAX_TENANTS = 100_000  # tenants remembered per retriever (then it starts afresh)


def presence_cte(schema: str) -> str:
    """A CTE ``documents_presence``: one row in the statement's columns, its ``id`` the number
    of chunks the tenant holds. Parameters: ``tenant_id``, ``as_of``."""
    return f"""documents_presence AS (
    SELECT 'documents'::text AS source, '{PRESENCE_ITEM}'::text AS item,
           COALESCE((SELECT c.chunks FROM "{schema}".document_corpus AS c
                     WHERE c.tenant_id = %(tenant_id)s), 0)::bigint AS id,
           ''::text AS content, '{PRESENCE_ITEM}'::text AS kind,
           %(as_of)s::timestamptz AS created_at, 0.0::float8 AS relevance,
           0.0::float8 AS recency, 0.0::float8 AS importance, 0.0::float8 AS popularity,
           0.0::float8 AS entity, NULL::float8 AS distance, NULL::text[] AS matched,
           NULL::text[] AS entities, '{{}}'::jsonb AS details
)"""


def split_presence(candidates: list[Candidate]) -> tuple[list[Candidate], int | None]:
    """The candidates without the presence row, and the chunk count it carried (``None``:
    the statement had no presence row)."""
    chunks = None
    kept = []
    for candidate in candidates:
        if candidate.source == SOURCE and candidate.item == PRESENCE_ITEM:
            chunks = candidate.id
        else:
            kept.append(candidate)
    return kept, chunks


class DocumentPresence:
    """Per tenant, whether its corpus held chunks at the last statement (thread-safe)."""

    def __init__(self) -> None:
        self._held: dict[str, bool] = {}
        self._lock = threading.Lock()

    def may_hold(self, tenant_id: str) -> bool:
        """False only if the tenant held no chunks at the last statement that looked."""
        return self._held.get(tenant_id, True)

    def learn(self, tenant_id: str, chunks: int) -> None:
        """Remember what the last statement saw."""
        with self._lock:
            if len(self._held) >= _MAX_TENANTS and tenant_id not in self._held:
                self._held.clear()
            self._held[tenant_id] = chunks > 0
