"""Throughput of the async retriever against the sync one on threads, 8 calls at a time.

The same tenant of SciFact sentences as ``mcp_search.py`` (``--rows``, stored once in
``--data-dir``), the default config, access recording off. Three ways to keep 8 calls in
flight over the SciFact claims (query vectors cached first):

* ``sync_threads``: 8 threads of a ``ThreadPoolExecutor`` calling ``HybridRetriever.retrieve``
  (what an application without asyncio does);
* ``async``: ``AsyncHybridRetriever.retrieve`` from 8 asyncio tasks (what an asyncio agent
  does; the library runs each call on its bounded thread pool);
* ``sync_sequential``: one call at a time, the baseline of the machine.

The ways alternate within each of ``--runs`` rounds; calls/s is the median over rounds.
Target: the async retriever at least as fast as the threaded sync one.

Usage: python benchmarks/agents/async_retrieve.py [--data-dir DIR] [--rows 3000] [--queries 300]
       [--runs 5] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, write_result
from _scifact import read_queries, sentence_memories

from retrieval.aio import AsyncHybridRetriever
from retrieval.search.retriever import HybridRetriever

TENANT = "mcp-bench"


def sync_threads(retriever: HybridRetriever, queries: list[str], concurrency: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda query: retriever.retrieve(query, tenant_id=TENANT), queries))
    return len(queries) / (time.perf_counter() - started)


def sync_sequential(retriever: HybridRetriever, queries: list[str], _concurrency: int) -> float:
    started = time.perf_counter()
    for query in queries:
        retriever.retrieve(query, tenant_id=TENANT)
    return len(queries) / (time.perf_counter() - started)


def async_tasks(retriever: AsyncHybridRetriever, queries: list[str], concurrency: int) -> float:
    async def run() -> float:
        pending = iter(queries)

        async def worker() -> None:
            for query in pending:
                await retriever.retrieve(query, tenant_id=TENANT)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return len(queries) / (time.perf_counter() - started)

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, help="embedded server data (default: a temp dir)")
    parser.add_argument("--rows", type=int, default=3000, help="memories in the tenant")
    parser.add_argument("--queries", type=int, default=300, help="SciFact claims per round")
    parser.add_argument("--runs", type=int, default=5, help="rounds")
    parser.add_argument("--concurrency", type=int, default=8, help="calls in flight")
    add_output(parser)
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rtv-async-")) / "pg"
    database, store = sentence_memories(data_dir, TENANT, args.rows)
    queries = read_queries()[: args.queries]
    rates: dict[str, list[float]] = {"sync_threads": [], "async": [], "sync_sequential": []}
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        for query in queries:  # vectors cached, statements prepared
            retriever.retrieve(query, tenant_id=TENANT)
        asynchronous = AsyncHybridRetriever(retriever)
        ways: dict[str, Callable[[], float]] = {
            "sync_threads": lambda: sync_threads(retriever, queries, args.concurrency),
            "async": lambda: async_tasks(asynchronous, queries, args.concurrency),
            "sync_sequential": lambda: sync_sequential(retriever, queries, args.concurrency),
        }
        for run in range(args.runs):
            order = list(ways) if run % 2 == 0 else list(reversed(ways))
            for name in order:
                rates[name].append(ways[name]())
                print(f"run {run + 1}: {name} {rates[name][-1]:.1f} calls/s")
        asynchronous.threads.close()
    database.dispose()
    medians = {name: statistics.median(values) for name, values in rates.items()}
    results = {
        "calls_per_second": {name: round(value, 1) for name, value in medians.items()},
        "runs": {name: [round(value, 1) for value in values] for name, values in rates.items()},
        "async_over_sync_threads": round(medians["async"] / medians["sync_threads"], 3),
        "async_over_sequential": round(medians["async"] / medians["sync_sequential"], 3),
    }
    write_result("async-retrieve", results, args)


if __name__ == "__main__":
    main()
