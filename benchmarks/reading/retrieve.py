"""Read-path latency, a naive baseline and tenant recall, measured in the same run.

1. Latency: one tenant with 100,000 memories, 100,000 decisions and 100,000 tool calls;
   ``HybridRetriever.retrieve()`` for the SciFact test claims with their query vectors cached
   (each query is asked once first), p50 and p95 per run, median over runs.
2. Naive baseline: the original design's algorithm written plainly (fetch the tenant's rows,
   score every one in Python: distances with numpy, keywords, recency, weights, threshold,
   rank) on the same data and queries.
3. Tenants: the same 100,000 memories spread over 100 tenants (1% each); recall@10 of the
   semantic source against exact search over the tenant's rows, and the rows returned, with the
   planner's own plan and with the HNSW iterative scan forced (``enable_sort = off``).
4. BM25 (``--parts bm25``, not in the default set): the semantic source alone with its BM25
   channel (the default) and without it (``memory_bm25=False``), the two asked each claim in
   turn (alternating which goes first), p50 / p95 per run, median over runs.
5. Throughput (``--parts throughput``, not in the default set): one retriever shared by 1, 2,
   4 and 8 client threads (``--clients``), as a service would share it, each thread asking its
   share of ``--throughput-calls`` claims on the latency part's tenant: calls per second, the
   latency of each call (medians over ``--runs`` rounds), and whether every call returned what
   the same claim returned alone.

Data: SciFact titles (embedded once with all-MiniLM-L6-v2; 100,000 memories are those vectors
with small Gaussian noise, so they cluster like real embeddings), decisions made of abstract
sentences, tool calls with search parameters drawn from titles; timestamps over 90 days.

Usage: python benchmarks/reading/retrieve.py [--rows 100000] [--runs 3] [--queries 300]
       [--naive-queries 5] [--parts latency,naive,tenants,bm25,throughput]
       [--clients 1,2,4,8] [--throughput-calls 600] [--data-dir DIR] [--json PATH]
``--data-dir`` keeps the embedded server's data (and the loaded rows) for the next run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, parts_variant, percentiles, timed_ms, write_result
from _scifact import AS_OF, ONE, SPREAD, TENANT, count, latency, load, load_corpus, noisy_copies
from _server import add_data_dir, embedded
from pgvector.psycopg import register_vector
from sqlalchemy import Engine, text

from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore
from retrieval.search import reference_scores, scoring
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.retriever import HybridRetriever


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows per table")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--naive-queries", type=int, default=5)
    parser.add_argument("--recall-queries", type=int, default=100)
    add_data_dir(parser)
    add_output(parser)
    parser.add_argument(
        "--parts",
        default="latency,naive,tenants",
        help="comma-separated subset of latency, naive, tenants, bm25, throughput "
        "(default: latency, naive, tenants)",
    )
    parser.add_argument("--clients", default="1,2,4,8", help="client threads, comma-separated")
    parser.add_argument("--throughput-calls", type=int, default=600, help="calls per level")
    args = parser.parse_args()
    parts = set(args.parts.split(","))

    bench = embedded(args.data_dir, ONE, SPREAD, prefix="rtv-read-")
    engine = bench.engine
    embedder = SentenceTransformerEmbedder()
    corpus = load_corpus(embedder, bench.data_dir.parent / "scifact-title-vectors.npy")
    rng = np.random.default_rng(7)
    vectors = noisy_copies(corpus.vectors, args.rows, rng)
    for settings, tenants in ((ONE, 1), (SPREAD, 100)):
        if count(engine, settings.schema) != args.rows:
            load(engine, settings.schema, embedder, corpus, vectors, tenants, args.rows)

    results: dict[str, Any] = {}
    queries = corpus.queries[: args.queries]
    store = MemoryStore(engine, schema=ONE.schema, embedder=embedder)
    if "latency" in parts:
        results["latency"] = latency(store, queries, args.runs)
        default = RetrievalConfig(record_access=False)
        results["latency_by_source"] = {
            name: latency(store, queries, args.runs, config=config, access=name == "semantic_only")
            for name, config in (
                (
                    "semantic_only",
                    replace(
                        default,
                        episodic=_off(default.episodic),
                        documents=_off(default.documents),
                    ),
                ),
                (
                    "episodic_only",
                    replace(
                        default,
                        semantic=_off(default.semantic),
                        documents=_off(default.documents),
                    ),
                ),
            )
        }
    if "bm25" in parts:
        results["memory_bm25"] = bm25_latency(store, queries, args.runs)
    if "throughput" in parts:
        results["throughput"] = throughput(
            store,
            queries,
            [int(n) for n in args.clients.split(",")],
            args.throughput_calls,
            args.runs,
        )
    if "naive" in parts:
        results["naive"] = naive(engine, embedder, queries[: args.naive_queries])
        if "latency" in results:
            ours = results["latency"]["p50_ms"]
            results["naive"]["ratio_to_ours_p50"] = results["naive"]["median_ms"] / ours
    if "tenants" in parts:
        spread = MemoryStore(engine, schema=SPREAD.schema, embedder=embedder)
        results["tenants"] = {
            plan: tenant_recall(spread, queries[: args.recall_queries], settings)
            for plan, settings in (("planner", {}), ("hnsw_forced", {"enable_sort": "off"}))
        }
    write_result(
        "retrieve",
        results,
        args,
        variant=parts_variant(args.parts, "latency,naive,tenants"),
    )
    engine.dispose()


def _off(source: SourceConfig) -> SourceConfig:
    return replace(source, enabled=False)


def bm25_latency(store: MemoryStore, queries: Sequence[str], runs: int) -> dict[str, Any]:
    """The semantic source alone with and without its BM25 channel, claim by claim in turn."""
    default = RetrievalConfig(record_access=False)
    alone = replace(default, episodic=_off(default.episodic), documents=_off(default.documents))
    configs = {"with": alone, "without": replace(alone, memory_bm25=False)}
    retrievers = {
        name: HybridRetriever.from_store(store, config=config) for name, config in configs.items()
    }
    floors = ("floor_vector", "floor_vector_and_words")
    per_run: dict[str, list[dict[str, float]]] = {name: [] for name in (*configs, *floors)}
    rows: list[int] = []
    vectors = store.embedder.embed(list(queries))
    bare = _bare_connection(store)
    try:
        for retriever in retrievers.values():
            for query in queries:  # cache every query vector (and warm the connection)
                retriever.retrieve(query, tenant_id=TENANT, as_of=AS_OF)
        for run in range(runs):
            times: dict[str, list[float]] = {name: [] for name in per_run}
            for index, query in enumerate(queries):
                order = list(per_run) if (run + index) % 2 == 0 else list(per_run)[::-1]
                for name in order:
                    started = time.perf_counter()
                    if name in floors:
                        _bare_statement(bare, name, query, vectors[index])
                    else:
                        response = retrievers[name].retrieve(query, tenant_id=TENANT, as_of=AS_OF)
                        if name == "with" and run == 0:
                            rows.append(response.diagnostics.sources["semantic"].candidates)
                    times[name].append((time.perf_counter() - started) * 1000)
            for name in per_run:
                per_run[name].append(percentiles(times[name]))
    finally:
        for retriever in retrievers.values():
            retriever.close()
        bare.close()
    summary: dict[str, Any] = {
        name: {
            "runs": measured,
            "p50_ms": statistics.median(r["p50"] for r in measured),
            "p95_ms": statistics.median(r["p95"] for r in measured),
        }
        for name, measured in per_run.items()
    }
    summary["p50_ratio"] = summary["with"]["p50_ms"] / summary["without"]["p50_ms"]
    summary["p95_ratio"] = summary["with"]["p95_ms"] / summary["without"]["p95_ms"]
    # The floor of any lexical channel kept by PostgreSQL, with none of the library's code: the
    # vector top 40 alone, against it with the rows holding any of the query's words fetched
    # through the same GIN index (capped at the channel's 300, not even scored).
    summary["floor_p50_ratio"] = (
        summary["floor_vector_and_words"]["p50_ms"] / summary["floor_vector"]["p50_ms"]
    )
    summary["mean_candidates_with"] = statistics.mean(rows)
    return summary


_FLOORS = {
    "floor_vector": """
SELECT id FROM {schema}.memories WHERE tenant_id = %(tenant)s
ORDER BY embedding <-> %(vector)s::vector LIMIT 40
""",
    "floor_vector_and_words": """
(SELECT id FROM {schema}.memories WHERE tenant_id = %(tenant)s
 ORDER BY embedding <-> %(vector)s::vector LIMIT 40)
UNION ALL
(SELECT id FROM {schema}.memories
 WHERE tenant_id = %(tenant)s
   AND search_vector @@ replace(plainto_tsquery('english', %(text)s)::text, '&', '|')::tsquery
 LIMIT 300)
""",
}


def _bare_connection(store: MemoryStore) -> Any:
    # A plain psycopg connection with the read path's HNSW settings and nothing of the library.
    url = store.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    connection = psycopg.connect(url, autocommit=True)
    register_vector(connection)
    connection.execute("SET hnsw.iterative_scan = relaxed_order")
    connection.execute("SET hnsw.ef_search = 40")
    return connection


def _bare_statement(connection: Any, name: str, query: str, vector: np.ndarray) -> None:
    statement = _FLOORS[name].format(schema=f'"{ONE.schema}"')
    connection.execute(statement, {"tenant": TENANT, "vector": vector, "text": query}).fetchall()


Answer = list[tuple[str, str, float]]  # source, content, final score of each result


def throughput(
    store: MemoryStore, queries: Sequence[str], levels: Sequence[int], calls: int, runs: int
) -> dict[str, Any]:
    """Calls per second and per-call latency with ``levels`` client threads sharing one
    retriever, medians over ``runs`` rounds of every level; ``mismatches`` counts calls whose
    results differ from the claim's answer alone."""
    config = RetrievalConfig(record_access=False)
    rounds: dict[int, list[dict[str, float]]] = {clients: [] for clients in levels}
    with HybridRetriever.from_store(store, config=config) as retriever:

        def answer(query: str) -> Answer:
            response = retriever.retrieve(query, tenant_id=TENANT, as_of=AS_OF)
            return [(r.source, r.content, round(r.final_score, 9)) for r in response.results]

        alone = {query: answer(query) for query in queries}  # also caches the query vectors
        for _ in range(runs):
            for clients in levels:
                rounds[clients].append(_clients(answer, alone, queries, clients, calls))
                print(f"{clients} clients: {rounds[clients][-1]}", flush=True)
    results: dict[str, Any] = {"calls_per_level": calls}
    for clients, measured in rounds.items():
        results[str(clients)] = {
            **{
                key: statistics.median(m[key] for m in measured)
                for key in ("calls_per_second", "p50_ms", "p95_ms")
            },
            "mismatches": sum(m["mismatches"] for m in measured),
            "runs": measured,
        }
    return results


def _clients(
    answer: Callable[[str], Answer],
    alone: dict[str, Answer],
    queries: Sequence[str],
    clients: int,
    calls: int,
) -> dict[str, float]:
    # ``calls`` calls shared by ``clients`` threads, all started at once.
    times: list[list[float]] = [[] for _ in range(clients)]
    mismatches = [0] * clients
    start = threading.Barrier(clients + 1)

    def client(index: int) -> None:
        start.wait()
        for call in range(index, calls, clients):
            query = queries[call % len(queries)]
            got, elapsed = timed_ms(answer, query)
            times[index].append(elapsed)
            mismatches[index] += got != alone[query]

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    every = [t for per_client in times for t in per_client]
    return {
        "calls_per_second": len(every) / wall,
        **{f"{k}_ms": v for k, v in percentiles(every).items()},
        "mismatches": sum(mismatches),
    }


def naive(
    engine: Engine, embedder: SentenceTransformerEmbedder, queries: Sequence[str]
) -> dict[str, Any]:
    """The original algorithm, plainly: fetch the tenant's rows, score each in Python."""
    config = RetrievalConfig()
    vectors = embedder.embed(list(queries))  # cached in ours too: not timed
    times = []
    for query, vector in zip(queries, vectors, strict=True):
        started = time.perf_counter()
        with engine.connect() as connection:
            memories = connection.execute(
                text(
                    "SELECT id, content, created_at, embedding FROM bench_one.memories "
                    "WHERE tenant_id = :t"
                ),
                {"t": TENANT},
            ).all()
            decisions = connection.execute(
                text(
                    "SELECT id, content, created_at FROM bench_one.decisions WHERE tenant_id = :t"
                ),
                {"t": TENANT},
            ).all()
            tools = connection.execute(
                text(
                    "SELECT id, tool_name, params::text, created_at FROM bench_one.tool_calls "
                    "WHERE tenant_id = :t"
                ),
                {"t": TENANT},
            ).all()
        keywords = scoring.extract_keywords(query)
        scored = []
        matrix = np.stack([row.embedding.to_numpy() for row in memories])
        distances = np.linalg.norm(matrix - vector, axis=1)
        for row, distance in zip(memories, distances, strict=True):
            scored.append(
                _final(
                    config.semantic,
                    reference_scores.distance_relevance(float(distance)),
                    row,
                    config,
                )
            )
        for row in decisions:
            lowered = row.content.lower()
            matched = sum(1 for k in keywords if k in lowered)
            if matched:
                relevance = scoring.keyword_fraction(matched, len(keywords))
                scored.append(_final(config.episodic, relevance, row, config))
        for row in tools:
            lowered = (row.tool_name + " " + row.params).lower()
            matched = sum(1 for k in keywords if k in lowered)
            if matched:
                relevance = scoring.keyword_fraction(matched, len(keywords))
                scored.append(_final(config.episodic, relevance, row, config))
        kept = sorted((s for s in scored if s >= config.min_final_score), reverse=True)
        kept[: config.total_limit]
        times.append((time.perf_counter() - started) * 1000)
    return {"queries": len(queries), "median_ms": statistics.median(times), "times_ms": times}


def _final(source: SourceConfig, relevance: float, row: Any, config: RetrievalConfig) -> float:
    age = (AS_OF - row.created_at).total_seconds()
    recency = reference_scores.exponential_recency(age, source.half_life_hours * 3600)
    return scoring.weighted_sum(
        {"relevance": relevance, "recency": recency},
        {"relevance": source.relevance, "recency": source.recency},
    )


def tenant_recall(
    store: MemoryStore, queries: Sequence[str], settings: dict[str, str]
) -> dict[str, Any]:
    tenant = "t00"
    with store.engine.connect() as connection:
        rows = connection.execute(
            text(f"SELECT id, embedding FROM {SPREAD.schema}.memories WHERE tenant_id = :t"),
            {"t": tenant},
        ).all()
        share = (
            len(rows)
            / connection.execute(
                text(f"SELECT count(*) FROM {SPREAD.schema}.memories")
            ).scalar_one()
        )
    ids = np.array([row.id for row in rows])
    matrix = np.stack([row.embedding.to_numpy() for row in rows])
    semantic = SourceConfig(relevance=1.0, recency=0.0, limit=10, half_life_hours=720.0)
    episodic = SourceConfig(
        relevance=0.7, recency=0.3, limit=5, half_life_hours=168.0, enabled=False
    )
    # Every one of the k nearest by the vector channel alone (the tenant filter's effect on
    # the HNSW search): no BM25 channel, no threshold, no distance cut-off.
    config = RetrievalConfig(
        semantic=semantic,
        episodic=episodic,
        min_final_score=0.0,
        max_distance=None,
        record_access=False,
        memory_bm25=False,
    )
    recalls, returned = [], []
    with HybridRetriever.from_store(store, config=config, session_settings=settings) as retriever:
        plan = _plan(store.engine, settings, matrix[0])
        for query in queries:
            response = retriever.retrieve(query, tenant_id=tenant, as_of=AS_OF)
            vector = store.cache.remembered(tenant, query)
            assert vector is not None
            exact = set(ids[np.argsort(np.linalg.norm(matrix - vector, axis=1))[:10]].tolist())
            got = {r.metadata["id"] for r in response}
            returned.append(len(got))
            recalls.append(len(exact & got) / 10)
    return {
        "tenant_share": share,
        "tenant_rows": len(rows),
        "queries": len(queries),
        "mean_recall_at_10": statistics.mean(recalls),
        "min_recall_at_10": min(recalls),
        "min_rows_returned": min(returned),
        "plan": plan,
    }


def _plan(engine: Engine, settings: dict[str, str], vector: np.ndarray) -> str:
    with engine.connect() as connection:
        connection.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
        for name, value in settings.items():
            connection.execute(text("SELECT set_config(:n, :v, true)"), {"n": name, "v": value})
        lines = connection.execute(
            text(
                f"EXPLAIN SELECT id FROM {SPREAD.schema}.memories WHERE tenant_id = 't00' "
                "ORDER BY embedding <-> CAST(:v AS vector) LIMIT 40"
            ),
            {"v": str(vector.tolist())},
        ).all()
    return " / ".join(line[0].strip() for line in lines if "Scan" in line[0])


if __name__ == "__main__":
    main()
