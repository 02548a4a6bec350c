"""The read function that runs a read statement where its tenant's shards are (on a Citus
cluster, the worker Citus delegates the call to): here on the embedded server, where the
statement runs over the schema's own tables, the function's rows against the statement's own.
On a real cluster: tests/integration/test_citus.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from sqlalchemy import Engine

from retrieval.db.placeholders import positional
from retrieval.db.queries import execute, statement
from retrieval.db.shard_reads import (
    PREPARED_PREFIX,
    ShardReads,
    over_shards,
    read_call,
    read_function,
)
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever
from tests.acme_memories import AS_OF, remember_acme
from tests.conftest import PgDatabase

SCHEMA = "retrieval"
QUESTIONS = (
    "Which database does the billing service run on?",
    "Why did the nightly deploy fail?",
    "Where did Bo move to?",
    "When is the project deadline?",
)


def test_the_tenants_shards_are_named_for_the_schemas_tables_only() -> None:
    query = (
        'SELECT m.memories FROM "s".memories AS m JOIN "s".memory_corpus AS c ON TRUE '
        'JOIN "t".memories AS o ON TRUE, "s".memories_search(1) WHERE "s".decisions.id > 0'
    )
    shards = {"memories": 102008, "memory_corpus": 102040, "decisions": 102072}
    assert over_shards(query, "s", shards) == (
        'SELECT m.memories FROM "s".memories_102008 AS m JOIN "s".memory_corpus_102040 AS c ON '
        'TRUE JOIN "t".memories AS o ON TRUE, "s".memories_search(1) WHERE '
        '"s".decisions_102072.id > 0'
    )


@pytest.fixture
def connection(database: PgDatabase) -> Iterator[psycopg.Connection[Any]]:
    with database.engine.begin() as made:
        execute(made, statement("shard_reads.create_read_function", SCHEMA))
    with psycopg.connect(database.server.libpq(database.name), autocommit=True) as opened:
        register_vector(opened)
        yield opened


def _read_statements(store: MemoryStore) -> list[tuple[str, dict[str, Any], Any, Any]]:
    # Each question's read statement as the retriever sends it: text, values, settings, columns.
    sent: list[tuple[str, dict[str, Any], Any, Any]] = []
    config = RetrievalConfig(record_access=False)
    with HybridRetriever.from_store(store, config=config, background_writes=False) as retriever:
        execute_on_pool = retriever._reads.execute

        def spy(query: str, params: Any, *, settings: Any = None, columns: Any = None) -> Any:
            if columns is not None:
                sent.append((query, dict(params), settings, columns))
            return execute_on_pool(query, params, settings=settings, columns=columns)

        retriever._reads.execute = spy  # type: ignore[method-assign]
        for question in QUESTIONS:
            retriever.retrieve(question, tenant_id="acme", as_of=AS_OF)
    return sent


@pytest.mark.parametrize("plan_mode", ["force_custom_plan", "force_generic_plan"])
def test_the_read_function_returns_the_statements_own_rows(
    store: MemoryStore, connection: psycopg.Connection[Any], plan_mode: str
) -> None:
    remember_acme(store)
    statements = _read_statements(store)
    assert len(statements) == len(QUESTIONS)
    for query, params, _, columns in statements:
        converted = positional(query)
        values = converted.values(params)
        own = psycopg.RawCursor(connection).execute(converted.text, values).fetchall()
        call, arguments = read_call(
            connection, SCHEMA, converted.text.decode(), values,
            tenant_id="acme", shard_id=None, columns=columns, plan_mode=plan_mode,
        )  # fmt: skip
        for _ in range(2):  # prepared by the first call, executed again by the second
            through = connection.execute(call, arguments).fetchall()  # type: ignore[arg-type]
            assert through == own  # every value exactly: floats, vectors' distances, times
        assert own and any(row[0] == "semantic" for row in own)
    prepared = connection.execute(
        "SELECT count(*) FROM pg_prepared_statements WHERE starts_with(name, %s)",
        (PREPARED_PREFIX,),
    ).fetchone()
    assert prepared is not None and prepared[0] >= 1


def _call(connection: psycopg.Connection[Any], name: str, prepared: str) -> list[Any]:
    return connection.execute(
        'SELECT * FROM "retrieval".read_on_shard(%s, NULL, %s, %s, %s, %s) AS r (x bigint)',
        ("acme", name, prepared, "1", "force_custom_plan"),
    ).fetchall()


def test_a_session_keeps_at_most_64_statements_the_oldest_going_first(
    connection: psycopg.Connection[Any],
) -> None:
    for n in range(66):
        assert _call(connection, f"{PREPARED_PREFIX}{n}", f"(bigint) AS SELECT $1 + {n}") == [
            (1 + n,)
        ]
    kept = connection.execute(
        "SELECT name FROM pg_prepared_statements WHERE starts_with(name, %s)",
        (PREPARED_PREFIX,),
    ).fetchall()
    assert len(kept) == 64
    assert {f"{PREPARED_PREFIX}0", f"{PREPARED_PREFIX}1"}.isdisjoint(name for (name,) in kept)


def test_the_read_function_only_reads(
    store: MemoryStore, connection: psycopg.Connection[Any], database: PgDatabase
) -> None:
    remember_acme(store)
    deleting = '(bigint) AS DELETE FROM "retrieval".decisions WHERE id > $1 RETURNING id'
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        _call(connection, f"{PREPARED_PREFIX}delete", deleting)
    left = connection.execute('SELECT count(*) FROM "retrieval".decisions').fetchone()
    assert left == (1,)


def test_a_role_that_may_not_call_the_read_function_reads_the_routed_way(
    database: PgDatabase, connection: psycopg.Connection[Any], app_engine: Engine, app_role: str
) -> None:
    as_app = app_engine.url.render_as_string(hide_password=False).replace(
        "postgresql+psycopg://", "postgresql://", 1
    )
    with psycopg.connect(as_app, autocommit=True) as app:
        assert ShardReads(SCHEMA).available(app)  # granted with the schema's functions
    connection.execute(
        f'REVOKE EXECUTE ON FUNCTION {read_function(SCHEMA)} FROM PUBLIC, "{app_role}"'
    )
    with psycopg.connect(as_app, autocommit=True) as app:
        assert not ShardReads(SCHEMA).available(app)
    assert ShardReads(SCHEMA).available(connection)  # the owner still may
    assert not ShardReads("elsewhere").available(connection)  # a schema without the function
