"""What the versions' bound on a memory's length saves LangGraph's store: the same store searched
with versions read among short statements only (the default: at most 280 characters) and among
memories of any length, claim by claim in turn.

SciFact's abstracts put into a ``RetrievalStore`` as ``benchmarks/peers/langgraph_store.py`` puts
them (items ``{"text": ..., "doc": id}`` of namespace ``("scifact",)``, batches of 100; kept in
``--data-dir`` between runs, put again with ``--reload``), then the 300 test claims searched with
each bound: the first pass gives recall@10, nDCG@10 and the claims whose top 10 keys agree, then
``--passes`` timed passes, each claim searched with one bound then the other, the order
alternating; the p50 of each pass.

Usage: python benchmarks/peers/langgraph_versions_bound.py --data-dir DIR [--reload]
       [--passes 3] [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, write_result
from _scifact import CORPUS, DATA, abstract_text, evaluate, read_qrels
from _server import add_data_dir, embedded
from langgraph.store.base import PutOp

import retrieval.search.sources.semantic.plan as semantic_plan
from retrieval.db.migrate import MigrationSettings
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.integrations.langgraph import RetrievalStore
from retrieval.memory.store import MemoryStore

SCHEMA = "lg_retrieval"
TENANT = "langgraph"
NAMESPACE = ("scifact",)
BOUNDS = {"short statements": semantic_plan.VERSION_MOST_CHARACTERS, "any length": 10**9}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser, required=True)
    parser.add_argument("--reload", action="store_true", help="put the abstracts again")
    parser.add_argument("--passes", type=int, default=3, help="timed passes of the claims")
    add_output(parser)
    args = parser.parse_args()

    bench = embedded(args.data_dir, MigrationSettings(schema=SCHEMA, embedding_dim=384))
    memory = MemoryStore(bench.engine, schema=SCHEMA, embedder=SentenceTransformerEmbedder())
    qrels = read_qrels(DATA / "qrels" / "test.tsv")
    claims = {
        q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open())
        if q["_id"] in qrels
    }  # fmt: skip
    with RetrievalStore(memory, tenant_id=TENANT, index={"fields": ["text"]}) as store:
        if args.reload or not store.search(NAMESPACE, limit=1):
            memory.forget(tenant_id=TENANT, everything=True)
            docs = [json.loads(line) for line in CORPUS.open()]
            items = [
                (str(d["_id"]), {"text": abstract_text(d), "doc": str(d["_id"])}) for d in docs
            ]
            print(f"putting {len(items)} abstracts", flush=True)
            for start in range(0, len(items), 100):
                store.batch([PutOp(NAMESPACE, k, v) for k, v in items[start : start + 100]])

        def search(bound: int, claim: str) -> list[tuple[str, float]]:
            semantic_plan.VERSION_MOST_CHARACTERS = bound
            found = store.search(NAMESPACE, query=claim, limit=10)
            return [(str(item.value["doc"]), float(item.score or 0.0)) for item in found]

        results: dict[str, Any] = {"claims": len(claims), "bounds": BOUNDS}
        runs = {
            label: {cid: search(b, c) for cid, c in claims.items()} for label, b in BOUNDS.items()
        }
        for label, run in runs.items():
            quality = evaluate(run, qrels)
            results[label] = {
                "recall@10": round(quality["recall@10"], 4),
                "ndcg@10": round(quality["ndcg@10"], 4),
            }
        first, second = (runs[label] for label in BOUNDS)
        results["same_top_10"] = sum(
            [d for d, _ in first[cid]] == [d for d, _ in second[cid]] for cid in claims
        )
        passes: dict[str, list[float]] = {label: [] for label in BOUNDS}
        for _ in range(args.passes):
            times: dict[str, list[float]] = {label: [] for label in BOUNDS}
            for n, claim in enumerate(claims.values()):
                order = list(BOUNDS.items()) if n % 2 == 0 else list(BOUNDS.items())[::-1]
                for label, bound in order:
                    started = time.perf_counter()
                    search(bound, claim)
                    times[label].append((time.perf_counter() - started) * 1000)
            for label, measured in times.items():
                passes[label].append(round(statistics.median(measured), 2))
            print(json.dumps({label: p[-1] for label, p in passes.items()}), flush=True)
        for label, p50s in passes.items():
            results[label]["search_p50_ms_by_pass"] = p50s
            results[label]["search_p50_ms"] = statistics.median(p50s)
        semantic_plan.VERSION_MOST_CHARACTERS = BOUNDS["short statements"]
    write_result("langgraph-versions-bound", results, args)


if __name__ == "__main__":
    main()
