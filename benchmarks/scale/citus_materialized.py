"""The read statement on a Citus cluster with its CTEs as one server writes them, and with every
CTE materialized: the bare statement through the coordinator, the same rows.

Citus plans a call's statement on its coordinator (PostgreSQL's planner, then its own router
planning) and the worker plans the shard's query again; a CTE written ``AS MATERIALIZED`` is
planned apart, where one read once is inlined into the query that reads it. On the data of
``citus.py`` (``--tenants`` tenants of ``--memories`` memories, as many decisions and tool
calls, loaded, vacuumed and analyzed), each SciFact claim's statement is captured from a
retriever that reads as one server writes the statement, then run bare by psycopg through the
coordinator both ways (as a role that holds the read settings, so that none is sent), the two
in turn claim by claim, the order alternating, after a pass that checks the rows are the same:
p50 of each over ``--runs`` passes.

Usage: RETRIEVAL_CITUS_BIN=/path/to/bin python benchmarks/scale/citus_materialized.py
       [--tenants 20] [--memories 1000] [--queries 100] [--runs 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
sys.path.insert(0, str(Path(__file__).resolve().parent))  # citus.py's loading
from _captured import captured
from _common import ROOT, add_output, write_result
from _scifact import AS_OF, load_corpus
from citus import (
    CACHE,
    HELD,
    ONE_SHARD,
    SETTINGS,
    add_data_arguments,
    hold_read_settings,
    loaded_cluster,
    tenant_of,
)

from retrieval.db.engine import make_engine
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

sys.path.insert(0, str(ROOT))
from tests.citus_cluster import citus_cluster

WAYS = ("as one server writes it", "every CTE materialized")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_arguments(parser, tenants=20)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    add_output(parser)
    args = parser.parse_args()

    import psycopg
    from pgvector.psycopg import register_vector

    embedder = SentenceTransformerEmbedder()
    corpus = load_corpus(embedder, CACHE)
    queries = corpus.queries[: args.queries]
    results: dict[str, Any] = {"tenants": args.tenants, "memories": args.memories}
    with citus_cluster(workers=2, spare=0) as cluster:
        loaded_cluster(cluster, embedder, corpus, args)
        hold_read_settings(cluster, HELD)
        url = cluster.coordinator.url().replace("postgres@", f"{HELD}@")
        store = MemoryStore(
            make_engine(f"{url}?{ONE_SHARD}"), schema=SETTINGS.schema, embedder=embedder
        )
        statements: dict[str, list[tuple[bytes, Any]]] = {way: [] for way in WAYS}
        with HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False)) as r:
            for n, query in enumerate(queries):
                for way in WAYS:
                    sent = captured(r, query, tenant_of(n % args.tenants), AS_OF, warm=True,
                                    materialized=way != WAYS[0])  # fmt: skip
                    statements[way].append((sent.text, sent.values))
        with psycopg.connect(url, autocommit=True) as connection:
            register_vector(connection)
            cursor = psycopg.RawCursor(connection)

            def rows(way: str, index: int) -> list[Any]:
                return cursor.execute(*statements[way][index]).fetchall()

            results["same_rows"] = sum(
                rows(WAYS[0], n) == rows(WAYS[1], n) for n in range(len(queries))
            )
            results["compared"] = len(queries)
            runs: list[dict[str, float]] = []
            for number in range(args.runs):
                times: dict[str, list[float]] = {way: [] for way in WAYS}
                for n in range(len(queries)):
                    for way in WAYS if (n + number) % 2 == 0 else WAYS[::-1]:
                        began = time.perf_counter()
                        rows(way, n)
                        times[way].append((time.perf_counter() - began) * 1000)
                runs.append({way: statistics.median(found) for way, found in times.items()})
                print(runs[-1], flush=True)
    results["runs"] = runs
    results["p50_ms"] = {way: statistics.median(run[way] for run in runs) for way in WAYS}
    results["ratio"] = round(results["p50_ms"][WAYS[1]] / results["p50_ms"][WAYS[0]], 3)
    write_result("citus-materialized", results, args)


if __name__ == "__main__":
    main()
