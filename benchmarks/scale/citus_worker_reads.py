"""Reading a Citus cluster through a worker: what a read saves by skipping the coordinator.

With Citus's metadata on every node (the default since Citus 11), any worker can answer a query
on the distributed tables; on the worker that holds the tenant's shard the read runs there,
without the coordinator's hop (Citus plans the statement, then its local execution plans the
shard's query). On the data of ``citus.py`` (``--tenants`` tenants of ``--memories`` memories,
as many decisions and tool calls, loaded and analyzed as there), a coordinator and two workers,
the library reading as a role that holds its read settings on every node, ``retrieve()``
through three retrievers, claim by claim in turn (all sources, warm):

* the coordinator (what the library is given: the cluster's URL);
* the worker holding the tenant's shard (``citus_shards``);
* the other worker (which routes the statement as the coordinator does).

First the results of ``--compare`` claims are compared between the coordinator and the holding
worker (the same ids in the same order). Usage:
RETRIEVAL_CITUS_BIN=/path/to/bin python benchmarks/scale/citus_worker_reads.py [--tenants 20]
[--memories 1000] [--queries 200] [--runs 3] [--compare 50] [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
sys.path.insert(0, str(Path(__file__).resolve().parent))  # citus.py's loading
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
from tests.citus_cluster import Cluster, citus_cluster

WAYS = ("coordinator", "the holding worker", "the other worker")


def holders(cluster: Cluster, tenants: int) -> dict[str, int]:
    """The port of the worker holding each tenant's shard of the memories."""
    return {
        tenant_of(n): cluster.coordinator.execute(
            "SELECT nodeport FROM citus_shards"
            " WHERE table_name = %s::regclass"
            " AND shardid = get_shard_id_for_distribution_column(%s, %s::text)",
            (f"{SETTINGS.schema}.memories", f"{SETTINGS.schema}.memories", tenant_of(n)),
        )[0][0]
        for n in range(tenants)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_arguments(parser, tenants=20)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare", type=int, default=50, help="claims whose results compared")
    add_output(parser)
    args = parser.parse_args()

    embedder = SentenceTransformerEmbedder()
    corpus = load_corpus(embedder, CACHE)
    queries = corpus.queries[: args.queries]
    results: dict[str, Any] = {"tenants": args.tenants, "memories": args.memories}
    with citus_cluster(workers=2, spare=0) as cluster:
        engine, _ = loaded_cluster(cluster, embedder, corpus, args)
        hold_read_settings(cluster, HELD)
        urls = {
            "coordinator": cluster.coordinator.url(),
            **{str(w.port): w.url() for w in cluster.workers},
        }
        retrievers = {
            name: HybridRetriever.from_store(
                MemoryStore(
                    make_engine(url.replace("postgres@", f"{HELD}@") + f"?{ONE_SHARD}"),
                    schema=SETTINGS.schema,
                    embedder=embedder,
                ),
                config=RetrievalConfig(record_access=False),
            )
            for name, url in urls.items()
        }
        holding = holders(cluster, args.tenants)
        ports = [str(w.port) for w in cluster.workers]

        def through(node_of: Callable[[str], str]) -> Callable[[str, str], Any]:
            return lambda query, tenant: retrievers[node_of(tenant)].retrieve(
                query, tenant_id=tenant, as_of=AS_OF
            )

        ways = {
            "coordinator": through(lambda tenant: "coordinator"),
            "the holding worker": through(lambda tenant: str(holding[tenant])),
            "the other worker": through(
                lambda tenant: next(p for p in ports if p != str(holding[tenant]))
            ),
        }
        try:
            for n, query in enumerate(queries):  # warm: the vectors cached, plans and pools
                for way in ways.values():
                    way(query, tenant_of(n % args.tenants))
            results["same_results"] = sum(
                [r.metadata.get("id") for r in ways["coordinator"](q, tenant_of(n % args.tenants))]
                == [
                    r.metadata.get("id")
                    for r in ways["the holding worker"](q, tenant_of(n % args.tenants))
                ]
                for n, q in enumerate(queries[: args.compare])
            )
            results["compared"] = min(args.compare, len(queries))
            runs: list[dict[str, float]] = []
            for _ in range(args.runs):
                times: dict[str, list[float]] = {way: [] for way in WAYS}
                for n, query in enumerate(queries):
                    order = WAYS[n % len(WAYS) :] + WAYS[: n % len(WAYS)]
                    for way in order:
                        began = time.perf_counter()
                        ways[way](query, tenant_of(n % args.tenants))
                        times[way].append((time.perf_counter() - began) * 1000)
                runs.append({way: statistics.median(found) for way, found in times.items()})
                print(runs[-1], flush=True)
        finally:
            for retriever in retrievers.values():
                retriever.close()
        results["runs"] = runs
        results["p50_ms"] = {way: statistics.median(run[way] for run in runs) for way in WAYS}
        results["ratio_to_coordinator"] = {
            way: round(results["p50_ms"][way] / results["p50_ms"]["coordinator"], 3) for way in WAYS
        }
        results["citus"] = cluster.coordinator.execute("SELECT citus_version()")[0][0]
        engine.dispose()
    write_result("citus-worker-reads", results, args)


if __name__ == "__main__":
    main()
