"""The read path's connections: statements converted once, sent with positional values,
results read in binary format (the same values as text format would give), and at most
``max_connections`` open at once."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from retrieval.db.engine import make_engine
from retrieval.db.read_pool import ReadConnections
from retrieval.errors import ConfigurationError, DatabaseError
from retrieval.search.retriever import HybridRetriever
from tests.conftest import PgDatabase
from tests.threads import run_together


def test_a_long_statement_with_repeated_names_and_literal_percents(database: PgDatabase) -> None:
    connections = ReadConnections(make_engine(database.url))
    # Longer than psycopg's 4,096-character cache limit, like the retriever's statement.
    padding = "".join(f"    , %(number)s * {i} AS n{i}\n" for i in range(200))
    statement = (
        "SELECT %(word)s AS word, %(when)s AS at, %(word)s || '%%' AS pattern,\n"
        "       'abc' LIKE '%%' || %(part)s || '%%' AS matched,\n"
        "       1.0::float8 / 3 AS third, ARRAY['a', NULL]::text[] AS words, NULL::float8 AS gap,\n"
        "       '{\"k\": [1, 2.5]}'::jsonb::text AS evidence\n"
        f"{padding}"
    )
    assert len(statement) > 4096
    when = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    try:
        for _ in range(7):  # past psycopg's automatic prepare threshold (5)
            rows = connections.execute(
                statement, {"word": "x", "when": when, "part": "b", "number": 3}
            )
            assert len(rows) == 1
            word, at, pattern, matched, third, words, gap, evidence, *numbers = rows[0]
            assert (word, at, pattern, matched) == ("x", when, "x%", True)
            assert (third, words, gap) == (1.0 / 3, ["a", None], None)
            assert evidence == '{"k": [1, 2.5]}'
            assert numbers == [3 * i for i in range(200)]
    finally:
        connections.close()


def test_statements_without_rows_return_nothing(database: PgDatabase) -> None:
    connections = ReadConnections(make_engine(database.url))
    try:
        assert connections.execute("SELECT set_config('application_name', %(n)s, false)",
                                   {"n": "t"}) == [("t",)]  # fmt: skip
        assert connections.execute("DO $$ BEGIN END $$", {}) == []
    finally:
        connections.close()


def test_concurrent_calls_share_at_most_max_connections(database: PgDatabase) -> None:
    name = "rtv-bounded-pool"
    connections = ReadConnections(
        make_engine(database.url), [("application_name", name)], max_connections=2
    )
    backends: set[int] = set()

    def client(worker: int) -> None:
        for _ in range(5):
            rows = connections.execute("SELECT pg_backend_pid(), pg_sleep(0.02)", {})
            backends.add(rows[0][0])

    try:
        assert run_together(client, workers=6) == []
        assert 1 <= len(backends) <= 2  # six threads, thirty calls, two server connections
        with psycopg.connect(database.server.libpq(database.name)) as observer:
            open_now = observer.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
            ).fetchone()
        assert open_now is not None and open_now[0] == len(backends)
    finally:
        connections.close()


def test_a_call_finding_every_connection_busy_waits_then_fails_clearly(
    database: PgDatabase,
) -> None:
    name = "rtv-busy-pool"
    connections = ReadConnections(
        make_engine(database.url),
        [("application_name", name)],
        max_connections=1,
        wait_seconds=0.2,
    )
    sleeper = threading.Thread(target=connections.execute, args=("SELECT pg_sleep(1.5)", {}))
    try:
        sleeper.start()
        _wait_until_running(database, name, "SELECT pg_sleep(1.5)")
        with pytest.raises(DatabaseError, match=r"all 1 read connections stayed busy for 0.2 s"):
            connections.execute("SELECT 1", {})
        sleeper.join()
        assert connections.execute("SELECT 1", {}) == [(1,)]  # free again once the call ended
    finally:
        sleeper.join()
        connections.close()


def test_a_failed_statement_gives_its_connection_back(database: PgDatabase) -> None:
    connections = ReadConnections(make_engine(database.url), max_connections=1, wait_seconds=1)
    try:
        with pytest.raises(DatabaseError, match="division by zero") as raised:
            connections.execute("SELECT 1 / 0", {})
        assert "postgresql://" not in str(raised.value) and database.url not in str(raised.value)
        assert connections.execute("SELECT 2", {}) == [(2,)]
    finally:
        connections.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_connections": 0}, "max_connections must be >= 1, got 0"),
        ({"max_connections": 2.5}, "max_connections must be an integer"),
        ({"max_connections": True}, "max_connections must be an integer"),
        ({"wait_seconds": 0}, "wait_seconds must be > 0"),
        ({"wait_seconds": float("inf")}, "wait_seconds must be > 0 and at most 86400"),
        ({"wait_seconds": "30"}, "wait_seconds must be a number"),
    ],
)
def test_a_bad_pool_bound_is_refused(
    database: PgDatabase, options: dict[str, Any], message: str
) -> None:
    engine = make_engine(database.url)
    with pytest.raises(ConfigurationError, match=message):
        ReadConnections(engine, **options)
    with pytest.raises(ConfigurationError, match=message):
        HybridRetriever(engine, **options)


def _wait_until_running(database: PgDatabase, application: str, statement: str) -> None:
    # Until the server shows ``statement`` running on a connection of ``application``.
    deadline = time.monotonic() + 30
    with psycopg.connect(database.server.libpq(database.name), autocommit=True) as observer:
        while time.monotonic() < deadline:
            running = observer.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                "AND state = 'active' AND query = %s",
                (application, statement),
            ).fetchone()
            if running is not None and running[0] > 0:
                return
            time.sleep(0.01)
    raise AssertionError(f"{statement!r} never ran")
