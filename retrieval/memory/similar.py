"""Near duplicates, shown and never guessed: a tenant's live memories close to a text.

Exact copies collapse by themselves (:mod:`retrieval.memory.copies`); a paraphrase, or an update
of a value ("staging runs PostgreSQL 17" and "... 18"), is a different text, and only the
caller can tell whether the new one corrects the old (``supersedes``) or stands beside it. So
the store shows the memories within a calibrated cosine similarity of a text and leaves the
choice to the caller, each memory with how likely it states the same fact
(:mod:`retrieval.memory.same_fact`). The threshold (``RETRIEVAL_SIMILAR_THRESHOLD``) was
calibrated on the labelled pairs of ``tests/data/near_duplicates.jsonl``
(docs/decisions/0022-updates-as-people-write-them.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import Connection

from retrieval.db.local_settings import set_local
from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.db.versions import has_iterative_scan
from retrieval.embedding.cache import EmbeddingCache
from retrieval.embedding.calibration import calibration_for
from retrieval.memory.get_and_forget import Lookup
from retrieval.memory.records import SimilarMemory

# The HNSW pool read for similar(): at least this many, else four times the limit.
_MIN_POOL = 40


def similar_memories(
    connection: Connection,
    schema: str,
    cache: EmbeddingCache,
    lookup: Lookup,
    text: str,
    *,
    tenant_id: str,
    kind: str | None,
    limit: int,
    threshold: float,
    exclude: Sequence[int] = (),
    namespace: tuple[str, ...] | None = None,
) -> list[SimilarMemory]:
    """The live memories of ``tenant_id`` (of ``kind`` and in ``namespace`` exactly, if given)
    whose cosine similarity to ``text`` is at least ``threshold``, most similar first, at most
    ``limit``."""
    vector = cache.embed(connection, tenant_id, [text], store=False)[0]
    pool = max(_MIN_POOL, 4 * limit)
    bind_tenant(connection, schema, tenant_id)
    if has_iterative_scan(connection):  # pgvector 0.8.0 or newer
        set_local(connection, "hnsw.iterative_scan", "relaxed_order")
    set_local(connection, "hnsw.ef_search", str(min(1000, max(pool, 100))))
    rows = execute(
        connection,
        statement("memory.similar", schema),
        {
            "tenant_id": tenant_id,
            "vector": np.asarray(vector, dtype=np.float32),
            "kind": kind,
            "namespace": None if namespace is None else list(namespace),
            "exclude": list(exclude),
            "pool": pool,
            "threshold": threshold,
            "limit": limit,
        },
    ).all()
    memories = {m.id: m for m in lookup.memories(connection, tenant_id, [row.id for row in rows])}
    curve = calibration_for(cache.embedder.model_id).thresholds.same_fact_curve
    return [
        SimilarMemory(memories[row.id], min(1.0, max(0.0, float(row.similarity))), curve)
        for row in rows
        if row.id in memories
    ]
