"""This library against its peers on the same data, model and server, measured in one run.

Peers: langchain-postgres ``PGVector`` and ``PGVectorStore``, and llama-index's
``PGVectorStore`` (dense, and hybrid with its text search channel). They pin versions of
SQLAlchemy and pgvector this library cannot share a virtual environment with, so they run in
their own (``--peers-python``; make it with ``python -m venv .venv-peers &&
.venv-peers/bin/pip install langchain-postgres llama-index-vector-stores-postgres numpy``)
through ``benchmarks/_peers_worker.py``, against the same embedded PostgreSQL.

The data: ``--rows`` memories (SciFact sentences and noisy copies of their vectors, as
``scale.py`` makes them) over 100 tenants of 1% each, all-MiniLM-L6-v2 vectors computed once and
given to every library (each peer gets them through an embedding object that looks them up, so
no library's time includes the model). Each library stores them with its HNSW index in place,
in batches of 1,000. Then, for the 1% tenant ``t00`` and the 300 SciFact claims:

* ingest rows/s;
* query p50/p95 of a top-10 search filtered to the tenant (this library: ``retrieve()`` with
  the semantic source alone and its defaults), the query vectors given, median of 3 passes;
* recall@10 of that search against the exact 10 nearest of the tenant's rows (this library: its
  vector channel alone, no threshold or cut-off);
* nDCG@10 on SciFact: the 5,183 abstracts stored, each library's top 10 for each claim (this
  library: ``retrieve()`` with its defaults).

Usage: python benchmarks/peers.py [--rows 100000] [--data-dir DIR] [--peers-python PATH]
       [--libraries langchain,langchain-pgvectorstore,llamaindex,llamaindex-hybrid] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from _common import ROOT, add_output, percentiles, write_result
from _scifact import (
    AS_OF,
    DATA,
    abstract_text,
    cached_vectors,
    evaluate,
    load_corpus,
    read_qrels,
    shapes,
)
from scale import memory_vectors
from sqlalchemy import text

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import SourceConfig
from retrieval.search.retriever import HybridRetriever

TENANTS = 100
TENANT = "t00"
SCIFACT_TENANT = "scifact"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--data-dir", type=Path, help="keep the server's data here")
    parser.add_argument(
        "--peers-python", type=Path, default=ROOT / ".venv-peers" / "bin" / "python"
    )
    parser.add_argument(
        "--libraries",
        default="langchain,langchain-pgvectorstore,llamaindex,llamaindex-hybrid",
        help="comma-separated, of langchain, langchain-pgvectorstore, llamaindex, "
        "llamaindex-hybrid",
    )
    add_output(parser)
    args = parser.parse_args()
    if not args.peers_python.exists():
        raise SystemExit(
            f"no peers' Python at {args.peers_python}: make it with `python -m venv .venv-peers && "
            ".venv-peers/bin/pip install langchain-postgres llama-index-vector-stores-postgres "
            "numpy`, or give --peers-python"
        )

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rtv-peers-")) / "pg"
    database = connect(DatabaseConfig(data_dir=data_dir))
    assert database.embedded is not None
    url = database.embedded.url()
    embedder = SentenceTransformerEmbedder()
    corpus = load_corpus(embedder, data_dir.parent / "scifact-title-vectors.npy")
    base = cached_vectors(
        embedder, corpus.sentences, data_dir.parent / "scifact-sentence-vectors.npy"
    )
    vectors = memory_vectors(base, args.rows)
    rows = [
        {"row": i, "text": f"{corpus.sentences[i % len(corpus.sentences)]} (note {i})",
         "tenant": f"t{i % TENANTS:02d}"}
        for i in range(args.rows)
    ]  # fmt: skip
    abstracts_raw = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    abstracts = [{"doc_id": d["_id"], "text": abstract_text(d)} for d in abstracts_raw]
    abstract_vectors = cached_vectors(
        embedder, [a["text"] for a in abstracts], data_dir.parent / "scifact-abstract-vectors.npy"
    )
    qrels = read_qrels(DATA / "qrels" / "test.tsv")
    queries = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open())}
    query_ids = sorted(qrels)
    claims = [queries[q] for q in query_ids]
    claim_vectors = embedder.embed(claims)

    work = Path(tempfile.mkdtemp(prefix="rtv-peers-work-"))
    (work / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    np.save(work / "vectors.npy", vectors)
    (work / "abstracts.jsonl").write_text("".join(json.dumps(a) + "\n" for a in abstracts))
    np.save(work / "abstract_vectors.npy", abstract_vectors)
    (work / "queries.json").write_text(json.dumps({"claims": claims, "tenant": TENANT}))
    np.save(work / "query_vectors.npy", claim_vectors)

    mine = np.flatnonzero(np.arange(args.rows) % TENANTS == 0)
    exact = [set(mine[np.argsort(-(vectors[mine] @ v))[:10]].tolist()) for v in claim_vectors]
    results: dict[str, Any] = {"rows": args.rows, "tenant_rows": len(mine), "claims": len(claims)}
    results["retrieval"] = _ours(database, embedder, rows, vectors, abstracts, abstract_vectors,
                                 claims, exact, qrels, query_ids)  # fmt: skip
    for library in args.libraries.split(","):
        began = time.perf_counter()
        subprocess.run(
            [str(args.peers_python), str(ROOT / "benchmarks" / "_peers_worker.py"), library,
             "--url", url, "--work", str(work)],
            check=True,
        )  # fmt: skip
        raw = json.loads((work / f"{library}.json").read_text())
        results[library] = _summary(raw, exact, qrels, query_ids)
        results[library]["run_s"] = time.perf_counter() - began
        print(library, json.dumps(results[library]), flush=True)
    results["ratios"] = {
        library: _ratios(results["retrieval"], results[library])
        for library in args.libraries.split(",")
    }
    write_result("peers", results, args)
    database.dispose()


def _ratios(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float]:
    return {
        "ingest (ours / theirs)": ours["ingest_rows_per_s"] / theirs["ingest_rows_per_s"],
        "query p50 (theirs / ours)": theirs["p50_ms"] / ours["p50_ms"],
        "query p95 (theirs / ours)": theirs["p95_ms"] / ours["p95_ms"],
        "filtered recall@10 (ours - theirs)": ours["recall_at_10"] - theirs["recall_at_10"],
        "nDCG@10 (ours - theirs)": ours["ndcg_at_10"] - theirs["ndcg_at_10"],
    }


def _ours(
    database, embedder, rows, vectors, abstracts, abstract_vectors, claims, exact, qrels, query_ids
):  # type: ignore[no-untyped-def]
    settings = MigrationSettings(schema="peers_ours", embedding_dim=384)
    upgrade(database.engine, settings)
    database.engine.dispose()
    store = MemoryStore(database.engine, schema=settings.schema, embedder=embedder)
    with database.engine.begin() as connection:
        connection.execute(text("TRUNCATE peers_ours.memories CASCADE"))
    began = time.perf_counter()
    ids: list[int] = []
    for start in range(0, len(rows), 1000):
        ids += store.remember_many(
            MemoryInput(text=r["text"], tenant_id=r["tenant"], embedding=vectors[start + i],
                        created_at=AS_OF)
            for i, r in enumerate(rows[start : start + 1000])
        )  # fmt: skip
    ingest = len(rows) / (time.perf_counter() - began)
    store.remember_many(
        MemoryInput(text=a["text"], tenant_id=SCIFACT_TENANT, embedding=abstract_vectors[i],
                    metadata={"doc_id": a["doc_id"]}, created_at=AS_OF)
        for i, a in enumerate(abstracts)
    )  # fmt: skip
    with database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM ANALYZE peers_ours.memories"))
    row_of = {memory_id: row for row, memory_id in enumerate(ids)}
    semantic = shapes()["semantic"]
    vector_alone = replace(
        semantic,
        semantic=SourceConfig(relevance=1.0, recency=0.0, limit=10, half_life_hours=720.0),
        min_final_score=0.0,
        max_distance=None,
        memory_bm25=False,
    )
    with HybridRetriever.from_store(store, config=semantic) as retriever:
        for claim in claims:  # cache the query vectors, warm the connection
            retriever.retrieve(claim, tenant_id=TENANT, as_of=AS_OF)
        times = []
        for _ in range(3):
            for claim in claims:
                began = time.perf_counter()
                retriever.retrieve(claim, tenant_id=TENANT, as_of=AS_OF, limit=10)
                times.append((time.perf_counter() - began) * 1000)
        recall = []
        for claim, nearest in zip(claims, exact, strict=True):
            found = retriever.retrieve(claim, tenant_id=TENANT, as_of=AS_OF, config=vector_alone)
            recall.append(len({row_of[r.metadata["id"]] for r in found} & nearest) / 10)
        run = {}
        for query_id, claim in zip(query_ids, claims, strict=True):
            found = retriever.retrieve(claim, tenant_id=SCIFACT_TENANT, as_of=AS_OF, limit=10)
            run[query_id] = [(r.metadata["metadata"]["doc_id"], r.final_score) for r in found]
    timing = percentiles(times)
    return {
        "ingest_rows_per_s": ingest,
        "p50_ms": timing["p50"],
        "p95_ms": timing["p95"],
        "recall_at_10": statistics.mean(recall),
        "ndcg_at_10": evaluate(run, qrels)["ndcg@10"],
    }


def _summary(raw: dict[str, Any], exact: list[set[int]], qrels: dict[str, dict[str, int]],
             query_ids: list[str]) -> dict[str, Any]:  # fmt: skip
    timing = percentiles(raw["times_ms"])
    recall = [
        len({int(r) for r in found} & nearest) / 10
        for found, nearest in zip(raw["filtered_ids"], exact, strict=True)
    ]
    run = {
        query_id: [(doc, 1.0 / (rank + 1)) for rank, doc in enumerate(found)]
        for query_id, found in zip(query_ids, raw["scifact"], strict=True)
    }
    return {
        "ingest_rows_per_s": raw["ingest_rows_per_s"],
        "p50_ms": timing["p50"],
        "p95_ms": timing["p95"],
        "recall_at_10": statistics.mean(recall),
        "ndcg_at_10": evaluate(run, qrels)["ndcg@10"],
    }


if __name__ == "__main__":
    main()
