"""The library on a real Citus cluster: a coordinator and two workers started from an installed
Citus (``tests/citus_cluster.py``), the schema distributed by tenant.

Skipped, with what to install, where no Citus is found (``RETRIEVAL_CITUS_BIN``).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from sqlalchemy import Engine, text

from retrieval.cli.db import role_settings_commands
from retrieval.db.distribute import distribute, distributed_tables
from retrieval.db.engine import make_engine
from retrieval.db.migrate import (
    MigrationSettings,
    current_revision,
    downgrade,
    head_revision,
    upgrade,
)
from retrieval.db.row_security import bind_tenant, grant_application_role
from retrieval.db.schema import ALL_TABLES
from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.errors import ConfigurationError, DatabaseError
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever
from tests.citus_cluster import Cluster, citus_bin, citus_cluster, why_no_citus
from tests.citus_scenario import AS_OF, PEOPLE, Fingerprint, run_scenario
from tests.conftest import PgDatabase

pytestmark = [
    pytest.mark.citus,
    pytest.mark.skipif(citus_bin() is None, reason=why_no_citus()),
]
_schemas = itertools.count()
# Every statement the library sends on these connections must go to one shard.
ONE_SHARD = "options=-c%20citus.multi_task_query_log_level%3Derror"
# ... and every command the coordinator sends a worker, written to its log.
LOGGED = "%20".join(
    ("options=-c", "citus.log_remote_commands%3Don", "-c", "log_min_messages%3Dnotice",
     "-c", "citus.multi_task_query_log_level%3Derror")
)  # fmt: skip
RETRIEVAL = str(Path(sys.executable).with_name("retrieval"))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with citus_cluster(workers=2, spare=1) as running:
        yield running


@pytest.fixture
def cluster_engine(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[Engine]:
    engine = make_engine(f"{cluster.url}?{ONE_SHARD}")
    yield engine
    engine.dispose()
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        print(cluster.logs())


def _schema() -> str:
    return f"tenants_{next(_schemas)}"


def _distributed_schema(engine: Engine) -> str:
    schema = _schema()
    settings = MigrationSettings(schema=schema, embedding_dim=384)
    upgrade(engine, settings)
    done = distribute(engine, schema, head=head_revision(), revision=head_revision())
    assert set(done.tables) == set(ALL_TABLES)
    return schema


def _same(one: Fingerprint, other: Fingerprint) -> None:
    assert one.results.keys() == other.results.keys()
    for key, expected in one.results.items():
        found = other.results[key]
        assert [(s, i) for s, i, *_ in found] == [(s, i) for s, i, *_ in expected], key
        for row, wanted in zip(found, expected, strict=True):
            pairs = zip(row[2:], wanted[2:], strict=True)
            assert all(math.isclose(a, b, abs_tol=1e-6) for a, b in pairs), key
    assert other.events == one.events
    assert other.exports == one.exports
    assert other.forgotten == one.forgotten
    assert other.scoped == one.scoped
    for name, rows in one.statistics.items():
        assert other.statistics[name] == rows, name


DEPLOY_NOTES = ("Ann owns the deploy key", "The vault rotates keys monthly")


def _remembered(
    engine: Engine,
    schema: str,
    embedder: SentenceTransformerEmbedder,
    tenants: tuple[str, ...],
    notes: tuple[str, ...] = DEPLOY_NOTES,
) -> None:
    MemoryStore(engine, schema=schema, embedder=embedder).remember_many(
        [{"text": text, "tenant_id": tenant, "created_at": AS_OF}
         for tenant in tenants for text in notes]
    )  # fmt: skip


def _read_logged(
    cluster: Cluster, retriever: HybridRetriever
) -> tuple[list[tuple[str, float]], str]:
    # acme's answer to who owns the deploy key, and what the coordinator sent the workers for
    # it (the engine's connections log their remote commands: LOGGED).
    start = len(cluster.coordinator.log())
    found = retriever.retrieve("Who owns the deploy key?", tenant_id="acme", as_of=AS_OF)
    return [(r.content, round(r.final_score, 6)) for r in found], cluster.coordinator.log()[start:]


def test_the_whole_api_on_a_distributed_schema_equals_one_server(
    cluster: Cluster,
    cluster_engine: Engine,
    database: PgDatabase,
    embedder: SentenceTransformerEmbedder,
    tmp_path: Path,
) -> None:
    schema = _distributed_schema(cluster_engine)
    (tmp_path / "one").mkdir()
    (tmp_path / "cluster").mkdir()
    one_server = run_scenario(database.engine, "retrieval", embedder, tmp_path / "one")
    admin = make_engine(cluster.url)  # reads every tenant's statistics: many shards
    try:
        on_cluster = run_scenario(
            cluster_engine, schema, embedder, tmp_path / "cluster", admin=admin
        )
    finally:
        admin.dispose()
    assert one_server.results["acme|Why did the deploy fail?|semantic"]
    assert one_server.statistics["memory_term_stats"]
    assert one_server.statistics["episodic_postings"]
    scoped = one_server.scoped
    assert scoped["or|people/bob"] == ["Bob moved to Denver", "Bob owns the vault rotation"]
    assert scoped["contains|people"] == ["Bob owns the vault rotation"]
    assert not any("Bob" in fact for fact in scoped["after forgetting bob"])
    assert scoped["mem0 all bob"] == sorted(PEOPLE["bob"])
    assert not any("Bob" in fact for fact in scoped["mem0 all after"])
    assert [event for event, *_ in scoped["mem0 history"]] == ["ADD", "UPDATE"]
    _same(one_server, on_cluster)


def test_distribute_refuses_where_it_cannot_and_a_second_run_has_nothing_to_do(
    cluster: Cluster, database: PgDatabase
) -> None:
    with pytest.raises(ConfigurationError, match="no citus extension"):
        distribute(database.engine, "retrieval", head=head_revision(), revision=head_revision())
    engine = make_engine(cluster.url)
    try:
        schema = _schema()
        settings = MigrationSettings(schema=schema, embedding_dim=384)
        upgrade(engine, settings, "0013")
        with pytest.raises(ConfigurationError, match="run `retrieval db upgrade` first"):
            distribute(engine, schema, head=head_revision(), revision="0013")
        with engine.connect() as connection:
            assert distributed_tables(connection, schema) == set()
        upgrade(engine, settings)
        first = distribute(engine, schema, head=head_revision(), revision=head_revision())
        assert first.changed
        again = distribute(engine, schema, head=head_revision(), revision=head_revision())
        assert not again.changed
        with engine.connect() as connection:
            colocated = connection.execute(
                text(
                    "SELECT count(DISTINCT colocationid) FROM pg_dist_partition "
                    "WHERE logicalrelid::text LIKE :pattern"
                ),
                {"pattern": f"{schema}.%"},
            ).scalar_one()
        assert colocated == 1
        # Down to 0014 (revisions 0018's column, 0017's index and 0016's columns go, 0015's
        # functions stay)
        # works; further is refused first; up again on the distributed tables.
        downgrade(engine, settings, "0014")
        assert current_revision(engine, settings) == "0014"
        with pytest.raises(ConfigurationError, match="distributed by Citus"):
            downgrade(engine, settings, "0012")
        assert current_revision(engine, settings) == "0014"
        upgrade(engine, settings)
        assert current_revision(engine, settings) == head_revision()
    finally:
        engine.dispose()


def test_row_level_security_binds_an_application_role_on_the_workers(
    cluster: Cluster, cluster_engine: Engine, embedder: SentenceTransformerEmbedder
) -> None:
    schema = _distributed_schema(cluster_engine)
    role = f"agent_app_{next(_schemas)}"
    cluster.coordinator.execute(f"CREATE ROLE {role} LOGIN")
    with cluster_engine.begin() as connection:
        grant_application_role(connection, schema, role)
    app = make_engine(
        f"postgresql://{role}@127.0.0.1:{cluster.coordinator.port}/retrieval?{ONE_SHARD}"
    )
    try:
        owner_store = MemoryStore(cluster_engine, schema=schema, embedder=embedder)
        store = MemoryStore(app, schema=schema, embedder=embedder)
        texts = ["The deploy key lives in the vault", "Ann prefers the blue-green deploy"]
        mine = store.remember_many(
            [{"text": text, "tenant_id": tenant, "created_at": AS_OF,
              "metadata": {"topic": "keys" if "key" in text else "people"},
              "namespace": ["ops", "keys"] if "key" in text else ["people"]}
             for tenant in ("alpha", "beta") for text in texts]
        )  # fmt: skip
        decision = store.record_decision(
            tenant_id="alpha", task_id="t", action_type="fix", content="rotate the vault key",
            status="done", created_at=AS_OF,
        )  # fmt: skip
        DocumentStore(store).add(
            DocumentInput(tenant_id="alpha", doc_id="d", chunks=[ChunkInput("vault runbook")])
        )
        with (
            HybridRetriever.from_store(store, background_writes=False) as bound,
            HybridRetriever.from_store(owner_store, background_writes=False) as owner,
        ):
            found = bound.retrieve("rotate the vault key", tenant_id="alpha", as_of=AS_OF)
            again = owner.retrieve("rotate the vault key", tenant_id="alpha", as_of=AS_OF)
            assert [(r.source, r.metadata.get("id"), round(r.final_score, 6)) for r in found] == [
                (r.source, r.metadata.get("id"), round(r.final_score, 6)) for r in again
            ]
            assert {r.metadata["id"] for r in found if r.source == "semantic"} <= set(mine[:2])
            assert any(r.source == "episodic" for r in found)
            assert any(r.source == "documents" for r in found)
            assert [e.id for e in bound.timeline("alpha") if e.item == "decision"] == [decision]
            # A filtered search on the distributed tables, as the bound role.
            filtered = bound.retrieve(
                "deploy", tenant_id="alpha", as_of=AS_OF, filter={"topic": {"$eq": "people"}}
            )
            assert [r.metadata["id"] for r in filtered if r.source == "semantic"] == [mine[1]]
            assert not any(r.source == "episodic" for r in filtered)
            among = bound.retrieve(  # $in, its values bound as a list of JSON values
                "deploy", tenant_id="alpha", as_of=AS_OF, filter={"topic": {"$in": ["people"]}}
            )
            assert [r.metadata["id"] for r in among if r.source == "semantic"] == [mine[1]]
            # A scoped search, and the tenant's namespaces, as the bound role.
            scoped = bound.retrieve("deploy", tenant_id="alpha", as_of=AS_OF, namespace=["ops"])
            assert [r.metadata["id"] for r in scoped] == [mine[0]]
            assert store.namespaces(tenant_id="beta") == [("ops", "keys"), ("people",)]
        # A statement without a tenant filter (many shards) sees only the tenant named.
        anywhere = make_engine(
            f"postgresql://{role}@127.0.0.1:{cluster.coordinator.port}/retrieval"
        )
        with anywhere.begin() as connection:
            bind_tenant(connection, schema, "beta")
            seen = connection.execute(text(f"SELECT tenant_id FROM {schema}.memories")).all()
        anywhere.dispose()
        assert sorted(row[0] for row in seen) == ["beta", "beta"]
        gone = store.forget(tenant_id="alpha", memory_ids=mine)
        assert gone.memory_ids == tuple(mine[:2])
        assert store.forget(tenant_id="beta", namespace=["people"]).memory_ids == (mine[3],)
    finally:
        app.dispose()


def test_settings_every_worker_holds_for_the_role_are_not_sent_with_each_statement(
    cluster: Cluster, cluster_engine: Engine, embedder: SentenceTransformerEmbedder
) -> None:
    schema = _distributed_schema(cluster_engine)
    _remembered(cluster_engine, schema, embedder, ("acme",))
    role = f"reader_{next(_schemas)}"
    cluster.coordinator.execute(f"CREATE ROLE {role} LOGIN SUPERUSER")  # Citus makes it everywhere
    config = RetrievalConfig(record_access=False)

    def read() -> tuple[list[tuple[str, float]], str]:
        engine = make_engine(
            f"postgresql://{role}@127.0.0.1:{cluster.coordinator.port}/retrieval?{LOGGED}"
        )
        store = MemoryStore(engine, schema=schema, embedder=embedder)
        try:
            with HybridRetriever.from_store(store, config=config) as retriever:
                return _read_logged(cluster, retriever)
        finally:
            engine.dispose()

    found, issued = read()
    assert found and 'SET LOCAL "hnsw"."ef_search"' in issued, issued
    # What `retrieval db distribute` tells an operator to run, for this role.
    for command in role_settings_commands(role):
        cluster.coordinator.execute(command)
    again, issued = read()
    assert again == found
    # The read statement goes through the read function, to the worker that holds the tenant.
    assert "SET LOCAL" not in issued and ".read_on_shard(" in issued, issued
    # A value the workers hold that is not the statement's: that setting goes again.
    cluster.coordinator.execute(f"ALTER ROLE {role} SET hnsw.ef_search = '41'")
    third, issued = read()
    assert third == found
    assert 'SET LOCAL "hnsw"."ef_search"' in issued, issued
    assert 'SET LOCAL "hnsw"."iterative_scan"' not in issued


def test_the_mcp_tools_on_a_distributed_schema(cluster: Cluster, cluster_engine: Engine) -> None:
    schema = _distributed_schema(cluster_engine)
    params = StdioServerParameters(
        command=RETRIEVAL,
        args=["--database-url", f"{cluster.url}?{ONE_SHARD}", "--schema", schema, "mcp",
              "--tenant", "acme"],
        env={"HF_HUB_OFFLINE": "1", "PATH": os.environ.get("PATH", "")},
    )  # fmt: skip

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
                result = await session.call_tool(tool, arguments)
                assert not result.is_error, result.content
                assert result.structured_content is not None
                return result.structured_content

            stored = await call("remember", {"text": "The staging database is PostgreSQL 18"})
            decision = await call(
                "record_decision",
                {"action_type": "fix", "content": "rotate the vault key", "status": "done"},
            )
            await call("record_tool_call", {"tool_name": "vault", "decision_id": decision["id"]})
            found = await call("search_memory", {"query": "which postgres runs staging"})
            assert found["results"][0]["id"] == stored["id"]
            events = await call("timeline", {})
            assert {event["item"] for event in events["events"]} == {
                "memory",
                "decision",
                "tool_call",
            }
            assert await call("forget", {"memory_ids": [stored["id"]]}) == {
                "forgotten": [stored["id"]],
                "revived": [],  # it corrected nothing
                "not_found": [],
            }

    asyncio.run(scenario())


def test_a_worker_added_and_shards_rebalanced_while_the_library_reads_and_writes(
    cluster: Cluster, cluster_engine: Engine, embedder: SentenceTransformerEmbedder
) -> None:
    schema = _distributed_schema(cluster_engine)
    store = MemoryStore(cluster_engine, schema=schema, embedder=embedder)
    tenants = [f"tenant-{i}" for i in range(8)]
    store.remember_many(
        [{"text": f"{tenant} keeps note {n}: the deploy key rotates every {n} days",
          "tenant_id": tenant, "created_at": AS_OF} for tenant in tenants for n in range(10)]
    )  # fmt: skip
    query = "how often does the deploy key rotate"

    def ranked(retriever: HybridRetriever, tenant: str) -> list[tuple[int, float]]:
        found = retriever.retrieve(query, tenant_id=tenant, as_of=AS_OF)
        return [(int(r.metadata["id"]), round(r.final_score, 6)) for r in found]

    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        before = {tenant: ranked(retriever, tenant) for tenant in tenants}
        stop = threading.Event()
        failures: list[str] = []
        mismatches: list[tuple[str, Any, Any]] = []
        written: list[str] = []
        reads = 0

        def with_one_retry(call: Any) -> Any:
            try:
                return call()
            except DatabaseError as first:
                time.sleep(0.5)
                try:
                    return call()
                except DatabaseError as second:
                    failures.append(f"{first} / then {second}")
                    return None

        def write() -> None:
            n = 0
            while not stop.is_set():
                tenant = f"writer-{n % 4}"  # the readers' tenants stay as they were
                text_ = f"written during the move {n}"
                remember = functools.partial(store.remember, text_, tenant_id=tenant)
                if with_one_retry(remember) is not None:
                    written.append(text_)
                n += 1

        def read() -> None:
            nonlocal reads
            n = 0
            while not stop.is_set():
                tenant = tenants[n % len(tenants)]
                found = with_one_retry(functools.partial(ranked, retriever, tenant))
                if found is not None:
                    reads += 1
                    if found != before[tenant]:
                        mismatches.append((tenant, found, before[tenant]))
                n += 1

        threads = [threading.Thread(target=write), threading.Thread(target=read)]
        for thread in threads:
            thread.start()
        try:
            time.sleep(1)
            added = cluster.add_worker()
            cluster.coordinator.execute(
                "SELECT rebalance_table_shards(shard_transfer_mode => 'force_logical')"
            )
            time.sleep(1)
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
        moved = cluster.coordinator.execute(
            "SELECT count(*) FROM pg_dist_shard_placement WHERE nodeport = %s", (added.port,)
        )[0][0]
        assert moved > 0, "the rebalance moved no shard to the new worker"
        assert not failures, failures
        assert not mismatches, mismatches[:3]  # results unchanged while shards moved
        assert reads > 0 and written
        after = {tenant: ranked(retriever, tenant) for tenant in tenants}
    stored = cluster.coordinator.execute(  # every shard
        f"SELECT content, count(*) FROM {schema}.memories "
        "WHERE content LIKE 'written during the move %%' GROUP BY content"
    )
    assert sorted(content for content, _ in stored) == sorted(written)  # none lost
    assert all(count == 1 for _, count in stored)  # none duplicated
    assert after == before


def test_an_upgrade_keeps_a_table_of_a_later_revision_distributed(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table a later revision makes is distributed by the upgrade that makes it (here a
    table made by hand stands for it)."""
    from retrieval.db import distribute as distribution

    engine = make_engine(cluster.url)
    try:
        schema = _distributed_schema(engine)
        cluster.coordinator.execute(
            f"CREATE TABLE {schema}.later_notes (tenant_id text NOT NULL, id bigint NOT NULL, "
            "PRIMARY KEY (tenant_id, id))"
        )
        monkeypatch.setattr(distribution, "ALL_TABLES", (*ALL_TABLES, "later_notes"))
        upgrade(engine, MigrationSettings(schema=schema, embedding_dim=384))
        with engine.connect() as connection:
            assert "later_notes" in distributed_tables(connection, schema)
    finally:
        engine.dispose()


def test_a_read_runs_where_its_tenants_shards_are_and_follows_them_when_split(
    cluster: Cluster, cluster_engine: Engine, embedder: SentenceTransformerEmbedder
) -> None:
    schema = _distributed_schema(cluster_engine)
    _remembered(cluster_engine, schema, embedder, ("acme", "globex"))
    engine = make_engine(f"{cluster.url}?{LOGGED}")

    def shard() -> int:
        found = cluster.coordinator.execute(
            "SELECT get_shard_id_for_distribution_column(%s::regclass, 'acme')",
            (f"{schema}.memories",),
        )
        return int(found[0][0])

    store = MemoryStore(engine, schema=schema, embedder=embedder)
    config = RetrievalConfig(record_access=False)
    try:
        with HybridRetriever.from_store(store, config=config) as retriever:
            before = shard()
            first, issued = _read_logged(cluster, retriever)
            # The statement went to the function, naming the tenant's shards.
            assert first and ".read_on_shard(" in issued and f"memories_{before}" in issued
            cluster.coordinator.execute(
                "SELECT isolate_tenant_to_new_shard(%s::regclass, 'acme', 'CASCADE', "
                "shard_transfer_mode => 'block_writes')",
                (f"{schema}.memories",),
            )
            after = shard()
            assert after != before
            # The shards it named are gone: the call goes routed, the same results.
            second, issued = _read_logged(cluster, retriever)
            assert second == first and "issuing WITH" in issued
            # And the next names the new ones.
            third, issued = _read_logged(cluster, retriever)
            assert third == first and f"memories_{after}" in issued
    finally:
        engine.dispose()


def test_a_read_that_fails_on_the_worker_says_why_without_quoting_its_values(
    cluster: Cluster, cluster_engine: Engine, embedder: SentenceTransformerEmbedder
) -> None:
    schema = _distributed_schema(cluster_engine)
    _remembered(cluster_engine, schema, embedder, ("acme",), DEPLOY_NOTES[:1])
    store = MemoryStore(cluster_engine, schema=schema, embedder=embedder)
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        reads = retriever._reads
        failing = (  # divides by zero on the worker, inside the read function
            "SELECT 1 / (length(%(tenant_id)s::text) - 4) AS x, %(question)s::text AS q "
            f'FROM "{schema}".memories'
        )
        params = {"tenant_id": "acme", "question": "What is the secret plan?"}
        with pytest.raises(DatabaseError) as failed:
            reads.execute(failing, params, columns=[("x", "integer"), ("q", "text")])
        message = str(failed.value)
        assert message == (
            "PostgreSQL failed: division by zero (the read statement, run on the node that holds "
            "the tenant's shards)"
        )
        # The same pool reads on: the function's next call answers.
        fine = (
            f'SELECT 1 AS x, %(question)s::text AS q FROM "{schema}".memories '
            "WHERE tenant_id = %(tenant_id)s"
        )
        assert reads.execute(fine, params, columns=[("x", "integer"), ("q", "text")]) == [
            (1, "What is the secret plan?")
        ]


def test_a_read_on_the_shards_is_planned_as_one_server_plans_it(
    cluster: Cluster, cluster_engine: Engine, embedder: SentenceTransformerEmbedder
) -> None:
    schema = _distributed_schema(cluster_engine)
    notes = (*DEPLOY_NOTES, "Deploys go out on Tuesdays")
    _remembered(cluster_engine, schema, embedder, ("acme", "globex", "initech"), notes)
    cluster.coordinator.execute(f"ANALYZE {schema}.memories")  # the shards' statistics
    engine = make_engine(f"{cluster.url}?{LOGGED}")
    store = MemoryStore(engine, schema=schema, embedder=embedder)
    config = RetrievalConfig(record_access=False)
    try:
        with HybridRetriever.from_store(store, config=config) as retriever:
            answers = []
            for _ in range(3):  # the first learns the tenant's size; the next are planned by it
                found, issued = _read_logged(cluster, retriever)
                answers.append(found)
            assert answers[0] and answers[1] == answers[0] and answers[2] == answers[0]
            # A small tenant in its shard: read exactly, on the generic plan the worker keeps.
            assert ".read_on_shard(" in issued and "'force_generic_plan'" in issued, issued
            assert "semantic AS MATERIALIZED" not in issued  # the CTEs a generic plan inlines
    finally:
        engine.dispose()
