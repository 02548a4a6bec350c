"""Whether the semantic source reads a tenant's memories exactly, or through the HNSW graph.

An HNSW scan filtered to a tenant of ``n`` memories in a table of ``N`` visits about
``pool * N / n`` rows before it has the tenant's ``pool`` nearest, each dearer than one exact
distance, and past ``hnsw.max_scan_tuples`` it stops short. Reading the tenant's rows through
its btree and sorting them costs ``n`` distances. So a tenant is read exactly when
``n^2 <= exact_scan_factor * pool * N``: at 1,000,000 rows a tenant of 10,000 takes about half
the time read exactly, with every nearest row, where the graph finds 0.97 of them
(``benchmarks/peers/exact_read.py``; docs/decisions/0013).

The choice is made in Python, so each statement carries one plan (a statement holding both
branches, chosen in SQL, cost about 0.4 ms a call to plan). A statement for a tenant whose size
the retriever has not seen in the last
:data:`~retrieval.search.knowledge.REFRESH_SECONDS` carries two presence rows
(:mod:`~retrieval.search.statement.presence`): the tenant's memory count (``memory_corpus``) and
the table's rows (the planner's statistics, ``pg_class.reltuples``); the retriever remembers
them and decides the tenant's next calls from them. A tenant not seen yet goes through the
graph. Either way the statement returns the tenant's nearest memories, so a stale count costs
time, never a result. Citus cannot plan the look at ``pg_class`` on its router path: a routed
statement always walks the graph. Run on the worker that holds the tenant's shards (the
schema's read function), the statement counts the shard's rows, which its HNSW index covers.
"""

from __future__ import annotations

from retrieval.search.config import RetrievalConfig
from retrieval.search.knowledge import TenantView


def reads_by_size(config: RetrievalConfig, tenant: TenantView) -> bool:
    """Whether the plan chooses how to read a tenant by its size: an ``exact_scan_factor``
    above 0, and not routed by Citus (its router path cannot plan the look at ``pg_class``)."""
    return config.exact_scan_factor > 0 and not tenant.routed


def reads_exactly(memories: int | None, table_rows: int, factor: float, pool: int) -> bool:
    """Whether a tenant of ``memories`` in a table of ``table_rows`` is read exactly:
    ``n^2 <= factor * pool * N`` (never for a tenant not seen yet, or a factor of 0)."""
    if memories is None or factor <= 0.0:
        return False
    return float(memories) ** 2 <= factor * pool * table_rows


def holds_most(memories: int | None, table_rows: int) -> bool:
    """Whether a tenant of ``memories`` held at least half of the table's ``table_rows``: without
    pgvector's iterative scan, the only tenants the graph serves in full."""
    return memories is not None and 2 * memories >= table_rows > 0
