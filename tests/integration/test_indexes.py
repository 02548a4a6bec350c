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
    -- Centred on zero: vectors drawn from [0, 1) crowd together, and HNSW may then miss
    -- the exact nearest one.
    SELECT 'tenant-' || (g % 20), 'memory ' || g,
           (SELECT array_agg(random() - 0.5 + 0 * (d + g))::vector(384)
              FROM generate_series(1, 384) AS d),
           'test-random'
    FROM generate_series(1, 2000) AS g
    """,
]
# VACUUM moves rows from GIN's pending list into the index proper (autovacuum does this in
# production); before it, the planner prices the trigram indexes as a scan of that list.
VACUUM = ["VACUUM ANALYZE retrieval.decisions", "VACUUM ANALYZE retrieval.tool_calls",
          "VACUUM ANALYZE retrieval.memories", "VACUUM ANALYZE retrieval.episodic_vocabulary",
          "VACUUM ANALYZE retrieval.episodic_postings"]  # fmt: skip


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


def test_keywords_find_their_tokens_through_a_vocabulary_trigram_index(
    seeded: PgDatabase,
) -> None:
    # The episodic source looks each keyword up in the tenant's vocabulary (revision 0007)
    # through the trigram index on the token or the one on tenant and token (revision 0009),
    # whichever the planner prices lower for the tenant's share of the vocabulary.
    with seeded.engine.connect() as connection:
        plan = _vocabulary_lookup(connection)
    assert "token_trgm_idx" in plan, plan


def test_the_tenant_and_token_index_fetches_only_the_tenants_tokens(seeded: PgDatabase) -> None:
    # Without the token-only index (dropped in a transaction rolled back), a lookup still finds
    # its tokens through the index on tenant and token, the tenant inside the index condition.
    with seeded.engine.connect() as connection, connection.begin() as transaction:
        connection.execute(text("DROP INDEX retrieval.episodic_vocabulary_token_trgm_idx"))
        plan = _vocabulary_lookup(connection)
        transaction.rollback()
    assert "episodic_vocabulary_tenant_token_trgm_idx" in plan, plan
    assert "Index Cond: ((tenant_id = 'tenant-5'::text) AND (token ~~" in plan, plan


def _vocabulary_lookup(connection: Connection) -> str:
    # The plan of a keyword's lookup in tenant-5's vocabulary; and a lookup's tokens checked.
    plan = _plan(
        connection,
        "SELECT id FROM retrieval.episodic_vocabulary "
        "WHERE tenant_id = 'tenant-5' AND token LIKE lower(:pattern)",
        pattern="%a1b2%",
    )
    tokens = connection.execute(
        text(
            "SELECT token FROM retrieval.episodic_vocabulary "
            "WHERE tenant_id = 'tenant-3' AND token LIKE '%billing%'"
        )
    ).scalars()
    assert list(tokens) == ["billing"]
    return plan


def test_postings_are_read_by_token_and_time_range(seeded: PgDatabase) -> None:
    with seeded.engine.connect() as connection:
        plan = _plan(
            connection,
            "SELECT p.item, p.row_id FROM retrieval.episodic_vocabulary AS v "
            "JOIN retrieval.episodic_postings AS p "
            "ON p.tenant_id = v.tenant_id AND p.token_id = v.id "
            "WHERE v.tenant_id = 'tenant-3' AND v.token = 'billing' "
            "AND p.created_at >= now() - interval '1 day'",
        )
        rows = connection.execute(
            text(
                "SELECT v.rows FROM retrieval.episodic_vocabulary AS v "
                "WHERE v.tenant_id = 'tenant-3' AND v.token = 'billing'"
            )
        ).scalar()
    assert "episodic_postings_pkey" in plan, plan
    assert rows == ROWS // 20  # every decision of tenant-3 is about billing (g % 5 == 3)


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
        # Random 384-d vectors are the hardest case for a graph: with pgvector's default
        # ef_search (40) a walk from the entry point now and then misses the row itself
        # (seen once in about twenty runs). A wider walk finds it every time.
        connection.execute(text("SET LOCAL hnsw.ef_search = 400"))
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


GIN_PENDING_LIST_KB = 64  # revision 0021


def test_every_gin_index_keeps_a_short_pending_list(database: PgDatabase) -> None:
    # A scan of a GIN index reads its whole pending list: after a bulk load, until autovacuum
    # merges it, a BM25 term or a metadata filter read up to 4 MB more (revision 0021).
    with database.engine.connect() as connection:
        options = dict(
            connection.execute(
                text(
                    "SELECT i.relname, i.reloptions FROM pg_class AS i "
                    "JOIN pg_am AS a ON a.oid = i.relam "
                    "WHERE a.amname = 'gin' AND i.relnamespace = 'retrieval'::regnamespace"
                )
            ).all()
        )
    assert {"memories_search_vector_idx", "memories_metadata_idx"} <= options.keys()
    for name, reloptions in options.items():
        assert f"gin_pending_list_limit={GIN_PENDING_LIST_KB}" in (reloptions or []), name


def test_a_bulk_load_leaves_a_short_pending_list_to_read(database: PgDatabase) -> None:
    # 3,000 memories of many words in one transaction, autovacuum nowhere near: what a read
    # of the BM25 index must go through past the index proper stays within the limit.
    autocommit = database.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    with autocommit as connection:
        try:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS pgstattuple"))
        except Exception as error:  # a server without the contrib module
            pytest.skip(f"pgstattuple is not installed: {error}")
    with database.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO retrieval.memories "
                "(tenant_id, content, metadata, embedding, embedding_model) "
                "SELECT 'bulk-' || (g % 7), 'note ' || g || ' ' || md5(g::text) || ' ' || "
                "       md5((g + 1)::text) || ' ' || md5((g + 2)::text), "
                "       jsonb_build_object('user', 'u' || (g % 50)), "
                "       array_fill(0.01, ARRAY[384])::vector(384), 'test-constant' "
                "FROM generate_series(1, 3000) AS g"
            )
        )
        pending = dict(
            connection.execute(
                text(
                    "SELECT i.relname, (pgstatginindex(i.oid)).pending_pages FROM pg_class AS i "
                    "WHERE i.relname IN ('memories_search_vector_idx', 'memories_metadata_idx') "
                    "AND i.relnamespace = 'retrieval'::regnamespace"
                )
            ).all()
        )
    page_kb = 8
    for name, pages in pending.items():
        assert pages <= GIN_PENDING_LIST_KB // page_kb + 1, (name, pages)


def test_the_planner_knows_how_many_rows_a_namespace_holds(database: PgDatabase) -> None:
    # A namespace read tests the order of the names with a slice; without statistics of it
    # (revision 0022) the planner priced it at 0.5% of the rows and read a namespace holding
    # every row by a scan and a sort instead of the HNSW graph.
    with database.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO retrieval.memories "
                "(tenant_id, content, namespace, embedding, embedding_model) "
                "SELECT 'lg', 'abstract ' || g, ARRAY['scifact', 'part-' || (g % 3)], "
                "       array_fill(0.01, ARRAY[384])::vector(384), 'test-constant' "
                "FROM generate_series(1, 3000) AS g"
            )
        )
        connection.execute(text("ANALYZE retrieval.memories"))
        for names in (["scifact"], ["scifact", "part-1"]):
            plan = connection.execute(
                text(
                    "EXPLAIN (FORMAT JSON) SELECT id FROM retrieval.memories "
                    "WHERE namespace[1:cardinality(CAST(:names AS text[]))] "
                    "= CAST(:names AS text[])"
                ),
                {"names": names},
            ).scalar_one()
            expected = 3000 if len(names) == 1 else 1000
            estimated = plan[0]["Plan"]["Plan Rows"]
            assert expected / 2 <= estimated <= expected * 2, (names, estimated)
