"""The read path's connections: statements converted once, sent with positional values, and
results read in binary format (the same values as text format would give)."""

from __future__ import annotations

from datetime import UTC, datetime

from retrieval.db import make_engine
from retrieval.read_connections import ReadConnections
from tests.conftest import PgDatabase


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
