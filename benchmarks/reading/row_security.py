"""What row-level security costs: the same reads and writes as the tables' owner (not bound by
the policies) and as an application role (bound), in the same run.

Data: ``retrieve.py``'s read-benchmark tenant (``--rows`` memories, decisions and tool calls of
SciFact titles and sentences, HNSW index built, vacuumed), in a schema of its own.

1. Reads: ``retrieve()`` of the SciFact test claims (query vectors cached first), all sources
   and the semantic source alone, each claim asked as the owner and as the application role in
   turn (alternating which goes first); p50 / p95 per run, medians over ``--runs``, and the
   application's p50 over the owner's.
2. Writes: ``remember_many`` of ``--write-rows`` memories with their vectors, in batches of
   1,000, as the owner (binary ``COPY``) and as the application role (``COPY`` is refused under
   row-level security: staged, then inserted per tenant); rows per second, medians over runs.

Usage: python benchmarks/reading/row_security.py [--rows 100000] [--runs 3] [--queries 300]
       [--write-rows 20000] [--data-dir DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import add_output, percentiles, timed_ms, write_result
from _scifact import AS_OF, TENANT, count, load, load_corpus, noisy_copies
from _server import APPLICATION_ROLE, add_data_dir, bound_role, embedded

from retrieval.db.engine import make_engine
from retrieval.db.migrate import MigrationSettings
from retrieval.db.row_security import row_security_active
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

SETTINGS = MigrationSettings(schema="bench_rls", embedding_dim=384)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--write-rows", type=int, default=20_000)
    add_data_dir(parser)
    add_output(parser)
    args = parser.parse_args()

    bench = embedded(args.data_dir, SETTINGS, prefix="rtv-rls-")
    owner_engine = bench.engine
    embedder = SentenceTransformerEmbedder()
    corpus = load_corpus(embedder, bench.data_dir.parent / "scifact-title-vectors.npy")
    if count(owner_engine, SETTINGS.schema) < args.rows:
        vectors = noisy_copies(corpus.vectors, args.rows, np.random.default_rng(7))
        load(owner_engine, SETTINGS.schema, embedder, corpus, vectors, 1, args.rows)
    app_engine = _application_engine(owner_engine, bench.url)

    owner = MemoryStore(owner_engine, schema=SETTINGS.schema, embedder=embedder)
    app = MemoryStore(app_engine, schema=SETTINGS.schema, embedder=embedder)
    with app_engine.connect() as connection:
        assert row_security_active(connection, SETTINGS.schema), "the role is not bound"
    with owner_engine.connect() as connection:
        assert not row_security_active(connection, SETTINGS.schema)

    results: dict[str, Any] = {
        "settings": {k: str(v) for k, v in vars(args).items()},
    }
    queries = corpus.queries[: args.queries]
    default = RetrievalConfig(record_access=False)
    semantic_only = replace(
        default,
        episodic=replace(default.episodic, enabled=False),
        documents=replace(default.documents, enabled=False),
    )
    for name, config in (("all_sources", default), ("semantic_only", semantic_only)):
        results[name] = read_ab(owner, app, queries, config, args.runs)
        print(json.dumps({name: _brief(results[name])}), flush=True)
    results["writes"] = write_ab(owner, app, corpus.vectors, args.write_rows, args.runs)
    print(json.dumps({"writes": results["writes"]["median"]}), flush=True)
    write_result("row-security", results, args)
    app_engine.dispose()
    owner_engine.dispose()


def _application_engine(owner_engine: Engine, url: str) -> Engine:
    bound_role(owner_engine, SETTINGS.schema)
    return make_engine(url.replace("postgres@", f"{APPLICATION_ROLE}@", 1))


def read_ab(
    owner: MemoryStore,
    app: MemoryStore,
    queries: list[str],
    config: RetrievalConfig,
    runs: int,
) -> dict[str, Any]:
    retrievers = {
        "owner": HybridRetriever.from_store(owner, config=config),
        "application": HybridRetriever.from_store(app, config=config),
    }
    for retriever in retrievers.values():
        for query in queries:  # cache the query vectors, warm the connections
            retriever.retrieve(query, tenant_id=TENANT, as_of=AS_OF)
    same = all(
        [r.metadata.get("id") for r in retrievers["owner"].retrieve(q, tenant_id=TENANT,
                                                                     as_of=AS_OF).results]
        == [r.metadata.get("id") for r in retrievers["application"].retrieve(
            q, tenant_id=TENANT, as_of=AS_OF).results]
        for q in queries[:50]
    )  # fmt: skip
    per_run: dict[str, list[dict[str, float]]] = {name: [] for name in retrievers}
    for run in range(runs):
        times: dict[str, list[float]] = {name: [] for name in retrievers}
        for i, query in enumerate(queries):
            order = list(retrievers) if (i + run) % 2 == 0 else list(reversed(retrievers))
            for name in order:
                times[name].append(
                    timed_ms(retrievers[name].retrieve, query, tenant_id=TENANT, as_of=AS_OF)[1]
                )
        for name in retrievers:
            per_run[name].append(percentiles(times[name]))
    for retriever in retrievers.values():
        retriever.close()
    median = {
        name: {
            "p50_ms": statistics.median(r["p50"] for r in per_run[name]),
            "p95_ms": statistics.median(r["p95"] for r in per_run[name]),
        }
        for name in per_run
    }
    return {
        "runs": per_run,
        "median": median,
        "p50_ratio": median["application"]["p50_ms"] / median["owner"]["p50_ms"],
        "p95_ratio": median["application"]["p95_ms"] / median["owner"]["p95_ms"],
        "same_results_first_50": same,
    }


def write_ab(
    owner: MemoryStore, app: MemoryStore, base: np.ndarray, rows: int, runs: int
) -> dict[str, Any]:
    per_run: dict[str, list[float]] = {"owner": [], "application": []}
    for run in range(runs):
        for name, store in (("owner", owner), ("application", app))[:: 1 if run % 2 else -1]:
            vectors = noisy_copies(base, rows, np.random.default_rng(100 + run))
            started = time.perf_counter()
            for start in range(0, rows, 1000):
                store.remember_many(
                    {
                        "text": f"{name} write {run} row {i}",
                        "tenant_id": f"writes-{name}-{run}",
                        "embedding": vectors[i],
                    }
                    for i in range(start, min(rows, start + 1000))
                )
            per_run[name].append(rows / (time.perf_counter() - started))
    median = {name: statistics.median(values) for name, values in per_run.items()}
    return {
        "rows_per_second": per_run,
        "median": median,
        "ratio": median["application"] / median["owner"],
    }


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "owner_p50_ms": round(result["median"]["owner"]["p50_ms"], 2),
        "application_p50_ms": round(result["median"]["application"]["p50_ms"], 2),
        "p50_ratio": round(result["p50_ratio"], 3),
        "p95_ratio": round(result["p95_ratio"], 3),
        "same_results_first_50": result["same_results_first_50"],
    }


if __name__ == "__main__":
    main()
