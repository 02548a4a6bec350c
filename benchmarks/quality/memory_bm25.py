"""The BM25 channel of memories, and how it fuses with the vector channel: quality two ways.

Everything goes through the public API (``MemoryStore.remember_many``,
``HybridRetriever.retrieve``), with the vector channel alone, with the defaults (the BM25
channel fused by ``convex``), and with the other fusions and BM25 parameters:

1. ``fixture``: the hand-labelled agent memory of ``tests/data/calibration.json`` (36 memories,
   16 questions) with the default threshold, cut-off and limits: the relevant (question,
   memory) pairs returned and the unrelated pairs returned, as in the calibration test. This is
   what a user of the defaults sees.
2. ``scifact``: BEIR SciFact test as memories (title and abstract as one memory), the first 100
   results of the semantic source (``limit=100``): nDCG@10, recall@10, recall@100, with the
   defaults (threshold, cut-off and gate on) and each variant by relevance alone (no threshold,
   no cut-off).

Usage: python benchmarks/quality/memory_bm25.py [--data-dir DIR] [--json PATH]
           [--parts fixture,scifact]
``--data-dir`` keeps the server (and the stored SciFact memories) for the next run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, parts_variant, write_result
from _scifact import abstract_text, evaluate  # the same metrics as the documents'
from _server import add_data_dir, embedded
from sqlalchemy import text
from tqdm import tqdm

from retrieval.db.migrate import MigrationSettings
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.evaluation import pairs_returned, store_labelled
from retrieval.search.retriever import HybridRetriever

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "calibration.json"
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
# beir_eval.py's schema and tenant: with the same --data-dir, the abstracts' embeddings are
# already in the hashed cache.
SETTINGS = MigrationSettings(schema="beir", embedding_dim=384)
TENANT = "beir"
AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
FUSIONS = ("convex", "max", "cascade", "rrf")
# Okapi BM25 (k1, b) to compare with the defaults: Lucene/Anserini's 0.9 / 0.4 and the
# classic 1.2 / 0.75.
BM25_PARAMETERS = ((0.9, 0.4), (1.2, 0.75))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser)
    add_output(parser)
    parser.add_argument("--parts", default="fixture,scifact")
    args = parser.parse_args()
    parts = set(args.parts.split(","))

    engine = embedded(args.data_dir, SETTINGS, prefix="rtv-mbm25-").engine
    store = MemoryStore(engine, schema=SETTINGS.schema, embedder=SentenceTransformerEmbedder())
    results: dict[str, Any] = {}
    if "fixture" in parts:
        results["fixture"] = fixture(store)
    if "scifact" in parts:
        results["scifact"] = scifact(store)
    write_result(
        "memory-bm25",
        results,
        args,
        variant=parts_variant(args.parts, "fixture,scifact"),
    )
    engine.dispose()


def _variants(base: RetrievalConfig) -> dict[str, RetrievalConfig]:
    variants = {"dense": replace(base, memory_bm25=False)}
    for fusion in FUSIONS:
        variants[f"bm25+dense {fusion}"] = replace(base, memory_bm25=True, fusion=fusion)
    for k1, b in BM25_PARAMETERS:
        variants[f"bm25+dense {base.fusion}, k1 {k1} b {b}"] = replace(
            base, memory_bm25=True, bm25_k1=k1, bm25_b=b
        )
    return variants


def fixture(store: MemoryStore) -> dict[str, Any]:
    data = json.loads(FIXTURE.read_text())
    store.forget(tenant_id="calibration", everything=True)
    ids = store_labelled(store, data, "calibration", AS_OF)
    base = RetrievalConfig(record_access=False)
    table = {}
    for name, config in {"defaults": base, **_variants(base)}.items():
        pairs = pairs_returned(store, config, data, ids, "calibration", AS_OF)
        table[name] = {
            "relevant_returned": f"{pairs.relevant_returned}/{pairs.relevant_total}",
            "unrelated_returned": f"{pairs.unrelated_returned}/{pairs.unrelated_total}",
        }
    return table


def scifact(store: MemoryStore) -> dict[str, Any]:
    corpus = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").open()]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (SCIFACT / "queries.jsonl").open())}
    qrels: dict[str, dict[str, int]] = {}
    for line in (SCIFACT / "qrels" / "test.tsv").open():
        query_id, doc_id, score = line.split("\t")
        if query_id != "query-id":
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    with store.engine.connect() as connection:
        stored = connection.execute(
            text(f"SELECT id FROM {SETTINGS.schema}.memories WHERE tenant_id = :t"), {"t": TENANT}
        ).scalars()
        stored = list(stored)
    started = time.perf_counter()
    if len(stored) != len(corpus):
        if stored:  # only the memories: the tenant's documents stay
            store.forget(tenant_id=TENANT, memory_ids=stored)
        batch = 256
        for start in tqdm(range(0, len(corpus), batch), desc="store", disable=None):
            store.remember_many(
                MemoryInput(
                    text=abstract_text(doc),
                    tenant_id=TENANT,
                    metadata={"doc_id": doc["_id"]},
                    created_at=AS_OF,
                )
                for doc in corpus[start : start + batch]
            )
    ingest_seconds = time.perf_counter() - started
    default = _alone(RetrievalConfig(record_access=False))
    wide = replace(default.semantic, relevance=1.0, recency=0.0)
    relevance_alone = replace(default, semantic=wide, min_final_score=0.0, max_distance=None)
    configs = {"defaults": default} | {
        f"{name}, relevance alone": config for name, config in _variants(relevance_alone).items()
    }
    table: dict[str, Any] = {}
    for name, config in configs.items():
        run: dict[str, list[tuple[str, float]]] = {}
        times = []
        with HybridRetriever.from_store(store, config=config) as retriever:
            for query_id in sorted(qrels):
                begin = time.perf_counter()
                response = retriever.retrieve(
                    queries[query_id], tenant_id=TENANT, as_of=AS_OF, limit=100
                )
                times.append((time.perf_counter() - begin) * 1000)
                run[query_id] = [
                    (r.metadata["metadata"]["doc_id"], r.final_score) for r in response
                ]
        table[name] = {**evaluate(run, qrels), "median_ms": statistics.median(times)}
    table["_meta"] = {"memories": len(corpus), "queries": len(qrels), "ingest_s": ingest_seconds}
    return table


def _alone(config: RetrievalConfig) -> RetrievalConfig:
    # Only the semantic source, as every other part of the config is.
    return replace(
        config,
        episodic=replace(config.episodic, enabled=False),
        documents=replace(config.documents, enabled=False),
    )


if __name__ == "__main__":
    main()
