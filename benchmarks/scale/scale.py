"""Growth: 100,000 to 1,000,000 memories on one server, in one tenant and over 1,000 tenants.

Two layouts, each grown in steps (``--sizes``, default 100k, 300k, 1M):

* ``one``: every memory in one tenant, which also holds 10,000 decisions and 10,000 tool
  calls (so that "all sources" has an episodic side of fixed size);
* ``spread``: the same memories over 1,000 tenants with a Zipf-like skew (tenant ``k`` holds a
  share proportional to ``1 / (k + 1)``: the largest about 13%, tenant ``s133`` about 0.1%).

At each size: the rows since the last size are stored with ``remember_many`` and their vectors
(bulk ``COPY``) while the HNSW index is dropped, as ``retrieval ingest --defer-index`` does, then
the index is built (seconds), then ``--live-rows`` more rows are stored with the index in place
(rows/s of ingest into a live graph). Then, after ``VACUUM ANALYZE``: bytes per memory on disk
(heap and TOAST, the HNSW index, the other indexes), the server's memory (the proportional set
size, PSS, of the postmaster and its processes, so shared buffers count once), ``retrieve()``
p50/p95 (the SciFact claims, their vectors cached: the semantic source alone and all sources,
median over ``--runs``), and recall@10 of the semantic source's vector channel against an exact
search (numpy over the vectors stored) for the largest tenant and for the 0.1% tenant.

Data: the 44,790 sentences of SciFact's abstracts (40+ characters), embedded once with
all-MiniLM-L6-v2 (cached beside the data directory); memory ``i`` is sentence ``i mod 44,790``
with its number, and past the first 44,790 its vector is the sentence's with Gaussian noise
(sigma 0.01 per dimension, normalized), so the rows cluster as paraphrases do rather than
repeat. The exact search uses those same vectors.

Usage: python benchmarks/scale/scale.py [--sizes 100000,300000,1000000] [--layouts one,spread]
       [--vector-type vector|halfvec] [--runs 3] [--queries 300] [--recall-queries 100]
       [--live-rows 5000] [--data-dir DIR] [--json PATH]
``--data-dir`` keeps the server's data; a later run continues from the rows already there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, percentiles, timed_ms, write_result
from _scifact import AS_OF, KINDS, TOOLS, cached_vectors, load_corpus, memory_vectors, shapes
from sqlalchemy import Engine, text

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.db.vector_index import build_vector_index, drop_vector_index
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.records import DecisionInput, MemoryInput, ToolCallInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.retriever import HybridRetriever

TENANTS = 1000
SMALL_SHARE = 0.001
ONE_TENANT = "one"
BATCH = 5000
EPISODIC_ROWS = 10_000


@dataclass(frozen=True)
class Layout:
    name: str
    schema: str
    tenants: np.ndarray  # tenant number of each row (0 in the one-tenant layout)

    def tenant(self, number: int) -> str:
        return ONE_TENANT if self.name == "one" else f"s{number:03d}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--layouts", default="one,spread")
    parser.add_argument("--vector-type", default="vector", choices=("vector", "halfvec"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--recall-queries", type=int, default=100)
    parser.add_argument("--live-rows", type=int, default=5000)
    parser.add_argument(
        "--ef-search",
        default="",
        help="comma-separated hnsw.ef_search values: recall@10 and semantic p50 of the largest "
        "tenant at each (default: none)",
    )
    parser.add_argument("--data-dir", type=Path, help="keep the server's data here")
    add_output(parser)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rtv-scale-")) / "pg"
    config = DatabaseConfig(data_dir=data_dir)
    database = connect(config)
    engine = database.engine
    embedder = SentenceTransformerEmbedder()
    corpus = load_corpus(embedder, data_dir.parent / "scifact-title-vectors.npy")
    sentences = corpus.sentences
    base = cached_vectors(embedder, sentences, data_dir.parent / "scifact-sentence-vectors.npy")
    vectors = memory_vectors(base, max(sizes))
    rng = np.random.default_rng(5)
    share = 1.0 / np.arange(1, TENANTS + 1)
    share /= share.sum()
    small = int(np.argmin(np.abs(share - SMALL_SHARE)))
    layouts = {
        "one": Layout("one", "scale_one", np.zeros(len(vectors), dtype=np.int64)),
        "spread": Layout("spread", "scale_spread", rng.choice(TENANTS, len(vectors), p=share)),
    }
    suffix = "" if args.vector_type == "vector" else "_half"
    results: dict[str, Any] = {
        "server": _server_settings(engine),
        "sentences": len(sentences),
        "small_tenant_share": float(share[small]),
    }
    queries = corpus.queries[: args.queries]
    for name in args.layouts.split(","):
        layout = replace(layouts[name], schema=layouts[name].schema + suffix)
        settings = MigrationSettings(
            schema=layout.schema, embedding_dim=384, vector_type=args.vector_type
        )
        upgrade(engine, settings)
        engine.dispose()  # connections made before the vector type existed lack its adapter
        store = MemoryStore(engine, schema=layout.schema, embedder=embedder)
        ids = _stored_ids(engine, layout.schema)
        if name == "one":
            _episodic(store, corpus.sentences)
        steps = []
        for size in sizes:
            step: dict[str, Any] = {"size": size}
            if len(ids) < size:
                step |= _grow(engine, store, layout, sentences, vectors, ids, size, args.live_rows)
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                connection.execute(text(f"VACUUM ANALYZE {layout.schema}.memories"))
            step["rows"] = len(ids)
            step["disk"] = _disk(engine, layout.schema, len(ids))
            tenants = _tenants_of(layout, ids)
            largest = layout.tenant(0)
            step["latency"] = {
                shape: _latency(store, queries, largest, config, args.runs)
                for shape, config in _shapes(layout).items()
            }
            if name == "spread":
                step["latency_small_tenant"] = _latency(
                    store, queries, layout.tenant(small), _shapes(layout)["semantic"], args.runs
                )
            step["server_memory"] = _server_memory(database.embedded)
            step["recall"] = {
                label: _recall(store, queries[: args.recall_queries], layout.tenant(number),
                               ids, tenants == number, vectors)
                for label, number in (("largest", 0), ("small", small))
                if name == "spread" or number == 0
            }  # fmt: skip
            if args.ef_search:
                step["ef_search"] = _ef_sweep(
                    store, queries[: args.recall_queries], layout.tenant(0), ids, tenants == 0,
                    vectors, [int(value) for value in args.ef_search.split(",")], args.runs,
                )  # fmt: skip
            steps.append(step)
            print(json.dumps(step, indent=1, default=str), flush=True)
        layout_results = results | {name: {"steps": steps, "growth": _growth(steps)}}
        suffix_name = name if args.vector_type == "vector" else f"{name}-halfvec"
        write_result("scale", layout_results, args, variant=suffix_name)
    database.dispose()


def _stored_ids(engine: Engine, schema: str) -> list[int]:
    """Ids of the memories already stored, in row order (row ``i`` is ``ids[i]``)."""
    with engine.connect() as connection:
        return list(
            connection.execute(text(f"SELECT id FROM {schema}.memories ORDER BY id")).scalars()
        )


def _episodic(store: MemoryStore, sentences: Sequence[str]) -> None:
    with store.engine.connect() as connection:
        have = connection.execute(
            text(f"SELECT count(*) FROM {store.schema}.decisions")
        ).scalar_one()
    if have:
        return
    for start in range(0, EPISODIC_ROWS, BATCH):
        stop = min(EPISODIC_ROWS, start + BATCH)
        decision_ids = store.record_decisions(
            DecisionInput(
                tenant_id=ONE_TENANT,
                task_id=f"task-{i % 500}",
                action_type=("plan", "investigate", "write", "review")[i % 4],
                content=sentences[(i * 13) % len(sentences)],
                status=("done", "open", "failed")[i % 3],
                created_at=AS_OF - timedelta(minutes=7 * i),
            )
            for i in range(start, stop)
        )
        store.record_tool_calls(
            ToolCallInput(
                tenant_id=ONE_TENANT,
                decision_id=decision_ids[i - start],
                tool_name=TOOLS[i % len(TOOLS)],
                params={"query": " ".join(sentences[(i * 7) % len(sentences)].split()[:4])},
                result=f"{i % 37} results",
                created_at=AS_OF - timedelta(minutes=7 * i),
            )
            for i in range(start, stop)
        )


def _grow(
    engine: Engine,
    store: MemoryStore,
    layout: Layout,
    sentences: Sequence[str],
    vectors: np.ndarray,
    ids: list[int],
    size: int,
    live_rows: int,
) -> dict[str, Any]:
    def store_rows(stop: int) -> float:
        began = time.perf_counter()
        start = len(ids)
        if stop <= start:
            return float("nan")
        for first in range(start, stop, BATCH):
            last = min(stop, first + BATCH)
            ids.extend(
                store.remember_many(
                    MemoryInput(
                        text=f"{sentences[i % len(sentences)]} (note {i})",
                        tenant_id=layout.tenant(int(layout.tenants[i])),
                        kind=KINDS[i % len(KINDS)],
                        created_at=AS_OF - timedelta(seconds=(i * 7919) % (90 * 86400)),
                        embedding=vectors[i],
                    )
                    for i in range(first, last)
                )
            )
            print(f"{layout.schema}: {len(ids)} memories", flush=True)
        return (stop - start) / (time.perf_counter() - began)

    drop_vector_index(engine, layout.schema)
    deferred = store_rows(size - live_rows)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f"VACUUM ANALYZE {layout.schema}.memories"))
    build_seconds = build_vector_index(engine, layout.schema)
    print(f"{layout.schema}: index built in {build_seconds:.0f} s", flush=True)
    live = store_rows(size)
    return {
        "ingest_rows_per_s_deferred_index": deferred,
        "index_build_s": build_seconds,
        "ingest_rows_per_s_live_index": live,
        "live_rows": live_rows,
    }


def _disk(engine: Engine, schema: str, rows: int) -> dict[str, float]:
    with engine.connect() as connection:
        heap, total, hnsw = connection.execute(
            text(
                "SELECT pg_table_size(CAST(:m AS regclass)), "
                "pg_total_relation_size(CAST(:m AS regclass)), "
                "pg_relation_size(CAST(:i AS regclass))"
            ),
            {"m": f"{schema}.memories", "i": f"{schema}.memories_embedding_hnsw_idx"},
        ).one()
    return {
        "bytes_per_memory": total / rows,
        "table_bytes_per_memory": heap / rows,
        "hnsw_bytes_per_memory": hnsw / rows,
        "other_index_bytes_per_memory": (total - heap - hnsw) / rows,
        "total_mib": total / 2**20,
    }


def _server_settings(engine: Engine) -> dict[str, str]:
    with engine.connect() as connection:
        return {
            name: connection.execute(text(f"SHOW {name}")).scalar_one()
            for name in (
                "server_version",
                "shared_buffers",
                "maintenance_work_mem",
                "max_parallel_maintenance_workers",
            )
        }


def _server_memory(server: Any) -> dict[str, float]:
    """The server's processes' PSS (shared pages split among the processes that map them)."""
    if server is None:
        return {}
    postmaster = psutil.Process(server.pid)
    processes = [postmaster, *postmaster.children(recursive=True)]
    pss = rss = 0
    for process in processes:
        try:
            info = process.memory_full_info()
        except psutil.Error:
            continue
        pss += info.pss
        rss += info.rss
    return {"pss_mib": pss / 2**20, "largest_rss_mib": rss / 2**20, "processes": len(processes)}


def _shapes(layout: Layout) -> dict[str, RetrievalConfig]:
    # The semantic source alone, and (one tenant, which has decisions and tool calls) all sources.
    every = shapes()
    names = ("semantic",) if layout.name == "spread" else ("semantic", "all sources")
    return {name: every[name] for name in names}


def _latency(
    store: MemoryStore, queries: Sequence[str], tenant: str, config: RetrievalConfig, runs: int
) -> dict[str, Any]:
    per_run = []
    with HybridRetriever.from_store(store, config=config) as retriever:
        for query in queries:  # cache every query vector (and warm the connection)
            retriever.retrieve(query, tenant_id=tenant, as_of=AS_OF)
        for _ in range(runs):
            times = []
            for query in queries:
                times.append(timed_ms(retriever.retrieve, query, tenant_id=tenant, as_of=AS_OF)[1])
            per_run.append(percentiles(times))
    return {
        "p50_ms": statistics.median(r["p50"] for r in per_run),
        "p95_ms": statistics.median(r["p95"] for r in per_run),
        "runs": per_run,
    }


def _tenants_of(layout: Layout, ids: list[int]) -> np.ndarray:
    return layout.tenants[: len(ids)]


def _recall(
    store: MemoryStore,
    queries: Sequence[str],
    tenant: str,
    ids: list[int],
    mine: np.ndarray,
    vectors: np.ndarray,
    ef_search: int | None = None,
) -> dict[str, Any]:
    """Recall@10 of the semantic source's vector channel (no BM25 channel, no threshold, no
    distance cut-off) against the exact 10 nearest of the tenant's stored vectors."""
    rows = np.flatnonzero(mine)
    tenant_ids = np.asarray(ids)[rows]
    matrix = vectors[rows]
    off = SourceConfig(relevance=0.7, recency=0.3, limit=5, half_life_hours=168.0, enabled=False)
    config = RetrievalConfig(
        semantic=SourceConfig(relevance=1.0, recency=0.0, limit=10, half_life_hours=720.0),
        episodic=off,
        documents=replace(off, limit=5),
        min_final_score=0.0,
        max_distance=None,
        record_access=False,
        memory_bm25=False,
    )
    if ef_search is not None:
        config = replace(config, ef_search=ef_search)
    recalls = []
    with HybridRetriever.from_store(store, config=config) as retriever:
        for query in queries:
            got = {
                r.metadata["id"] for r in retriever.retrieve(query, tenant_id=tenant, as_of=AS_OF)
            }
            vector = store.cache.remembered(tenant, query)
            assert vector is not None
            # Unit vectors: the nearest by L2 distance are those of the largest dot product.
            nearest = np.argsort(-(matrix @ vector))[:10]
            recalls.append(len(got & set(tenant_ids[nearest].tolist())) / 10)
    return {
        "tenant": tenant,
        "tenant_rows": len(rows),
        "queries": len(queries),
        "mean_recall_at_10": statistics.mean(recalls),
        "min_recall_at_10": min(recalls),
    }


def _ef_sweep(
    store: MemoryStore,
    queries: Sequence[str],
    tenant: str,
    ids: list[int],
    mine: np.ndarray,
    vectors: np.ndarray,
    values: Sequence[int],
    runs: int,
) -> dict[int, dict[str, float]]:
    """Recall@10 (the vector channel against exact search) and the semantic source's p50
    with each ``hnsw.ef_search``."""
    semantic = _shapes(Layout("spread", "", np.zeros(0)))["semantic"]
    sweep = {}
    for value in values:
        recall = _recall(store, queries, tenant, ids, mine, vectors, ef_search=value)
        latency = _latency(store, queries, tenant, replace(semantic, ef_search=value), runs)
        sweep[value] = {
            "mean_recall_at_10": recall["mean_recall_at_10"],
            "semantic_p50_ms": latency["p50_ms"],
            "semantic_p95_ms": latency["p95_ms"],
        }
        print(f"ef_search {value}: {sweep[value]}", flush=True)
    return sweep


def _growth(steps: list[dict[str, Any]]) -> dict[str, float]:
    first, last = steps[0], steps[-1]
    return {
        f"{shape}_p50": last["latency"][shape]["p50_ms"] / first["latency"][shape]["p50_ms"]
        for shape in first["latency"]
    } | {"from_rows": first["rows"], "to_rows": last["rows"]}


if __name__ == "__main__":
    main()
