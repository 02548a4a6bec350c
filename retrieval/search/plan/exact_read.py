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
the retriever has not seen in the last :data:`REFRESH_SECONDS` carries two presence rows
(:mod:`~retrieval.search.plan.presence`): the tenant's memory count (``memory_corpus``) and
the table's rows (the planner's statistics, ``pg_class.reltuples``); the retriever remembers
them and decides the tenant's next calls from them. A tenant not seen yet goes through the
graph. Either way the statement returns the tenant's nearest memories, so a stale count costs
time, never a result. Citus cannot plan the look at ``pg_class`` on its router path: there the
graph is always used.
"""

from __future__ import annotations

import threading
import time

MEMORIES = "memories"  # a presence row: the tenant's memories (memory_corpus)
MEMORY_TABLE = "memory_table"  # a presence row: the memories table's rows (pg_class.reltuples)
SIZE_ROWS = (MEMORIES, MEMORY_TABLE)
REFRESH_SECONDS = 60.0  # a tenant's size is asked for again after this long
_MAX_TENANTS = 100_000  # tenants remembered per retriever (then it starts afresh)


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


class TenantSizes:
    """Per tenant, its memory count at the last statement that looked, and the table's rows
    (thread-safe)."""

    def __init__(self) -> None:
        self._memories: dict[str, tuple[int, float]] = {}  # count, when it was learnt
        self._table_rows = 0
        self._lock = threading.Lock()

    def stale(self, tenant_id: str) -> bool:
        """Whether the next statement should ask for the tenant's size (not seen, or not in
        the last :data:`REFRESH_SECONDS`)."""
        known = self._memories.get(tenant_id)
        return known is None or time.monotonic() - known[1] > REFRESH_SECONDS

    def read_exactly(self, tenant_id: str, factor: float, pool: int) -> bool:
        """Whether the tenant is small enough for its table to be read exactly:
        ``n^2 <= factor * pool * N`` (never for a tenant not seen yet, or a factor of 0)."""
        known = self._memories.get(tenant_id)
        return reads_exactly(None if known is None else known[0], self._table_rows, factor, pool)

    def memories(self, tenant_id: str) -> int | None:
        """The tenant's memory count when last seen (None: not seen)."""
        known = self._memories.get(tenant_id)
        return None if known is None else known[0]

    @property
    def table_rows(self) -> int:
        """The memories table's rows when last seen (0: not seen)."""
        return self._table_rows

    def holds_most(self, tenant_id: str) -> bool:
        """Whether the tenant held at least half of the table's rows when last seen: without
        pgvector's iterative scan, the only tenants the graph serves in full."""
        return holds_most(self.memories(tenant_id), self._table_rows)

    def learn(self, tenant_id: str, counts: dict[str, int]) -> None:
        """Remember the sizes a statement's presence rows counted (if it carried them)."""
        if MEMORIES not in counts:
            return
        with self._lock:
            if len(self._memories) >= _MAX_TENANTS:
                self._memories.clear()
            self._memories[tenant_id] = (counts[MEMORIES], time.monotonic())
            self._table_rows = counts.get(MEMORY_TABLE, self._table_rows)
