"""One server against a Citus cluster on the same machine and data.

Both from the same PostgreSQL installation (one with the citus extension: ``RETRIEVAL_CITUS_BIN``
or the embedded server's own, as the tests find it, ``tests/citus_cluster.py``) and the same
settings: a plain server, and a coordinator with two workers whose schema ``retrieval db
distribute`` has distributed by tenant. The same data goes to both: ``--tenants`` tenants of
``--memories`` memories each (SciFact titles with their vectors given, as an import would) plus
as many decisions and tool calls, in batches of ``--batch`` rows. Then:

* ingest rows/s on each (the batches timed, the model not involved);
* the loaded tables vacuumed and analyzed (``VACUUM (ANALYZE)``) and every node checkpointed,
  so that the timing does not depend on when autovacuum or the checkpointer reaches them (one
  server and the cluster are timed alike settled); and the pages left in the GIN indexes'
  pending lists (which every scan of the index reads; the vacuum merges them) reported, on the
  cluster summed over the workers' shards;
* ``retrieve()`` p50/p95 over the SciFact claims, each asked of one tenant in turn, all sources
  (``--runs`` runs, median), one server and the cluster side by side (both running, each claim
  asked of each in turn, the order turning claim by claim), and the floor: the bare
  nearest-neighbour statement of the same tenants on a plain psycopg connection, none of the
  library's code. On the cluster the library
  reads as a role that holds the read settings on every node (``ALTER ROLE ... SET``, as
  docs/scale-out.md says), so its statements go alone; the same calls as a role without them,
  whose statements carry them (``SET LOCAL`` in a transaction), are timed in turn with them
  (``retrieve_settings_sent``), and so are the calls of the first role whose read statements
  are routed through the coordinator as any other (``retrieve_routed``), not run through the
  schema's read function on the worker that holds the tenant (docs/scale-out.md); every
  statement on the cluster's connections runs with ``citus.multi_task_query_log_level =
  error``, so a statement touching two shards would fail the benchmark: the shards each call
  touched is one;
* a third worker added (``citus_add_node``) and the shards rebalanced onto it
  (``rebalance_table_shards``, logical replication) while a thread keeps calling ``retrieve()``:
  the rebalance's duration, the calls served meanwhile, their p50 and failures.

On two cores the absolute figures mean little (three servers share them); the ratios to one
server are the result. Usage: python benchmarks/scale/citus.py [--tenants 100] [--memories 1000]
[--runs 3] [--queries 300] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import ROOT, add_output, percentiles, timed_ms, write_result
from _scifact import AS_OF, TOOLS, Corpus, load_corpus, noisy_copies
from pgvector.psycopg import register_vector
from sqlalchemy import Engine

from retrieval.cli.db import role_settings_commands
from retrieval.db.distribute import distribute
from retrieval.db.engine import make_engine
from retrieval.db.local_settings import propagate_to_workers
from retrieval.db.migrate import MigrationSettings, head_revision, upgrade
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.records import DecisionInput, MemoryInput, ToolCallInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

sys.path.insert(0, str(ROOT))
from tests.citus_cluster import Cluster, citus_cluster, plain_server

SETTINGS = MigrationSettings(schema="retrieval", embedding_dim=384)
ONE_SHARD = "options=-c%20citus.multi_task_query_log_level%3Derror"
HELD = "reader"  # the role whose settings every node holds
CACHE = Path(tempfile.gettempdir()) / "rtv-scifact-title-vectors.npy"  # computed once


def tenant_of(i: int) -> str:
    return f"tenant-{i:03d}"


def ingest(
    engine: Engine, embedder: SentenceTransformerEmbedder, corpus: Corpus, args: argparse.Namespace
) -> dict[str, Any]:
    """Every tenant's memories, decisions and tool calls, in batches; rows/s of each kind."""
    store = MemoryStore(engine, schema=SETTINGS.schema, embedder=embedder)
    rows = args.tenants * args.memories
    vectors = noisy_copies(corpus.vectors, rows, np.random.default_rng(5))
    seconds = {"memories": 0.0, "decisions": 0.0, "tool_calls": 0.0}

    def timed(kind: str, write: Callable[[], list[int]]) -> list[int]:
        started = time.perf_counter()
        ids = write()
        seconds[kind] += time.perf_counter() - started
        return ids

    for start in range(0, rows, args.batch):
        span = range(start, min(rows, start + args.batch))
        when = [AS_OF - timedelta(minutes=i % 50_000) for i in span]
        timed("memories", lambda span=span, when=when: store.remember_many(
            MemoryInput(text=f"{corpus.titles[i % len(corpus.titles)]} (note {i})",
                        tenant_id=tenant_of(i % args.tenants), created_at=when[n],
                        embedding=vectors[i])
            for n, i in enumerate(span)
        ))  # fmt: skip
        decisions = timed("decisions", lambda span=span, when=when: store.record_decisions(
            DecisionInput(tenant_id=tenant_of(i % args.tenants), task_id=f"task-{i % 500}",
                          action_type="investigate",
                          content=corpus.sentences[i % len(corpus.sentences)],
                          status="done", created_at=when[n])
            for n, i in enumerate(span)
        ))  # fmt: skip
        timed("tool_calls", lambda span=span, when=when, ids=decisions: store.record_tool_calls(
            ToolCallInput(tenant_id=tenant_of(i % args.tenants), decision_id=ids[n],
                          tool_name=TOOLS[i % len(TOOLS)], params={"limit": i % 50},
                          result=f"{i % 37} results", created_at=when[n])
            for n, i in enumerate(span)
        ))  # fmt: skip
        print(f"  {span.stop} rows of each kind", flush=True)
    return {kind: round(rows / spent, 1) for kind, spent in seconds.items()} | {"rows": rows}


def add_data_arguments(parser: argparse.ArgumentParser, *, tenants: int) -> None:
    """The data's arguments every Citus benchmark takes: ``--tenants`` (default ``tenants``),
    ``--memories`` per tenant, ``--batch`` rows per batch."""
    parser.add_argument("--tenants", type=int, default=tenants)
    parser.add_argument("--memories", type=int, default=1000, help="memories per tenant")
    parser.add_argument("--batch", type=int, default=2000, help="rows per batch")


def loaded_cluster(
    cluster: Cluster, embedder: SentenceTransformerEmbedder, corpus: Corpus,
    args: argparse.Namespace,
) -> tuple[Engine, dict[str, Any]]:  # fmt: skip
    """The cluster's schema migrated and distributed by tenant, the data ingested (rows/s of
    each kind) and analyzed; the engine the library is given (every statement single-shard)."""
    engine = make_engine(f"{cluster.url}?{ONE_SHARD}")
    upgrade(engine, SETTINGS)
    distribute(engine, SETTINGS.schema, head=head_revision(), revision=head_revision())
    rates = ingest(engine, embedder, corpus, args)
    analyzed(cluster.url, [worker.url() for worker in cluster.workers])
    return engine, rates


def analyzed(url: str, workers: list[str] | None = None) -> None:
    """The loaded tables vacuumed and their planner statistics brought up to date (as
    autovacuum would soon after a load; on a cluster Citus does it on every shard), then a
    checkpoint on every node: the timing does not depend on whether autovacuum or the
    checkpointer has reached the load yet (a tenant's exact read is chosen from the table's
    row count in those statistics), and one server and a cluster are timed alike settled."""
    with psycopg.connect(url, autocommit=True) as connection:
        for table in ("memories", "decisions", "tool_calls"):
            connection.execute(f"VACUUM (ANALYZE) {SETTINGS.schema}.{table}")
        connection.execute("CHECKPOINT")
    for worker in workers or ():
        with psycopg.connect(worker, autocommit=True) as connection:
            connection.execute("CHECKPOINT")


def gin_pending_pages(url: str, nodes: list[str] | None = None) -> int | None:
    """The pages in the GIN indexes' pending lists when the reads are timed (each scan of an
    index reads its whole list): the schema's, or on a cluster its shards' on ``nodes``
    (revision 0021 bounds them). None where ``pgstattuple`` is not installed."""
    query = (
        "SELECT COALESCE(sum((pgstatginindex(i.oid)).pending_pages), 0) FROM pg_class AS i "
        "JOIN pg_am AS a ON a.oid = i.relam "
        f"WHERE a.amname = 'gin' AND i.relnamespace = '{SETTINGS.schema}'::regnamespace"
    )
    try:
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
            if not nodes:
                return int(connection.execute(query).fetchone()[0])  # type: ignore[index]
    except psycopg.Error:
        return None
    pages = 0
    for node in nodes:
        with psycopg.connect(node, autocommit=True) as connection:
            connection.execute("SET citus.show_shards_for_app_name_prefixes = '*'")
            pages += int(connection.execute(query).fetchone()[0])  # type: ignore[index]
    return pages


def latency(
    engines: dict[str, Engine], embedder: SentenceTransformerEmbedder, queries: list[str],
    runs: int, tenants: int, *, routed: frozenset[str] = frozenset(),
) -> dict[str, dict[str, Any]]:  # fmt: skip
    """``retrieve()`` p50/p95 of each run through each engine (all sources, one tenant per
    query in turn; with several engines each query goes through all of them, in turn). The
    retrievers of the labels ``routed`` names send their read statements through the
    coordinator as any other, not through the schema's read function."""
    config = RetrievalConfig(record_access=False)
    retrievers = {
        label: HybridRetriever.from_store(
            MemoryStore(engine, schema=SETTINGS.schema, embedder=embedder), config=config
        )
        for label, engine in engines.items()
    }
    for label in routed:  # their pools never ask for the read function
        retrievers[label]._reads._shard_reads = None
    per_run: dict[str, list[dict[str, float]]] = {label: [] for label in engines}
    try:
        for retriever in retrievers.values():  # every query vector cached, connections warm
            for n, query in enumerate(queries):
                retriever.retrieve(query, tenant_id=tenant_of(n % tenants), as_of=AS_OF)
        for _ in range(runs):
            times: dict[str, list[float]] = {label: [] for label in engines}
            for n, query in enumerate(queries):
                order = list(retrievers.items())
                for label, retriever in order[n % len(order) :] + order[: n % len(order)]:
                    times[label].append(
                        timed_ms(
                            retriever.retrieve,
                            query,
                            tenant_id=tenant_of(n % tenants),
                            as_of=AS_OF,
                        )[1]
                    )
            for label, measured in times.items():
                per_run[label].append(percentiles(measured))
    finally:
        for retriever in retrievers.values():
            retriever.close()
    return {
        label: {
            "runs": runs_of,
            "p50_ms": statistics.median(run["p50"] for run in runs_of),
            "p95_ms": statistics.median(run["p95"] for run in runs_of),
        }
        for label, runs_of in per_run.items()
    }


def hold_read_settings(cluster: Cluster, role: str) -> dict[str, str]:
    """Give ``role`` (made here, a superuser as the benchmark's own) the settings the
    retriever's reads need, as docs/scale-out.md says: Citus carries them to every node, and
    the library then sends none of them with a statement. What each worker holds."""
    cluster.coordinator.execute(f"CREATE ROLE {role} LOGIN SUPERUSER")
    for command in role_settings_commands(role):  # what `retrieval db distribute` prints
        cluster.coordinator.execute(command)
    return settings_on_workers(cluster, role)


def settings_on_workers(cluster: Cluster, role: str) -> dict[str, str]:
    """Each worker's ``hnsw.ef_search`` and ``hnsw.iterative_scan`` for a new session of
    ``role``."""
    found = {}
    for worker in cluster.coordinator.execute(
        "SELECT nodename, nodeport FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0"
    ):
        url = f"postgresql://{role}@{worker[0]}:{worker[1]}/retrieval"
        with psycopg.connect(url, autocommit=True) as connection:
            row = connection.execute(
                "SELECT current_setting('hnsw.ef_search', true) || ' / ' || "
                "current_setting('hnsw.iterative_scan', true)"
            ).fetchone()
        found[f"{worker[0]}:{worker[1]}"] = row[0] if row else None
    return found


FLOOR = (
    "SELECT id, embedding <-> $1::vector AS distance FROM retrieval.memories "
    "WHERE tenant_id = $2 ORDER BY distance LIMIT 40"
)


def floor(
    url: str, vectors: np.ndarray, runs: int, tenants: int, *, held: bool = False
) -> dict[str, Any]:
    """The bare operation, none of the library's code: a tenant's 40 nearest memories by one
    statement on a plain psycopg connection (on the cluster with the settings the library
    sends there, as SET LOCAL in one pipelined transaction, unless the role ``held`` them)."""
    per_run = []
    with psycopg.connect(url, autocommit=True) as connection:
        register_vector(connection)
        distributed = propagate_to_workers(connection) and not held
        if not distributed:
            connection.execute("SET hnsw.iterative_scan = relaxed_order")
            connection.execute("SET hnsw.ef_search = 160")

        def once(n: int) -> None:
            params = [vectors[n], tenant_of(n % tenants)]
            if not distributed:
                with psycopg.RawCursor(connection) as cursor:
                    cursor.execute(FLOOR, params, binary=True)
                    cursor.fetchall()
                return
            with connection.pipeline() as pipeline, connection.transaction():
                connection.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                connection.execute("SET LOCAL hnsw.ef_search = 160")
                with psycopg.RawCursor(connection) as cursor:
                    cursor.execute(FLOOR, params, binary=True)
                    pipeline.sync()
                    cursor.fetchall()

        for n in range(len(vectors)):
            once(n)
        for _ in range(runs):
            times = []
            for n in range(len(vectors)):
                times.append(timed_ms(once, n)[1])
            per_run.append(percentiles(times))
    return {"p50_ms": statistics.median(run["p50"] for run in per_run)}


def rebalance(
    cluster: Cluster, engine: Engine, embedder: SentenceTransformerEmbedder, queries: list[str],
    tenants: int,
) -> dict[str, Any]:  # fmt: skip
    """A worker added and the shards moved onto it while a thread keeps reading."""
    store = MemoryStore(engine, schema=SETTINGS.schema, embedder=embedder)
    stop = threading.Event()
    times: list[float] = []
    failures: list[str] = []
    with HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False)) as reader:

        def read() -> None:
            n = 0
            while not stop.is_set():
                started = time.perf_counter()
                try:
                    reader.retrieve(
                        queries[n % len(queries)], tenant_id=tenant_of(n % tenants), as_of=AS_OF
                    )
                    times.append((time.perf_counter() - started) * 1000)
                except Exception as error:  # counted, not raised: the figure is how many
                    failures.append(f"{type(error).__name__}: {error}")
                n += 1

        thread = threading.Thread(target=read)
        thread.start()
        try:
            added = cluster.add_worker()
            started = time.perf_counter()
            cluster.coordinator.execute(
                "SELECT rebalance_table_shards(shard_transfer_mode => 'force_logical')"
            )
            seconds = time.perf_counter() - started
        finally:
            stop.set()
            thread.join(120)
    moved = cluster.coordinator.execute(
        "SELECT count(*) FROM pg_dist_shard_placement WHERE nodeport = %s", (added.port,)
    )[0][0]
    return {
        "seconds": round(seconds, 2),
        "shard_placements_moved": int(moved),
        "reads_served": len(times),
        "reads_p50_ms": round(statistics.median(times), 2) if times else None,
        "failures": len(failures),
        "first_failures": failures[:3],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_arguments(parser, tenants=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=300)
    add_output(parser)
    args = parser.parse_args()

    embedder = SentenceTransformerEmbedder()
    corpus = load_corpus(embedder, CACHE)
    queries = corpus.queries[: args.queries]
    vectors = embedder.embed(queries)
    results: dict[str, Any] = {}
    # Both alive at once, so that their calls are timed side by side, query by query: the ratio
    # is taken at the same moment of the machine, not minutes apart.
    with plain_server() as server, citus_cluster(workers=2, spare=1) as cluster:
        engine = make_engine(server.url())
        upgrade(engine, SETTINGS)
        print("one server: ingest", flush=True)
        results["one_server"] = {"ingest_rows_per_s": ingest(engine, embedder, corpus, args)}
        analyzed(server.url())
        results["one_server"]["gin_pending_pages"] = gin_pending_pages(server.url())
        print("cluster: ingest", flush=True)
        distributed, rates = loaded_cluster(cluster, embedder, corpus, args)
        results["cluster"] = {"ingest_rows_per_s": rates}
        results["cluster"]["gin_pending_pages"] = gin_pending_pages(
            cluster.url, [worker.url() for worker in cluster.workers]
        )
        # The role the library reads as holds its settings on every node (docs/scale-out.md);
        # the benchmark's own role does not, and its statements carry them (SET LOCAL).
        results["cluster"]["settings_on_workers"] = hold_read_settings(cluster, HELD)
        held = make_engine(
            cluster.coordinator.url().replace("postgres@", f"{HELD}@") + f"?{ONE_SHARD}"
        )
        print("both: retrieve(), side by side", flush=True)
        timed = latency(
            {"one server": engine, "held": held, "sent": distributed, "routed": held},
            embedder, queries, args.runs, args.tenants, routed=frozenset({"routed"}),
        )  # fmt: skip
        results["one_server"]["retrieve"] = timed["one server"]
        results["cluster"]["retrieve"] = timed["held"]
        results["cluster"]["retrieve_settings_sent"] = timed["sent"]
        results["cluster"]["retrieve_routed"] = timed["routed"]
        results["one_server"]["floor"] = floor(server.url(), vectors, args.runs, args.tenants)
        results["cluster"]["floor"] = floor(
            cluster.coordinator.url().replace("postgres@", f"{HELD}@"), vectors, args.runs,
            args.tenants, held=True,
        )  # fmt: skip
        engine.dispose()
        results["cluster"]["shards_per_call"] = 1  # else multi_task_query_log_level had failed
        print("cluster: a worker added, shards rebalanced", flush=True)
        results["cluster"]["rebalance"] = rebalance(cluster, held, embedder, queries, args.tenants)
        results["cluster"]["settings_on_workers_after_the_add"] = settings_on_workers(cluster, HELD)
        held.dispose()
        results["cluster"]["citus"] = cluster.coordinator.execute("SELECT citus_version()")[0][0]
        distributed.dispose()
    one, many = results["one_server"], results["cluster"]
    results["ratios_cluster_to_one_server"] = {
        "ingest_memories": round(
            many["ingest_rows_per_s"]["memories"] / one["ingest_rows_per_s"]["memories"], 2
        ),
        "ingest_decisions": round(
            many["ingest_rows_per_s"]["decisions"] / one["ingest_rows_per_s"]["decisions"], 2
        ),
        "retrieve_p50": round(many["retrieve"]["p50_ms"] / one["retrieve"]["p50_ms"], 2),
        "retrieve_p50_settings_sent": round(
            many["retrieve_settings_sent"]["p50_ms"] / one["retrieve"]["p50_ms"], 2
        ),
        "retrieve_p50_routed": round(
            many["retrieve_routed"]["p50_ms"] / one["retrieve"]["p50_ms"], 2
        ),
        "retrieve_p95": round(many["retrieve"]["p95_ms"] / one["retrieve"]["p95_ms"], 2),
        "floor_p50": round(many["floor"]["p50_ms"] / one["floor"]["p50_ms"], 2),
    }
    write_result("citus", results, args)


if __name__ == "__main__":
    main()
