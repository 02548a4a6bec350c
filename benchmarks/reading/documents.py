"""Documents-source latency with 100,000 chunks, against the usual PostgreSQL hybrid recipe.

1. Ours: ``HybridRetriever.retrieve()`` with only the documents source on (BM25 from the write
   path's statistics and the HNSW channel, fused by RRF, in the one statement), for the SciFact
   test claims with their query vectors cached (each query is asked once first); p50 and p95 per
   run, median over runs. Also without the BM25 channel's lossless pruning
   (``bm25_common_share = 1``: every posting of every query term scored).
2. Baseline, measured in the same run on the same chunks: the recipe most PostgreSQL hybrid
   search guides give: ``ts_rank_cd`` over a GIN-indexed tsvector column (top 40) and pgvector's
   HNSW (top 40) as two queries, fused by RRF in Python; on the first ``--baseline-queries``
   claims (it is slow), with ours on the same claims for the ratio.

Data: 20,000 documents of 5 chunks each. A chunk is 5 sentences drawn at random from SciFact's
abstracts (so term statistics look like a real scientific corpus); its vector is a SciFact title
vector (all-MiniLM-L6-v2) with small Gaussian noise (like ``retrieve.py``: the chunks cluster like
real embeddings, without embedding 100,000 texts here). Chunks go through ``DocumentStore.add``
with precomputed embeddings.

Usage: python benchmarks/reading/documents.py [--documents 20000] [--runs 3] [--queries 300]
       [--data-dir DIR] [--json PATH]
``--data-dir`` keeps the embedded server's data (and the loaded chunks) for the next run.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, percentiles, timed_ms, write_result
from _scifact import DATA, DOCUMENTS, TENANT, documents_only, latency, read_queries, stored_chunks
from _server import add_data_dir, embedded
from sqlalchemy import Engine, text
from tqdm import tqdm

from retrieval.db.read_pool import ReadConnections
from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

CHUNKS_PER_DOCUMENT = 5
SENTENCES_PER_CHUNK = 5
BASELINE_DEPTH = 40
RRF_K = 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=20_000, help="5 chunks each")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--baseline-queries", type=int, default=100, help="the baseline is slow: fewer queries"
    )
    add_data_dir(parser)
    add_output(parser)
    args = parser.parse_args()

    bench = embedded(args.data_dir, DOCUMENTS, prefix="rtv-docs-")
    engine = bench.engine
    embedder = SentenceTransformerEmbedder()
    store = MemoryStore(engine, schema=DOCUMENTS.schema, embedder=embedder)
    documents = DocumentStore(store)
    chunks = args.documents * CHUNKS_PER_DOCUMENT
    if stored_chunks(engine) != chunks:
        load(store, documents, embedder, args.documents, bench.data_dir.parent)
    make_baseline_index(engine)
    queries = read_queries()[: args.queries]

    results: dict[str, Any] = {
        "settings": {k: str(v) for k, v in vars(args).items()},
        "chunks": stored_chunks(engine),
    }
    ours = documents_only()
    results["ours"] = latency(store, queries, args.runs, config=ours, access=False)
    results["ours_by_tier"] = by_tier(store, queries, ours)
    results["ours_without_pruning"] = latency(
        store, queries, args.runs, config=replace(ours, bm25_common_share=1.0), access=False
    )
    subset = queries[: args.baseline_queries]
    results["baseline"] = baseline(store, engine, subset, args.runs)
    results["ours_on_baseline_queries_p50_ms"] = latency(
        store, subset, args.runs, config=ours, access=False
    )["p50_ms"]
    results["ratio_p50"] = (
        results["baseline"]["p50_ms"] / results["ours_on_baseline_queries_p50_ms"]
    )
    write_result("documents", results, args)
    engine.dispose()


def load(
    store: MemoryStore,
    documents: DocumentStore,
    embedder: SentenceTransformerEmbedder,
    count: int,
    cache_dir: Path,
) -> None:
    with store.engine.begin() as connection:
        for table in ("documents", "document_corpus", "document_term_stats"):
            connection.execute(text(f"DELETE FROM {DOCUMENTS.schema}.{table}"))
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    sentences = [
        sentence.strip()
        for doc in corpus
        for sentence in re.split(r"(?<=\.)\s+", doc["text"])
        if len(sentence.strip()) > 40
    ]
    cache = cache_dir / "scifact-title-vectors.npy"  # shared with retrieve.py
    if cache.exists():
        vectors = np.load(cache)
    else:
        print(f"embedding {len(corpus)} SciFact titles once (cached in {cache})")
        vectors = embedder.embed([doc["title"].strip() or doc["text"][:120] for doc in corpus])
        np.save(cache, vectors)
    rng = random.Random(5)
    noise = np.random.default_rng(5)
    started = time.perf_counter()
    for n in tqdm(range(count), desc="documents", unit=" docs", disable=None):
        picks = noise.integers(0, len(vectors), size=CHUNKS_PER_DOCUMENT)
        chunk_vectors = vectors[picks] + noise.normal(0.0, 0.02, size=(len(picks), 384))
        chunk_vectors /= np.linalg.norm(chunk_vectors, axis=1, keepdims=True)
        documents.add(
            DocumentInput(
                tenant_id=TENANT,
                doc_id=f"doc-{n}",
                filename=f"doc-{n}.txt",
                chunks=[
                    ChunkInput(
                        " ".join(rng.sample(sentences, SENTENCES_PER_CHUNK)),
                        section_title=f"Section {i + 1}",
                        embedding=chunk_vectors[i].astype(np.float32),
                    )
                    for i in range(CHUNKS_PER_DOCUMENT)
                ],
            )
        )
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        for table in ("documents", "document_chunks", "document_terms", "document_term_stats"):
            connection.execute(text(f"VACUUM ANALYZE {DOCUMENTS.schema}.{table}"))
    print(f"loaded {count} documents in {time.perf_counter() - started:.0f} s", flush=True)


# The baseline's own column and index, as a ts_rank deployment keeps them.
_BASELINE_TABLE = f"""
CREATE TABLE IF NOT EXISTS {DOCUMENTS.schema}.baseline_tsvectors AS
SELECT id, tenant_id, to_tsvector('english', content) AS tsv
FROM {DOCUMENTS.schema}.document_chunks
"""
_BASELINE_INDEX = f"""
CREATE INDEX IF NOT EXISTS baseline_tsvectors_idx
ON {DOCUMENTS.schema}.baseline_tsvectors USING gin (tsv)
"""
_BASELINE_LEXICAL = f"""
WITH q AS (
    SELECT to_tsquery('english', string_agg(quote_literal(lexeme), ' | ')) AS query
    FROM unnest(to_tsvector('english', %(query)s))
)
SELECT v.id FROM {DOCUMENTS.schema}.baseline_tsvectors v, q
WHERE v.tenant_id = %(tenant_id)s AND q.query IS NOT NULL AND v.tsv @@ q.query
ORDER BY ts_rank_cd(v.tsv, q.query, 1) DESC, v.id LIMIT {BASELINE_DEPTH}
"""
_BASELINE_DENSE = f"""
SELECT c.id FROM {DOCUMENTS.schema}.document_chunks c
WHERE c.tenant_id = %(tenant_id)s
ORDER BY c.embedding <-> %(vector)s::vector LIMIT {BASELINE_DEPTH}
"""


def make_baseline_index(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text(_BASELINE_TABLE))
        connection.execute(text(_BASELINE_INDEX))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f"VACUUM ANALYZE {DOCUMENTS.schema}.baseline_tsvectors"))


def by_tier(store: MemoryStore, queries: Sequence[str], config: RetrievalConfig) -> dict[str, Any]:
    """Which tier of the pruned BM25 search answered each query (``bm25_tier`` in the
    results' metadata; "none" when the gate left no chunk), and one timed call per query:
    claims per tier and their median milliseconds."""
    times: dict[str, list[float]] = {}
    with HybridRetriever.from_store(store, config=config) as retriever:
        for query in queries:  # query vectors cached, connection warm
            retriever.retrieve(query, tenant_id=TENANT)
        for query in queries:
            response, elapsed = timed_ms(retriever.retrieve, query, tenant_id=TENANT)
            tier = str(response[0].metadata["bm25_tier"]) if len(response) else "none"
            times.setdefault(tier, []).append(elapsed)
    return {
        tier: {"queries": len(values), "p50_ms": statistics.median(values)}
        for tier, values in sorted(times.items())
    }


def baseline(
    store: MemoryStore, engine: Engine, queries: Sequence[str], runs: int
) -> dict[str, Any]:
    connections = ReadConnections(engine, [("hnsw.ef_search", str(BASELINE_DEPTH))])
    with store.engine.begin() as connection:  # the same cached query vectors as ours
        vectors = {
            query: str(vector.tolist())
            for query, vector in zip(
                queries, store.cache.embed(connection, TENANT, list(queries)), strict=True
            )
        }
    per_run: list[dict[str, float]] = []
    for run in range(runs + 1):  # the first pass warms the caches
        times = []
        for query in queries:
            started = time.perf_counter()
            params = {"query": query, "tenant_id": TENANT, "vector": vectors[query]}
            lexical = [row[0] for row in connections.execute(_BASELINE_LEXICAL, params)]
            dense = [row[0] for row in connections.execute(_BASELINE_DENSE, params)]
            _rrf(lexical, dense)
            times.append((time.perf_counter() - started) * 1000)
        if run:
            per_run.append(percentiles(times))
    connections.close()
    return {
        "queries": len(queries),
        "runs": per_run,
        "p50_ms": statistics.median(r["p50"] for r in per_run),
        "p95_ms": statistics.median(r["p95"] for r in per_run),
    }


def _rrf(*runs: Sequence[int]) -> list[tuple[int, float]]:
    fused: dict[int, float] = {}
    for run in runs:
        for rank, chunk in enumerate(run, start=1):
            fused[chunk] = fused.get(chunk, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


if __name__ == "__main__":
    main()
