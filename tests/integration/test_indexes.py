"""The indexes exist and the planner uses them, on enough rows that a scan would cost more."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, text

from tests.conftest import PgDatabase, copy_of_template
from tests.harness import PgServer

ROWS = 20_000

SEED = [
    # 20,000 decisions and tool calls over 20 tenants, with varied words, then 2,000 memories.
    """
    INSERT INTO retrieval.decisions (tenant_id, task_id, action_type, content, status, created_at)
    SELECT 'tenant-' || (g % 20), 'task-' || (g % 500), 'plan',
           'step ' || g || ' ' || md5(g::text) || ' about ' ||
           (ARRAY['caching', 'indexing', 'parsing', 'billing', 'logging'])[1 + g % 5],
           'done', now() - make_interval(mins => g)
    FROM generate_series(1, :rows) AS g
    """,
    """
    INSERT INTO retrieval.tool_calls (tenant_id, tool_name, params, result, created_at)
    SELECT 'tenant-' || (g % 20),
           (ARRAY['web_search', 'read_file', 'run_sql', 'send_email'])[1 + g % 4]
               || '_' || (g % 97),
           jsonb_build_object('query', md5(g::text), 'limit', g % 50),
           'ok', now() - make_interval(mins => g)
    FROM generate_series(1, :rows) AS g
    """,
    """
    INSERT INTO retrieval.memories (tenant_id, content, embedding, embedding_model)
    SELECT 'tenant-' || (g % 20), 'memory ' || g,
           (SELECT array_agg(random() + 0 * (d + g))::vector(384)
              FROM generate_series(1, 384) AS d),
           'test-random'
    FROM generate_series(1, 2000) AS g
    """,
]
# VACUUM moves rows from GIN's pending list into the index proper (autovacuum does this in
# production); before it, the planner prices the trigram indexes as a scan of that list.
VACUUM = ["VACUUM ANALYZE retrieval.decisions", "VACUUM ANALYZE retrieval.tool_calls",
          "VACUUM ANALYZE retrieval.memories"]  # fmt: skip


@pytest.fixture(scope="module")
def seeded(pg_server: PgServer, template_database: str) -> Iterator[PgDatabase]:
    # One seeded database for the module: the tests only read it.
    with copy_of_template(pg_server, template_database) as database:
        _seed(database)
        yield database


def _seed(database: PgDatabase) -> None:
    with database.engine.begin() as connection:
        for statement in SEED:
            connection.execute(text(statement), {"rows": ROWS})
    autocommit = database.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    with autocommit as connection:
        for statement in VACUUM:
            connection.execute(text(statement))


def _plan(connection: Connection, query: str, **params: object) -> str:
    rows = connection.execute(text("EXPLAIN " + query), params).scalars().all()
    return "\n".join(rows)


def test_keyword_search_on_decisions_uses_the_trigram_index(seeded: PgDatabase) -> None:
    # The episodic source compares the lower-cased search text with LIKE (revision 0006).
    with seeded.engine.connect() as connection:
        plan = _plan(
            connection,
            "SELECT id FROM retrieval.decisions WHERE search_text LIKE lower(:pattern)",
            pattern="%a1b2%",
        )
        matches = connection.execute(
            text("SELECT count(*) FROM retrieval.decisions WHERE search_text LIKE '%billing%'")
        ).scalar()
    assert "decisions_search_text_trgm_idx" in plan, plan
    assert matches == ROWS // 5


def test_keyword_search_on_tool_names_and_params_uses_the_trigram_index(
    seeded: PgDatabase,
) -> None:
    with seeded.engine.connect() as connection:
        by_name = _plan(
            connection,
            "SELECT id FROM retrieval.tool_calls WHERE search_text LIKE lower(:pattern)",
            pattern="%mail_4%",
        )
        by_params = _plan(
            connection,
            "SELECT id FROM retrieval.tool_calls WHERE search_text LIKE lower(:pattern)",
            pattern="%c4ca42%",
        )
    assert "tool_calls_search_text_trgm_idx" in by_name, by_name
    assert "tool_calls_search_text_trgm_idx" in by_params, by_params


def test_nearest_neighbours_use_the_hnsw_index(seeded: PgDatabase) -> None:
    with seeded.engine.connect() as connection:
        query_vector = connection.execute(
            text("SELECT embedding FROM retrieval.memories ORDER BY id LIMIT 1")
        ).scalar()
        plan = _plan(
            connection,
            "SELECT id FROM retrieval.memories ORDER BY embedding <-> :q LIMIT 5",
            q=query_vector,
        )
        nearest = connection.execute(
            text("SELECT id FROM retrieval.memories ORDER BY embedding <-> :q LIMIT 1"),
            {"q": query_vector},
        ).scalar()
    assert "memories_embedding_hnsw_idx" in plan, plan
    assert nearest == 1


def test_tenant_timelines_and_tasks_use_btree_indexes(seeded: PgDatabase) -> None:
    with seeded.engine.connect() as connection:
        timeline = _plan(
            connection,
            "SELECT id FROM retrieval.decisions WHERE tenant_id = :t "
            "ORDER BY created_at DESC LIMIT 10",
            t="tenant-3",
        )
        task = _plan(
            connection,
            "SELECT id FROM retrieval.decisions WHERE tenant_id = :t AND task_id = :task",
            t="tenant-3",
            task="task-3",
        )
        tool = _plan(
            connection,
            "SELECT id FROM retrieval.tool_calls WHERE tenant_id = :t AND tool_name = :n",
            t="tenant-3",
            n="web_search_3",
        )
    assert "decisions_tenant_created_idx" in timeline, timeline
    assert "decisions_tenant_task_idx" in task, task
    assert "tool_calls_tenant_tool_name_idx" in tool, tool
