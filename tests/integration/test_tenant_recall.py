"""A tenant holding 1% of the rows still gets its full top-k, as exact search would rank it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.db import versions
from retrieval.db.vector_index import build_vector_index, drop_vector_index
from retrieval.db.versions import ServerVersions
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.retriever import HybridRetriever
from tests.conftest import PgDatabase, copy_of_template
from tests.harness import PgServer

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "scifact_sample.json"
TENANTS = 100
ROWS = 10_000
K = 10
SEMANTIC_ONLY = RetrievalConfig(
    semantic=SourceConfig(relevance=1.0, recency=0.0, limit=K, half_life_hours=720.0),
    episodic=SourceConfig(
        relevance=0.7, recency=0.3, limit=5, half_life_hours=168.0, enabled=False
    ),
    total_limit=K,
    min_final_score=0.0,
    max_distance=None,
    record_access=False,
    exact_scan_factor=0.0,  # the graph, whatever the tenant's size
)


@pytest.fixture(scope="module")
def spread_database(pg_server: PgServer, template_database: str) -> Iterator[PgDatabase]:
    """The module's database: its tests only read (no access is recorded), so they share it."""
    with copy_of_template(pg_server, template_database) as database:
        yield database


@pytest.fixture(scope="module")
def spread_store(spread_database: PgDatabase, embedder: SentenceTransformerEmbedder) -> MemoryStore:
    """10,000 memories over 100 tenants (1% each): 500 SciFact titles, 20 near-copies of each."""
    database = spread_database
    titles = json.loads(SAMPLE.read_text())["titles"]
    base = embedder.embed(titles)
    rng = np.random.default_rng(3)
    picks = np.arange(ROWS) % len(titles)
    vectors = base[picks] + rng.normal(0, 0.02, size=(ROWS, base.shape[1])).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = MemoryStore(database.engine, schema="retrieval", embedder=embedder)
    drop_vector_index(database.engine, "retrieval")
    store.remember_many(
        MemoryInput(
            text=f"{titles[picks[i]]} ({i})",
            tenant_id=f"t{i % TENANTS:02d}",
            embedding=vectors[i],
        )
        for i in range(ROWS)
    )
    build_vector_index(database.engine, "retrieval")
    return store


def _queries() -> list[str]:
    claims: list[str] = json.loads(SAMPLE.read_text())["claims"]
    return claims


@pytest.mark.parametrize(
    ("plan", "settings"),
    [
        ("planner's choice", {}),
        # No sort allowed: the planner must walk the HNSW graph, the tenant filter inside it.
        ("HNSW iterative scan", {"enable_sort": "off"}),
    ],
)
def test_a_one_percent_tenant_gets_its_full_top_k(
    spread_store: MemoryStore, plan: str, settings: dict[str, str]
) -> None:
    tenant = "t07"
    memories = spread_store.get_memories([i for i in range(1, ROWS + 1)], tenant_id=tenant)
    assert len(memories) == ROWS // TENANTS
    ids = np.array([m.id for m in memories])
    matrix = np.stack([m.embedding for m in memories])
    recalls = []
    with HybridRetriever.from_store(
        spread_store, config=SEMANTIC_ONLY, session_settings=settings
    ) as retriever:
        for query in _queries():
            response = retriever.retrieve(query, tenant_id=tenant)
            vector = spread_store.embedder.embed([query])[0]
            exact = ids[np.argsort(np.linalg.norm(matrix - vector, axis=1))[:K]]
            got = [r.metadata["id"] for r in response]
            assert len(got) == K, plan
            assert {m.id for m in memories} >= set(got)
            recalls.append(len(set(exact.tolist()) & set(got)) / K)
    assert np.mean(recalls) >= 0.95, (plan, recalls)


def test_a_small_tenant_is_read_exactly(spread_store: MemoryStore) -> None:
    # A tenant of 100 in 10,000 rows (100^2 <= 4 x 90 x 10,000) is read through its btree and
    # sorted once the retriever has seen its size: the exact top k, whatever the graph finds.
    # The graph here is made to come up short (a plain HNSW scan, sorts priced out): the first
    # call, before the tenant's size is known, and a factor too small for it, go through it.
    tenant = "t07"
    memories = spread_store.get_memories([i for i in range(1, ROWS + 1)], tenant_id=tenant)
    ids = np.array([m.id for m in memories])
    matrix = np.stack([m.embedding for m in memories]).astype(np.float64)
    # Ranked by distance alone: no BM25 channel, no time fit (a claim may name "7-day-old"),
    # no thread lift.
    config = replace(
        SEMANTIC_ONLY,
        exact_scan_factor=4.0,
        memory_bm25=False,
        time_weight=0.0,
        context_lift=0.0,
    )
    short = {"enable_sort": "off", "hnsw.iterative_scan": "off"}
    with HybridRetriever.from_store(spread_store, config=config, session_settings=short) as got:
        queries = _queries()
        first = got.retrieve(queries[0], tenant_id=tenant)
        for query in queries:
            vector = spread_store.embedder.embed([query])[0]
            distances = dict(
                zip(ids.tolist(), np.linalg.norm(matrix - vector, axis=1), strict=True)
            )
            exact = sorted(distances.values())[:K]
            found = [r.metadata["id"] for r in got.retrieve(query, tenant_id=tenant)]
            # The k nearest, up to the float rounding of near-copies that tie.
            assert sorted(distances[i] for i in found) == pytest.approx(exact, abs=1e-3), query
        large = replace(config, exact_scan_factor=0.0001)  # 100^2 > 0.0001 x 90 x 10,000
        through_graph = [len(got.retrieve(q, tenant_id=tenant, config=large)) for q in queries]
    assert len(first) < K and np.mean(through_graph) < K


def test_without_the_iterative_scan_the_filtered_graph_walk_comes_up_short(
    spread_store: MemoryStore,
) -> None:
    # Why the retriever turns the iterative scan on: a plain HNSW scan stops at ef_search
    # candidates, and only ~1% of them belong to the tenant.
    settings = {"enable_sort": "off", "hnsw.iterative_scan": "off"}
    with HybridRetriever.from_store(
        spread_store, config=SEMANTIC_ONLY, session_settings=settings
    ) as retriever:
        counts = [len(retriever.retrieve(q, tenant_id="t07")) for q in _queries()]
    assert np.mean(counts) < K


def test_without_pgvector_s_iterative_scan_a_small_tenant_is_read_exactly(
    spread_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pgvector 0.7, simulated: the versions the library reads once per engine say 0.7.4, and
    # the server (0.8.6) keeps its iterative scan off, as 0.7 has none. The retriever then sets
    # no iterative scan and reads a tenant that does not hold most of the table exactly, from
    # its first call: the full, exact top k where the graph alone comes up short (above).
    old = ServerVersions(postgres=150018, postgres_text="15.18", pgvector=(0, 7, 4),
                         pgvector_installed=True)  # fmt: skip
    monkeypatch.setitem(versions._KNOWN, spread_store.engine, old)
    tenant = "t07"
    memories = spread_store.get_memories([i for i in range(1, ROWS + 1)], tenant_id=tenant)
    by_id = {m.id: np.asarray(m.embedding, dtype=np.float64) for m in memories}
    config = replace(SEMANTIC_ONLY, exact_scan_factor=4.0, memory_bm25=False, time_weight=0.0,
                     context_lift=0.0)  # fmt: skip
    short = {"enable_sort": "off"}  # sorts priced out: the graph unless told to read exactly
    with HybridRetriever.from_store(
        spread_store, config=config, session_settings=short
    ) as retriever:
        for query in _queries()[:20]:
            vector = spread_store.embedder.embed([query])[0]
            distances = {i: float(np.linalg.norm(v - vector)) for i, v in by_id.items()}
            found = [r.metadata["id"] for r in retriever.retrieve(query, tenant_id=tenant)]
            assert len(found) == K
            exact = sorted(distances.values())[:K]
            assert sorted(distances[i] for i in found) == pytest.approx(exact, abs=1e-3), query
        assert "hnsw.iterative_scan" not in dict(retriever._connections.settings)


def _plans_run(retriever: HybridRetriever) -> tuple[int, int]:
    # The generic and custom plans the read statements ran on, on the pool's next connection
    # (the calls below run one at a time, so each took the same idle connection).
    with retriever._reads._connection() as connection:
        row = connection.execute(
            "SELECT COALESCE(sum(generic_plans), 0), COALESCE(sum(custom_plans), 0) "
            "FROM pg_prepared_statements WHERE statement LIKE '%semantic_nearest%'"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_a_tenant_the_generic_plan_prices_right_runs_on_it(
    spread_database: PgDatabase, spread_store: MemoryStore
) -> None:
    # 100 tenants of 100 memories: a generic plan prices any tenant at 100 memories, the size
    # of each. Once the retriever knows the tenant's size and the estimate, and psycopg has
    # prepared the statement, the statement runs on one plan made once, with the results of a
    # plan made for each call's values (up to the last bit of a float summed in another order).
    with spread_database.engine.begin() as connection:
        connection.exec_driver_sql("ANALYZE retrieval.memories")
    config = replace(SEMANTIC_ONLY, exact_scan_factor=4.0)
    queries = _queries()[:3]
    with HybridRetriever.from_store(spread_store, config=config, max_connections=1) as got:
        custom = [got.retrieve(q, tenant_id="t07") for q in queries]  # unprepared: custom
        assert _plans_run(got) == (0, 0)
        for _ in range(6):
            generic = [got.retrieve(q, tenant_id="t07") for q in queries]
        generic_plans, custom_plans = _plans_run(got)
        assert generic_plans > 0 and custom_plans == 0
        for before, after in zip(custom, generic, strict=True):
            assert [r.content for r in after] == [r.content for r in before]
            assert [r.final_score for r in after] == pytest.approx([r.final_score for r in before])
        # A scope the plan cannot see (here a namespace) is planned for its values.
        for _ in range(7):
            got.retrieve(queries[0], tenant_id="t07", namespace=("nowhere",))
        assert _plans_run(got)[1] > 0


def test_a_statement_planned_for_its_values_is_written_with_every_cte_materialized(
    spread_database: PgDatabase, spread_store: MemoryStore
) -> None:
    # PostgreSQL plans a materialized CTE apart, where it inlines one read once and plans the
    # whole again: a call planned for its values plans in less so, a call on the generic plan
    # (planned once) is sent as it was. Either way the same results.
    with spread_database.engine.begin() as connection:
        connection.exec_driver_sql("ANALYZE retrieval.memories")
    config = replace(SEMANTIC_ONLY, exact_scan_factor=4.0)
    every = {"missing": {"$exists": False}}  # a filter every memory meets: planned for its values
    sent: list[tuple[str, str]] = []
    with HybridRetriever.from_store(spread_store, config=config, max_connections=1) as got:
        execute = got._reads.execute

        def spy(query: str, params: dict[str, object], **options: Any) -> Any:
            sent.append((query, options["settings"]["plan_cache_mode"]))
            return execute(query, params, **options)

        got._reads.execute = spy  # type: ignore[method-assign]
        for query in _queries()[:3]:
            for _ in range(2):  # the first call before the tenant's size is known
                plain = got.retrieve(query, tenant_id="t07")
                scoped = got.retrieve(query, tenant_id="t07", filter=every)
            assert [r.content for r in scoped] == [r.content for r in plain]
            assert [r.final_score for r in scoped] == pytest.approx([r.final_score for r in plain])
    modes = {mode for _, mode in sent}
    assert modes == {"force_generic_plan", "force_custom_plan"}
    for statement, mode in sent:
        inlined = re.search(r"^\w+ AS \(", statement, re.MULTILINE)  # some CTE not materialized
        assert (inlined is None) == (mode == "force_custom_plan")
