"""``vector`` against ``halfvec`` storage on SciFact: ranking quality, recall, disk and buffers.

The 5,183 SciFact abstracts (title and text) are stored as memories in two schemas, one
migrated with ``vector_type="vector"`` and one with ``"halfvec"``, from the same vectors
(all-MiniLM-L6-v2, embedded once and cached beside the data directory). For each, on the 300
test claims:

* nDCG@10 and recall@10 (BEIR's judgments) of ``retrieve()`` with the defaults (semantic source
  alone, first 100 results), and of the vector channel alone ranked by relevance (no BM25
  channel, no threshold, no cut-off);
* recall@10 of the vector channel against the exact 10 nearest abstracts (numpy, float32);
* bytes per memory on disk (table and TOAST, the HNSW index) and the shared buffers the
  relation holds once every claim has been asked (``pg_buffercache``), per memory;
* ``retrieve()`` p50 of the semantic source, the two types asked each claim in turn.

The million-row figures of ``halfvec`` come from ``benchmarks/scale/scale.py --vector-type
halfvec``.

Usage: python benchmarks/writing/vector_type.py [--data-dir DIR] [--runs 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, percentiles, timed_ms, write_result
from _scifact import DATA, abstract_text, cached_vectors, dense_alone, evaluate, shapes
from sqlalchemy import Engine, text

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.db.vector_type import VECTOR_TYPES
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

TENANT = "scifact"
AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
BUFFERS = """
SELECT CASE WHEN c.relkind = 'i' THEN 'hnsw' ELSE 'table' END, count(*)
FROM pg_buffercache b JOIN pg_class c ON b.relfilenode = pg_relation_filenode(c.oid)
WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND c.oid IN (CAST(:m AS regclass), CAST(:i AS regclass),
                (SELECT reltoastrelid FROM pg_class WHERE oid = CAST(:m AS regclass)))
GROUP BY 1
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="keep the server's data here")
    parser.add_argument("--runs", type=int, default=3, help="timed passes over the claims")
    add_output(parser)
    args = parser.parse_args()

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rtv-vtype-")) / "pg"
    database = connect(DatabaseConfig(data_dir=data_dir))
    engine = database.engine
    with engine.begin() as connection:
        connection.execute(text("CREATE EXTENSION IF NOT EXISTS pg_buffercache"))
    embedder = SentenceTransformerEmbedder()
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    texts = [abstract_text(doc) for doc in corpus]
    vectors = cached_vectors(embedder, texts, data_dir.parent / "scifact-abstract-vectors.npy")
    queries = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open())}
    qrels: dict[str, dict[str, int]] = {}
    for line in list((DATA / "qrels" / "test.tsv").open())[1:]:
        query_id, doc_id, score = line.rstrip("\n").split("\t")
        qrels.setdefault(query_id, {})[doc_id] = int(score)
    claims = [queries[query_id] for query_id in sorted(qrels)]
    claim_vectors = embedder.embed(claims)

    stores = {}
    for vector_type in VECTOR_TYPES:
        schema = f"vt_{vector_type}"
        upgrade(
            engine, MigrationSettings(schema=schema, embedding_dim=384, vector_type=vector_type)
        )
        engine.dispose()
        stores[vector_type] = _stored(
            MemoryStore(engine, schema=schema, embedder=embedder), corpus, vectors
        )

    alone = shapes()["semantic"]
    dense = dense_alone(alone)
    results: dict[str, Any] = {"memories": len(corpus), "claims": len(claims)}
    for vector_type, (store, ids) in stores.items():
        row: dict[str, Any] = {}
        for name, config in (("defaults", alone), ("dense alone", dense)):
            run = {}
            with HybridRetriever.from_store(store, config=config) as retriever:
                for query_id in sorted(qrels):
                    response = retriever.retrieve(
                        queries[query_id], tenant_id=TENANT, as_of=AS_OF, limit=100
                    )
                    run[query_id] = [
                        (r.metadata["metadata"]["doc_id"], r.final_score) for r in response
                    ]
            row[name] = evaluate(run, qrels)
        row["recall@10 against exact"] = _exact_recall(
            store, ids, vectors, claims, claim_vectors, dense
        )
        row["disk"] = _sizes(engine, store.schema, len(corpus))
        results[vector_type] = row
    results["latency"] = _interleaved(stores, claims, alone, args.runs)
    for vector_type, (store, _) in stores.items():
        results[vector_type]["buffers"] = _buffers(engine, store.schema, len(corpus))
    half, full = results["halfvec"], results["vector"]
    results["halfvec minus vector"] = {
        name: {
            metric: half[name][metric] - full[name][metric] for metric in ("ndcg@10", "recall@10")
        }
        for name in ("defaults", "dense alone")
    } | {
        "recall@10 against exact": half["recall@10 against exact"]
        - full["recall@10 against exact"],
        "bytes per memory ratio": half["disk"]["bytes_per_memory"]
        / full["disk"]["bytes_per_memory"],
    }
    write_result("vector-type", results, args)
    database.dispose()


def _stored(
    store: MemoryStore, corpus: list[dict[str, Any]], vectors: np.ndarray
) -> tuple[MemoryStore, list[int]]:
    with store.engine.connect() as connection:
        ids = list(
            connection.execute(
                text(f"SELECT id FROM {store.schema}.memories ORDER BY id")
            ).scalars()
        )
    if len(ids) != len(corpus):
        store.forget(tenant_id=TENANT, everything=True)
        ids = []
        for start in range(0, len(corpus), 1000):
            ids += store.remember_many(
                MemoryInput(
                    text=abstract_text(doc),
                    tenant_id=TENANT,
                    metadata={"doc_id": doc["_id"]},
                    created_at=AS_OF,
                    embedding=vectors[start + offset],
                )
                for offset, doc in enumerate(corpus[start : start + 1000])
            )
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f"VACUUM ANALYZE {store.schema}.memories"))
    return store, ids


def _exact_recall(
    store: MemoryStore,
    ids: list[int],
    vectors: np.ndarray,
    claims: list[str],
    claim_vectors: np.ndarray,
    config: RetrievalConfig,
) -> float:
    config = replace(config, semantic=replace(config.semantic, limit=10))
    id_array = np.asarray(ids)
    recalls = []
    with HybridRetriever.from_store(store, config=config) as retriever:
        for claim, vector in zip(claims, claim_vectors, strict=True):
            got = {
                r.metadata["id"] for r in retriever.retrieve(claim, tenant_id=TENANT, as_of=AS_OF)
            }
            exact = set(id_array[np.argsort(-(vectors @ vector))[:10]].tolist())
            recalls.append(len(got & exact) / 10)
    return statistics.mean(recalls)


def _sizes(engine: Engine, schema: str, rows: int) -> dict[str, float]:
    with engine.connect() as connection:
        table, hnsw = connection.execute(
            text(
                "SELECT pg_table_size(CAST(:m AS regclass)), pg_relation_size(CAST(:i AS regclass))"
            ),
            {"m": f"{schema}.memories", "i": f"{schema}.memories_embedding_hnsw_idx"},
        ).one()
    return {
        "bytes_per_memory": (table + hnsw) / rows,
        "table_bytes_per_memory": table / rows,
        "hnsw_bytes_per_memory": hnsw / rows,
    }


def _buffers(engine: Engine, schema: str, rows: int) -> dict[str, float]:
    """Shared buffers (8 kB pages) holding the table, its TOAST and the HNSW graph, per memory."""
    with engine.connect() as connection:
        pages = dict(
            connection.execute(
                text(BUFFERS),
                {"m": f"{schema}.memories", "i": f"{schema}.memories_embedding_hnsw_idx"},
            ).all()
        )
    return {
        f"{name}_buffer_bytes_per_memory": pages.get(name, 0) * 8192 / rows
        for name in ("table", "hnsw")
    }


def _interleaved(
    stores: dict[str, tuple[MemoryStore, list[int]]],
    claims: list[str],
    config: RetrievalConfig,
    runs: int,
) -> dict[str, Any]:
    retrievers = {
        name: HybridRetriever.from_store(store, config=config)
        for name, (store, _) in stores.items()
    }
    times: dict[str, list[float]] = {name: [] for name in retrievers}
    order = list(retrievers)
    for claim in claims:  # cache the query vectors, warm the connections
        for retriever in retrievers.values():
            retriever.retrieve(claim, tenant_id=TENANT, as_of=AS_OF)
    for run in range(runs):
        for index, claim in enumerate(claims):
            for name in order if (index + run) % 2 == 0 else order[::-1]:
                times[name].append(
                    timed_ms(retrievers[name].retrieve, claim, tenant_id=TENANT, as_of=AS_OF)[1]
                )
    for retriever in retrievers.values():
        retriever.close()
    return {name: percentiles(values) for name, values in times.items()}


if __name__ == "__main__":
    main()
