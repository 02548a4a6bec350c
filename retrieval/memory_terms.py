"""BM25 statistics of memories, kept by the write path (the lexical index of memories).

When the lexical index is on (``WriteConfig.memory_bm25``, ``RETRIEVAL_MEMORY_BM25``), every
batch of memories also writes, in its transaction, the postings of their lexemes
(``memory_terms``: term, memory, term frequency, the memory's length in lexemes and its kind),
the document frequency of each term (``memory_term_stats``) and the tenant's corpus size
(``memory_corpus``), with PostgreSQL's ``to_tsvector`` in the configured text search
configuration. Forgetting memories takes their statistics back in the same statement
(:mod:`retrieval.lookup`). The corpus is the memories with at least one lexeme: a memory made
only of stop words can never match, and is not counted.

:func:`index_missing` fills the statistics for memories stored while the index was off.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from sqlalchemy import Connection, text

from retrieval.errors import ValidationError
from retrieval.statistics_lock import lock_term_statistics

_INDEX = """
WITH chosen AS (
    SELECT m.tenant_id, m.id, m.kind, to_tsvector(CAST(:config AS regconfig), m.content) AS v
    FROM unnest(CAST(:tenants AS text[]), CAST(:ids AS bigint[])) AS k(tenant_id, id)
    JOIN "{s}".memories AS m ON m.tenant_id = k.tenant_id AND m.id = k.id
), sized AS (
    SELECT c.tenant_id, c.id, c.kind, c.v,
           (SELECT COALESCE(sum(cardinality(u.positions)), 0) FROM unnest(c.v) AS u)::int
               AS length
    FROM chosen AS c
    WHERE length(c.v) > 0
), postings AS (
    INSERT INTO "{s}".memory_terms
        (tenant_id, term, memory_id, term_frequency, memory_length, kind)
    SELECT s.tenant_id, u.lexeme, s.id, cardinality(u.positions), s.length, s.kind
    FROM sized AS s, unnest(s.v) AS u
    RETURNING tenant_id, term
), stats AS (
    -- Terms in sorted order: concurrent writers lock the same rows in the same order.
    INSERT INTO "{s}".memory_term_stats AS t (tenant_id, term, document_frequency)
    SELECT tenant_id, term, count(*) FROM postings
    GROUP BY tenant_id, term ORDER BY tenant_id, term
    ON CONFLICT (tenant_id, term)
    DO UPDATE SET document_frequency = t.document_frequency + excluded.document_frequency
)
INSERT INTO "{s}".memory_corpus AS c (tenant_id, text_search_config, memories, total_terms)
SELECT tenant_id, :config, count(*), sum(length) FROM sized
GROUP BY tenant_id ORDER BY tenant_id
ON CONFLICT (tenant_id)
DO UPDATE SET memories = c.memories + excluded.memories,
              total_terms = c.total_terms + excluded.total_terms
"""
_CONFIGS = """
SELECT tenant_id, text_search_config FROM "{s}".memory_corpus
WHERE tenant_id = ANY(CAST(:tenants AS text[]))
ORDER BY tenant_id
"""
_MISSING = """
SELECT m.tenant_id, m.id FROM "{s}".memories AS m
WHERE (CAST(:tenant_id AS text) IS NULL OR m.tenant_id = :tenant_id)
  AND NOT EXISTS (
      SELECT 1 FROM "{s}".memory_terms AS t WHERE t.tenant_id = m.tenant_id AND t.memory_id = m.id
  )
ORDER BY m.tenant_id, m.id
"""


def index_memories(
    connection: Connection,
    schema: str,
    text_search_config: str,
    tenants: Sequence[str],
    ids: Sequence[int],
) -> None:
    """Write the postings and statistics of the memories ``(tenants[i], ids[i])``.

    A tenant whose memories were indexed with another text search configuration is a
    :class:`ValidationError` (its statistics would mix two analyses); nothing is written.
    """
    if not ids:
        return
    distinct = sorted(set(tenants))
    lock_term_statistics(connection, schema, distinct)
    stored = connection.execute(text(_CONFIGS.format(s=schema)), {"tenants": distinct}).all()
    clash = next((row for row in stored if row.text_search_config != text_search_config), None)
    if clash is not None:
        raise ValidationError(
            f"the memories of tenant {clash.tenant_id!r} are indexed with text search "
            f"configuration {clash.text_search_config!r}, not {text_search_config!r}: set "
            f"RETRIEVAL_TEXT_SEARCH_CONFIG={clash.text_search_config}",
            field="text_search_config",
        )
    connection.execute(
        text(_INDEX.format(s=schema)),
        {"tenants": list(tenants), "ids": list(ids), "config": text_search_config},
    )


def missing_memories(
    connection: Connection, schema: str, tenant_id: str | None
) -> list[tuple[str, int]]:
    """``(tenant_id, id)`` of the memories without postings (of one tenant, or all)."""
    rows = connection.execute(text(_MISSING.format(s=schema)), {"tenant_id": tenant_id})
    return [(str(row.tenant_id), int(row.id)) for row in rows]


def index_missing(
    connection_factory: Callable[[], AbstractContextManager[Connection]],
    schema: str,
    text_search_config: str,
    *,
    tenant_id: str | None = None,
    batch_size: int = 1000,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Index the memories that have no postings yet, ``batch_size`` per transaction.

    Resumable: an interrupted run leaves whole batches indexed, and the next run goes on with
    the rest. Returns the memories examined (those made only of stop words stay unindexed).
    """
    with connection_factory() as connection:
        todo = missing_memories(connection, schema, tenant_id)
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        with connection_factory() as connection:
            index_memories(
                connection,
                schema,
                text_search_config,
                [tenant for tenant, _ in batch],
                [memory_id for _, memory_id in batch],
            )
        if progress is not None:
            progress(len(batch))
    return len(todo)
