"""The planner's statistics brought up to date after a bulk load.

PostgreSQL plans a statement from each table's statistics, which autovacuum refreshes about a
minute after a table changed by a tenth. Until then a table loaded from nothing is planned as
nearly empty: a read of a chat just loaded took 296 ms to run where the same statement took
12.8 ms after ``ANALYZE`` (1,800 messages without a thread, their neighbours in time read
through the wrong index; benchmarks/peers/mem0_side_by_side.py, 2026-12-05). ``retrieval
ingest`` therefore analyzes what it wrote before it returns.
"""

from __future__ import annotations

import time

from sqlalchemy import Engine

from retrieval.db.queries import execute, statement
from retrieval.errors import translate_database_errors


def analyze_written(engine: Engine, schema: str) -> float:
    """``ANALYZE`` the tables a load writes (memories, decisions, tool calls and the episodic
    vocabulary); return the seconds it took. ANALYZE reads a sample of each table (30,000
    rows at most), so it takes about as long at 1,000,000 rows as at 100,000."""
    began = time.perf_counter()
    with translate_database_errors(str(engine.url)), engine.begin() as connection:
        execute(connection, statement("db.analyze_written", schema))
    return time.perf_counter() - began
