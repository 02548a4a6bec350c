"""The documents source's evidence gate: what unrelated questions and real claims get back.

Fused relevance is relative to the query, so without a gate every question gets the documents
source's full limit of chunks, related or not. Through ``retrieve()`` (documents source only,
default config otherwise) on the SciFact abstracts stored by ``beir_eval.py`` (same
``--data-dir``): the 16 agent questions of ``tests/data/calibration.json`` (nothing in SciFact
answers them) and the 300 SciFact test claims; chunks returned per question, and nDCG@10 /
recall@10 of the claims with the documents limit raised to 10 and no threshold. Ungated
(``max_distance = None``) against gated with several ``bm25_min_coverage`` values.

Usage: python benchmarks/quality/documents_gate.py --data-dir DIR [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, write_result
from _scifact import BEIR, BEIR_TENANT, DATA, evaluate, read_qrels
from _server import add_data_dir, embedded

from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "calibration.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser, required=True, what="the data of a beir_eval.py run")
    add_output(parser)
    args = parser.parse_args()
    engine = embedded(args.data_dir).engine
    store = MemoryStore(engine, schema=BEIR.schema, embedder=SentenceTransformerEmbedder())
    unrelated = [q["text"] for q in json.loads(FIXTURE.read_text())["queries"]]
    qrels = read_qrels(DATA / "qrels" / "test.tsv")
    queries = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open())}
    default = RetrievalConfig(record_access=False)
    documents_only = replace(
        default,
        semantic=replace(default.semantic, enabled=False),
        episodic=replace(default.episodic, enabled=False),
    )
    variants = {"ungated": replace(documents_only, max_distance=None)}
    for coverage in (0.8, 0.9, 1.0):
        variants[f"gated, coverage >= {coverage}"] = replace(
            documents_only, bm25_min_coverage=coverage
        )
    results: dict[str, Any] = {}
    for name, config in variants.items():
        with HybridRetriever.from_store(store, config=config) as retriever:
            returned = [len(retriever.retrieve(q, tenant_id=BEIR_TENANT)) for q in unrelated]
            claims = [
                len(retriever.retrieve(queries[q], tenant_id=BEIR_TENANT)) for q in sorted(qrels)
            ]
            wide = replace(
                config,
                documents=replace(config.documents, limit=10),
                total_limit=10,
                min_final_score=0.0,
            )
            run = {
                q: [
                    (r.metadata["doc_id"], r.final_score)
                    for r in retriever.retrieve(queries[q], tenant_id=BEIR_TENANT, config=wide)
                ]
                for q in sorted(qrels)
            }
        metrics = evaluate(run, qrels)
        results[name] = {
            "unrelated_chunks_per_question": statistics.mean(returned),
            "unrelated_questions_with_any": sum(1 for n in returned if n),
            "unrelated_questions": len(returned),
            "claim_chunks_per_claim": statistics.mean(claims),
            "claims_ndcg@10": metrics["ndcg@10"],
            "claims_recall@10": metrics["recall@10"],
        }
        print(name, json.dumps(results[name]), flush=True)
    write_result("documents-gate", results, args)
    engine.dispose()


if __name__ == "__main__":
    main()
