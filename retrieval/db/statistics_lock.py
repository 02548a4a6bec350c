"""One lock per tenant around the writes of its BM25 term statistics.

Adding, replacing and forgetting documents, and writing or forgetting memories with their BM25
statistics, update shared rows (document frequencies, corpus sizes) in orders that differ:
two such writers of one tenant could wait on each other's rows (a deadlock). Each of them first
takes this transaction-scoped advisory lock, so writers of one tenant queue instead. Unlike a
``FOR UPDATE`` on the tenant's corpus row, it holds before that row exists.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection

from retrieval.db.queries import execute, statement

# The first key of pg_advisory_xact_lock(int4, int4): this lock's own namespace.
_NAMESPACE = 0x52545653  # "RTVS"


def lock_term_statistics(connection: Connection, schema: str, tenants: Iterable[str]) -> None:
    """Wait for, then hold until the transaction ends, the statistics lock of each tenant (in
    name order, so that writers of several tenants cannot deadlock either)."""
    execute(
        connection,
        statement("db.lock_term_statistics", schema),
        {"namespace": _NAMESPACE, "schema_name": schema, "tenants": sorted(set(tenants))},
    ).all()
