"""The read as a function distributed by tenant: what Citus's delegation of the call saves, and
where a cluster's read spends its time.

Citus delegates ``SELECT * FROM f(...)`` to the worker holding the shard of ``f``'s distribution
argument (``create_distributed_function(..., '$k', colocate_with := ..., force_delegation :=
true)``), so the coordinator plans a call instead of the read statement. On the data of
``citus.py`` (``--tenants`` tenants of ``--memories`` memories, as many decisions and tool calls,
loaded and analyzed as there), one server then a coordinator with two workers:

* ``retrieve()`` p50 on each (all sources, one tenant per claim in turn, warm);
* on one server, ``EXPLAIN (ANALYZE, SUMMARY)`` of the commonest statement: planning, execution;
* on the cluster, that statement's text made a SQL function of its parameters (their types from
  ``PREPARE``) with the retriever's settings, distributed by the ``tenant_id`` argument; the
  delegation confirmed (Citus's ``DEBUG1`` "pushing down the function call") and its rows
  compared with the library's; then, claim by claim, the statement as the library routes it
  (its pool) against the delegated call;
* on the worker holding one tenant, the statement and the function called there directly, and
  ``EXPLAIN (ANALYZE, SUMMARY)`` of the statement: Citus's planning, the execution, and within
  it the shard query's own execution (the rest is local execution planning the shard query);
* the same function in PL/pgSQL on a generic plan (``plan_cache_mode`` forced), which would
  plan the statement once per session: whether Citus plans it.

Usage: RETRIEVAL_CITUS_BIN=/path/to/bin python benchmarks/scale/citus_delegation.py
       [--tenants 20] [--memories 1000] [--queries 100] [--repeat 3] [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg
from pgvector.psycopg import register_vector

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
sys.path.insert(0, str(Path(__file__).resolve().parent))  # citus.py's load
from _common import ROOT, add_output, timed_ms, write_result
from _scifact import AS_OF, load_corpus
from citus import (
    CACHE,
    SETTINGS,
    add_data_arguments,
    analyzed,
    ingest,
    loaded_cluster,
    tenant_of,
)
from sqlalchemy import Engine

from retrieval.db import read_pool
from retrieval.db.engine import make_engine
from retrieval.db.migrate import upgrade
from retrieval.db.read_pool import PositionalQuery, positional
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

sys.path.insert(0, str(ROOT))
from tests.citus_cluster import citus_cluster, plain_server

# One statement as the read pool ran it: its text, values, the call's settings and the pool's.
Sent = tuple[str, dict[str, Any], dict[str, str], dict[str, str]]
_ACTUAL = re.compile(r"actual time=[\d.]+\.\.([\d.]+)")


def captured_reads(
    engine: Engine, embedder: SentenceTransformerEmbedder, queries: Sequence[str], tenants: int,
    repeat: int,
) -> tuple[list[Sent], HybridRetriever, float]:  # fmt: skip
    """Each statement the retriever's pool runs for the claims (the first pass), the warm
    retriever, and ``retrieve()``'s p50 over ``repeat`` more passes."""
    sent: list[Sent] = []
    run = read_pool.ReadConnections.execute

    def recording(
        pool: read_pool.ReadConnections, query: str, params: Mapping[str, Any], *,
        settings: Mapping[str, str] | None = None, columns: Any = None,
    ) -> list[tuple[Any, ...]]:  # fmt: skip
        sent.append((query, dict(params), dict(settings or {}), dict(pool.settings)))
        return run(pool, query, params, settings=settings, columns=columns)

    store = MemoryStore(engine, schema=SETTINGS.schema, embedder=embedder)
    retriever = HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False))
    read_pool.ReadConnections.execute = recording  # type: ignore[method-assign]
    try:
        for n, query in enumerate(queries):
            retriever.retrieve(query, tenant_id=tenant_of(n % tenants), as_of=AS_OF)
    finally:
        read_pool.ReadConnections.execute = run  # type: ignore[method-assign]
    times = [
        timed_ms(retriever.retrieve, query, tenant_id=tenant_of(n % tenants), as_of=AS_OF)[1]
        for _ in range(repeat)
        for n, query in enumerate(queries)
    ]
    return sent, retriever, statistics.median(times)


def commonest(sent: list[Sent]) -> tuple[str, list[Sent]]:
    """The statement sent most often, and its sendings."""
    text = Counter(s[0] for s in sent).most_common(1)[0][0]
    return text, [s for s in sent if s[0] == text]


def with_settings(connection: psycopg.Connection[Any], settings: Mapping[str, str]) -> None:
    for name, value in settings.items():
        connection.execute("SELECT set_config(%s, %s, false)", (name, value))


def rows_of(
    connection: psycopg.Connection[Any], text: str | bytes, values: list[Any]
) -> list[tuple[Any, ...]]:
    with psycopg.RawCursor(connection) as cursor:
        cursor.execute(text, values, binary=True)
        return cursor.fetchall()


def explained(
    connection: psycopg.Connection[Any], converted: PositionalQuery, values: list[Any]
) -> dict[str, float]:
    """Planning and execution of one run, and on a cluster the shard query's own execution
    (the first timed node under the task)."""
    plan = [
        line
        for (line,) in rows_of(connection, b"EXPLAIN (ANALYZE, SUMMARY) " + converted.text, values)
    ]
    found: dict[str, float] = {}
    for line in plan:
        if line.startswith("Planning Time"):
            found["planning_ms"] = float(line.split()[2])
        if line.startswith("Execution Time"):
            found["execution_ms"] = float(line.split()[2])
    task = next((i for i, line in enumerate(plan) if "Node: host" in line), None)
    if task is not None:
        inner = next(_ACTUAL.search(line) for line in plan[task:] if _ACTUAL.search(line))
        found["shard_query_ms"] = float(inner[1])  # type: ignore[index]
    return found


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.median(run[key] for run in runs), 2) for key in runs[0]}


def one_server(
    embedder: SentenceTransformerEmbedder, corpus: Any, queries: Sequence[str],
    args: argparse.Namespace,
) -> dict[str, Any]:  # fmt: skip
    with plain_server() as server:
        engine = make_engine(server.url())
        upgrade(engine, SETTINGS)
        ingest(engine, embedder, corpus, args)
        analyzed(server.url())
        sent, retriever, p50 = captured_reads(engine, embedder, queries, args.tenants, args.repeat)
        retriever.close()
        text, sendings = commonest(sent)
        converted = positional(text)
        with psycopg.connect(server.libpq(), autocommit=True) as connection:
            register_vector(connection)
            with_settings(connection, {**sendings[0][3], **sendings[0][2]})
            plans = [explained(connection, converted, converted.values(s[1])) for s in sendings]
        engine.dispose()
    return {"retrieve_p50_ms": round(p50, 2), "statement": median_of(plans)}


def delegated_function(
    connection: psycopg.Connection[Any], name: str, converted: PositionalQuery,
    settings: Mapping[str, str], *, generic: bool,
) -> str:  # fmt: skip
    """The statement as a function of its parameters, distributed by its ``tenant_id``; the
    call that runs it."""
    body = converted.text.decode()
    connection.execute(b"PREPARE probe AS " + converted.text)
    types, columns = connection.execute(
        "SELECT parameter_types::text[], result_types::text[] FROM pg_prepared_statements "
        "WHERE name = 'probe'"
    ).fetchone()  # type: ignore[misc]
    connection.execute("DEALLOCATE probe")
    arguments = ", ".join(f"p{i} {kind}" for i, kind in enumerate(types, 1))
    returned = ", ".join(f"c{i} {kind}" for i, kind in enumerate(columns, 1))
    sets = " ".join(
        f"SET {setting} = '{value}'" for setting, value in settings.items()
        if setting != "plan_cache_mode"
    )  # fmt: skip
    if generic:
        language = "plpgsql"
        sets += " SET plan_cache_mode = 'force_generic_plan'"
        body = f"BEGIN RETURN QUERY {body}; END"
    else:
        language = "sql"
    connection.execute(
        f"CREATE FUNCTION {SETTINGS.schema}.{name}({arguments}) RETURNS TABLE({returned}) "
        f"LANGUAGE {language} STABLE {sets} AS $read$ {body} $read$"
    )
    tenant = converted.names.index("tenant_id") + 1
    connection.execute(
        f"SELECT create_distributed_function('{SETTINGS.schema}.{name}({', '.join(types)})', "
        f"'${tenant}', colocate_with := '{SETTINGS.schema}.memories', force_delegation := true)"
    )
    placeholders = ", ".join(f"${i}" for i in range(1, len(types) + 1))
    return f"SELECT * FROM {SETTINGS.schema}.{name}({placeholders})"


def cluster_side(
    embedder: SentenceTransformerEmbedder, corpus: Any, queries: Sequence[str],
    args: argparse.Namespace,
) -> dict[str, Any]:  # fmt: skip
    found: dict[str, Any] = {}
    with citus_cluster(workers=2) as cluster:
        engine, _ = loaded_cluster(cluster, embedder, corpus, args)
        sent, retriever, p50 = captured_reads(engine, embedder, queries, args.tenants, args.repeat)
        found["retrieve_p50_ms"] = round(p50, 2)
        text, sendings = commonest(sent)
        converted = positional(text)
        settings = {**sendings[0][3], **sendings[0][2]}
        first = converted.values(sendings[0][1])
        with psycopg.connect(cluster.url, autocommit=True) as connection:
            register_vector(connection)
            call = delegated_function(connection, "read_delegated", converted, settings,
                                      generic=False)  # fmt: skip
            generic_call = delegated_function(connection, "read_generic", converted, settings,
                                              generic=True)  # fmt: skip
            with_settings(connection, settings)
            notices: list[str] = []
            connection.add_notice_handler(lambda d: notices.append(str(d.message_primary)))
            connection.execute("SET client_min_messages = debug1")
            delegated_rows = rows_of(connection, call, first)
            connection.execute("SET client_min_messages = notice")
            found["delegated"] = "pushing down the function call" in notices
            library_rows = retriever._reads.execute(text, sendings[0][1], settings=sendings[0][2])
            found["same_rows"] = sorted(map(repr, delegated_rows)) == sorted(
                map(repr, library_rows)
            )
            routed, delegated = [], []
            for _ in range(args.repeat):
                for _, params, call_settings, _ in sendings:
                    values = converted.values(params)
                    delegated.append(timed_ms(rows_of, connection, call, values)[1])
                    routed.append(timed_ms(retriever._reads.execute, text, params,
                                           settings=call_settings)[1])  # fmt: skip
            found["routed_p50_ms"] = round(statistics.median(routed), 2)
            found["delegated_p50_ms"] = round(statistics.median(delegated), 2)
            try:
                rows_of(connection, generic_call, first)
                found["generic_plan"] = "planned"
            except psycopg.Error as error:
                found["generic_plan"] = f"refused: {error.diag.message_primary}"
            tenant = sendings[0][1]["tenant_id"]
            port = connection.execute(
                "SELECT nodeport FROM citus_shards WHERE table_name = %s::regclass "
                "AND shardid = get_shard_id_for_distribution_column(%s, %s::text)",
                (f"{SETTINGS.schema}.memories", f"{SETTINGS.schema}.memories", tenant),
            ).fetchone()[0]  # type: ignore[index]
        worker = next(node for node in cluster.workers if node.port == port)
        own = [s for s in sendings if s[1]["tenant_id"] == tenant]
        with psycopg.connect(worker.libpq(), autocommit=True) as connection:
            register_vector(connection)
            with_settings(connection, settings)
            statement, function, plans = [], [], []
            for _ in range(max(5, args.repeat)):
                for _, params, _, _ in own:
                    values = converted.values(params)
                    statement.append(timed_ms(rows_of, connection, converted.text, values)[1])
                    function.append(timed_ms(rows_of, connection, call, values)[1])
                    plans.append(explained(connection, converted, values))
            found["on_the_worker"] = {
                "calls": len(own),
                "statement_p50_ms": round(statistics.median(statement), 2),
                "function_p50_ms": round(statistics.median(function), 2),
                "statement": median_of(plans),
            }
        retriever.close()
        found["citus"] = cluster.coordinator.execute("SELECT citus_version()")[0][0]
        engine.dispose()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_arguments(parser, tenants=20)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="timed passes over the claims")
    add_output(parser)
    args = parser.parse_args()
    embedder = SentenceTransformerEmbedder()
    corpus = load_corpus(embedder, CACHE)
    queries = corpus.queries[: args.queries]
    results: dict[str, Any] = {"one_server": one_server(embedder, corpus, queries, args)}
    results["cluster"] = cluster_side(embedder, corpus, queries, args)
    one, many = results["one_server"], results["cluster"]
    results["ratios"] = {
        "retrieve_cluster_to_one_server": round(
            many["retrieve_p50_ms"] / one["retrieve_p50_ms"], 2
        ),
        "delegated_to_routed": round(many["delegated_p50_ms"] / many["routed_p50_ms"], 2),
    }
    write_result("citus-delegation", results, args)


if __name__ == "__main__":
    main()
