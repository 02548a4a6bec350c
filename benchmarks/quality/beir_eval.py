"""Retrieval quality on a BEIR dataset: our BM25, ts_rank_cd, dense, and their fusions.

Ingests the corpus through the public API (``DocumentStore.add``: one document per corpus
entry, title and text as one chunk, like Anserini's "flat" index), then for every query of the
test qrels ranks the documents by

* ``bm25``: Okapi BM25 in SQL from the write path's statistics (k1 = 1.2, b = 0.75);
* ``ts_rank``: PostgreSQL's ``ts_rank_cd`` over the same lexemes (an OR of the query's terms,
  normalization 1: divided by 1 + log(length)), from stored tsvectors; ``ts_rank_plain`` the
  same with ``ts_rank``, the function of the published PostgreSQL baselines;
* ``dense``: L2 distance of all-MiniLM-L6-v2 embeddings on the HNSW index;
* fusions of ``bm25`` and ``dense`` over their top 100: ``rrf`` (k = 60, normalized by its
  maximum), ``convex`` (0.5 * min-max BM25 + 0.5 * min-max dense similarity), ``max`` and
  ``cascade`` (normalized BM25 when >= 0.7, else the dense score); ``hybrid`` is the default
  fusion (RRF).

and reports nDCG@10, recall@10 and recall@100 (BEIR's definitions: graded gains, log2 discount,
recall over the judged relevant documents). ``retrieve ...`` rows rank by the documents source
of ``HybridRetriever.retrieve()`` (``limit=100``, the other sources off): with the defaults
(threshold and evidence gate on), and by relevance alone for each fusion and BM25 (k1, b).

Usage: python benchmarks/quality/beir_eval.py DATASET_DIR [--json PATH] [--data-dir DIR]
           [--split test]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, timed_ms, write_result
from _scifact import abstract_text, evaluate, read_qrels
from _server import add_data_dir, embedded
from sqlalchemy import text
from tqdm import tqdm

from retrieval.db.migrate import MigrationSettings
from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore
from retrieval.search import reference_scores, scoring
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

SETTINGS = MigrationSettings(schema="beir", embedding_dim=384)
AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
FUSIONS = ("convex", "max", "cascade", "rrf")
BM25_PARAMETERS = ((0.9, 0.4), (1.2, 0.75))
TENANT = "beir"
DEPTH = 100
Ranking = list[tuple[str, float]]  # (doc_id, score), best first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "dataset", type=Path, help="BEIR layout: corpus.jsonl, queries.jsonl, qrels/"
    )
    parser.add_argument("--split", default="test")
    add_output(parser)
    add_data_dir(parser)
    args = parser.parse_args()

    engine = embedded(args.data_dir, SETTINGS, prefix="rtv-beir-").engine
    store = MemoryStore(engine, schema=SETTINGS.schema, embedder=SentenceTransformerEmbedder())
    documents = DocumentStore(store)

    corpus = [json.loads(line) for line in (args.dataset / "corpus.jsonl").open()]
    queries = {
        q["_id"]: q["text"] for q in map(json.loads, (args.dataset / "queries.jsonl").open())
    }
    qrels = read_qrels(args.dataset / "qrels" / f"{args.split}.tsv")
    started = time.perf_counter()
    ingest(store, documents, corpus)
    ingest_seconds = time.perf_counter() - started
    doc_of = chunk_documents(engine)

    make_tsvectors(engine)
    channels: dict[str, dict[str, Ranking]] = {
        "bm25": {},
        "ts_rank": {},
        "ts_rank_plain": {},
        "dense": {},
    }
    timings: dict[str, list[float]] = {name: [] for name in channels}
    for query_id in tqdm(sorted(qrels), desc="queries", unit=" queries", disable=None):
        query = queries[query_id]
        for name, search in (
            ("bm25", lambda q: bm25(documents, q)),
            ("ts_rank", lambda q: ts_rank(engine, q)),
            ("ts_rank_plain", lambda q: ts_rank(engine, q, "ts_rank")),
            ("dense", lambda q: dense(documents, q)),
        ):
            ranking, elapsed = timed_ms(search, query)
            timings[name].append(elapsed)
            channels[name][query_id] = [(doc_of[chunk], score) for chunk, score in ranking]

    fusions: dict[str, Callable[[Ranking, Ranking], Ranking]] = {
        "rrf": fuse_rrf,
        "convex": fuse_convex,
        "max": fuse_max,
        "cascade": fuse_cascade,
    }
    runs: dict[str, dict[str, Ranking]] = dict(channels)
    for name, fuse in fusions.items():
        runs[name] = {q: fuse(channels["bm25"][q], channels["dense"][q]) for q in qrels}
    runs["hybrid"] = runs["rrf"]
    runs.update(retrieve_runs(store, queries, sorted(qrels), doc_of))
    table: dict[str, Any] = {name: evaluate(run, qrels) for name, run in runs.items()}
    table["_meta"] = {
        "dataset": str(args.dataset),
        "split": args.split,
        "documents": len(corpus),
        "queries": len(qrels),
        "ingest_seconds": round(ingest_seconds, 1),
        "median_query_ms": {k: round(statistics.median(v), 2) for k, v in timings.items()},
        "hybrid": "rrf",
    }
    for name, metrics in table.items():
        if not name.startswith("_"):
            print(f"{name:<8} " + "  ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
    write_result("beir-scifact", table, args)


def retrieve_runs(
    store: MemoryStore, queries: Mapping[str, str], query_ids: Sequence[str], doc_of: dict[int, str]
) -> dict[str, dict[str, Ranking]]:
    """The documents source through ``retrieve()``: the defaults, then relevance alone by each
    fusion and BM25 parameters."""
    default = RetrievalConfig(record_access=False)
    default = replace(
        default,
        semantic=replace(default.semantic, enabled=False),
        episodic=replace(default.episodic, enabled=False),
    )
    alone = replace(
        default,
        documents=replace(default.documents, relevance=1.0, recency=0.0),
        min_final_score=0.0,
        max_distance=None,
    )
    configs = {"retrieve defaults": default}
    for fusion in FUSIONS:
        configs[f"retrieve {fusion}, relevance alone"] = replace(alone, fusion=fusion)
    for k1, b in BM25_PARAMETERS:
        configs[f"retrieve {alone.fusion} k1 {k1} b {b}, relevance alone"] = replace(
            alone, bm25_k1=k1, bm25_b=b
        )
    runs: dict[str, dict[str, Ranking]] = {}
    for name, config in configs.items():
        with HybridRetriever.from_store(store, config=config) as retriever:
            runs[name] = {
                query_id: [
                    (doc_of[result.metadata["id"]], result.final_score)
                    for result in retriever.retrieve(
                        queries[query_id], tenant_id=TENANT, as_of=AS_OF, limit=DEPTH
                    )
                ]
                for query_id in query_ids
            }
    return runs


def ingest(store: MemoryStore, documents: DocumentStore, corpus: Sequence[dict[str, Any]]) -> None:
    texts = [abstract_text(doc) for doc in corpus]
    with store.engine.connect() as connection:
        stored = connection.execute(
            text(f"SELECT count(*) FROM {SETTINGS.schema}.documents WHERE tenant_id = :t"),
            {"t": TENANT},
        ).scalar_one()
    if stored == len(corpus):
        return
    batch = 64
    with tqdm(total=len(texts), desc="embed", unit=" docs", disable=None) as bar:
        for start in range(0, len(texts), batch):
            with store.engine.begin() as connection:  # fills the hashed cache
                store.cache.embed(connection, TENANT, texts[start : start + batch])
            bar.update(len(texts[start : start + batch]))
    for doc, body in tqdm(
        list(zip(corpus, texts, strict=True)), desc="store", unit=" docs", disable=None
    ):
        documents.add(DocumentInput(tenant_id=TENANT, doc_id=doc["_id"], chunks=[ChunkInput(body)]))


def chunk_documents(engine: Any) -> dict[int, str]:
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                f"SELECT c.id, d.doc_id FROM {SETTINGS.schema}.document_chunks c "
                f"JOIN {SETTINGS.schema}.documents d "
                "ON d.tenant_id = c.tenant_id AND d.id = c.document_id WHERE c.tenant_id = :t"
            ),
            {"t": TENANT},
        ).all()
    return {int(chunk): str(doc) for chunk, doc in rows}


def bm25(documents: DocumentStore, query: str) -> list[tuple[int, float]]:
    return documents.bm25(query, tenant_id=TENANT, limit=DEPTH)


def dense(documents: DocumentStore, query: str) -> list[tuple[int, float]]:
    # Similarity 1 / (1 + d), the product's relevance of a distance.
    return [
        (chunk, reference_scores.distance_relevance(distance))
        for chunk, distance in documents.dense(query, tenant_id=TENANT, limit=DEPTH)
    ]


# The baseline ranks from stored tsvectors, as a ts_rank deployment would (a GIN-indexed
# column); the harness makes them once in a table of its own.
_TSVECTORS = f"""
CREATE TABLE IF NOT EXISTS {SETTINGS.schema}.beir_tsvectors AS
SELECT id, to_tsvector('english', content) AS tsv FROM {SETTINGS.schema}.document_chunks
WHERE tenant_id = '{TENANT}';
CREATE INDEX IF NOT EXISTS beir_tsvectors_idx ON {SETTINGS.schema}.beir_tsvectors USING gin (tsv)
"""
_TS_RANK = f"""
WITH q AS (
    SELECT to_tsquery('english', string_agg(quote_literal(lexeme), ' | ')) AS query
    FROM unnest(to_tsvector('english', :query))
)
SELECT v.id, {{function}}(v.tsv, q.query, 1) AS rank
FROM {SETTINGS.schema}.beir_tsvectors v, q
WHERE q.query IS NOT NULL AND v.tsv @@ q.query
ORDER BY rank DESC, v.id LIMIT {DEPTH}
"""


def make_tsvectors(engine: Any) -> None:
    with engine.begin() as connection:
        for statement in _TSVECTORS.split(";"):
            connection.execute(text(statement))


def ts_rank(engine: Any, query: str, function: str = "ts_rank_cd") -> list[tuple[int, float]]:
    with engine.connect() as connection:
        rows = connection.execute(text(_TS_RANK.format(function=function)), {"query": query}).all()
    return [(int(chunk), float(rank)) for chunk, rank in rows]


def fuse_rrf(bm25_run: Ranking, dense_run: Ranking) -> Ranking:
    ranks: dict[str, dict[str, int | None]] = {}
    for channel, run in (("bm25", bm25_run), ("dense", dense_run)):
        for rank, (doc, _) in enumerate(run, start=1):
            ranks.setdefault(doc, {"bm25": None, "dense": None})[channel] = rank
    fused = [(doc, reference_scores.reciprocal_rank_fusion(r)) for doc, r in ranks.items()]
    return sorted(fused, key=lambda item: (-item[1], item[0]))


def _normalized(run: Ranking) -> dict[str, float]:
    return dict(
        zip((doc for doc, _ in run), reference_scores.min_max([s for _, s in run]), strict=True)
    )


def _combine(
    bm25_run: Ranking, dense_run: Ranking, how: Callable[[float, float], float]
) -> Ranking:
    lexical, semantic = _normalized(bm25_run), _normalized(dense_run)
    docs = set(lexical) | set(semantic)
    fused = [(doc, how(lexical.get(doc, 0.0), semantic.get(doc, 0.0))) for doc in docs]
    return sorted(fused, key=lambda item: (-item[1], item[0]))


def fuse_convex(bm25_run: Ranking, dense_run: Ranking) -> Ranking:
    return _combine(bm25_run, dense_run, lambda a, b: 0.5 * a + 0.5 * b)


def fuse_max(bm25_run: Ranking, dense_run: Ranking) -> Ranking:
    return _combine(bm25_run, dense_run, lambda a, b: scoring.fuse_max([a, b]))


def fuse_cascade(bm25_run: Ranking, dense_run: Ranking) -> Ranking:
    return _combine(bm25_run, dense_run, lambda a, b: scoring.cascade([(a, 0.7)], b))


if __name__ == "__main__":
    main()
