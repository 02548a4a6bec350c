"""One peer library's side of ``peers.py``, run in the peers' own virtual environment.

The peers pin versions of SQLAlchemy and pgvector that this library cannot share a virtual
environment with, so ``peers.py`` runs this script with the peers' Python. It reads the rows
and query vectors ``peers.py`` wrote (``WORK/rows.jsonl``, ``WORK/vectors.npy``, ...), stores them
through one library's public API on the same PostgreSQL, and writes ``WORK/<library>.json``:
ingest rows/s, the ids of each query's top 10 (filtered to one tenant, and on the SciFact
abstracts), and the query latencies.

Libraries: ``langchain`` (langchain-postgres ``PGVector``, L2 distance, an HNSW index made with
pgvector's defaults before the rows are stored, as its documentation leaves to the user),
``langchain-pgvectorstore`` (its ``PGVectorStore``: a table with the tenant as a column of its
own, L2 distance, its ``HNSWIndex`` applied before the rows are stored) and
``llamaindex`` / ``llamaindex-hybrid`` (llama-index ``PGVectorStore`` with its HNSW index, dense
or hybrid: its text search channel beside the vectors).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np


class _GivenVectors:
    """An embedding "model" that returns the vectors computed beforehand for each text
    (all-MiniLM-L6-v2's, the same the library under test gets)."""

    def __init__(self, by_text: dict[str, np.ndarray]) -> None:
        self.by_text = by_text

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.by_text[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.by_text[text].tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "library",
        choices=("langchain", "langchain-pgvectorstore", "llamaindex", "llamaindex-hybrid"),
    )
    parser.add_argument("--url", required=True, help="postgresql+psycopg:// URL")
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    work: Path = args.work
    rows = [json.loads(line) for line in (work / "rows.jsonl").open()]
    vectors = np.load(work / "vectors.npy")
    abstracts = [json.loads(line) for line in (work / "abstracts.jsonl").open()]
    abstract_vectors = np.load(work / "abstract_vectors.npy")
    queries = json.loads((work / "queries.json").read_text())
    query_vectors = np.load(work / "query_vectors.npy")
    tenant = queries["tenant"]
    run = {
        "langchain": _langchain,
        "langchain-pgvectorstore": _pgvectorstore,
        "llamaindex": _llamaindex,
        "llamaindex-hybrid": _llamaindex,
    }[args.library]
    result = run(args, rows, vectors, abstracts, abstract_vectors, queries, query_vectors, tenant)
    (work / f"{args.library}.json").write_text(json.dumps(result))


def _timed(search: Any, count: int, runs: int = 3) -> tuple[list[list[str]], list[float]]:
    for index in range(count):  # warm the connection and the buffers
        search(index)
    ids, times = [], []
    for run in range(runs):
        for index in range(count):
            began = time.perf_counter()
            found = search(index)
            times.append((time.perf_counter() - began) * 1000)
            if run == 0:
                ids.append(found)
    return ids, times


def _given_vectors(rows, vectors, abstracts, abstract_vectors, queries, query_vectors):  # type: ignore[no-untyped-def]
    texts = {r["text"]: vectors[i] for i, r in enumerate(rows)}
    texts |= {q: query_vectors[i] for i, q in enumerate(queries["claims"])}
    texts |= {a["text"]: abstract_vectors[i] for i, a in enumerate(abstracts)}
    return _GivenVectors(texts)


def _langchain_measured(  # type: ignore[no-untyped-def]
    memories, make_scifact, after_ingest, rows, vectors, abstracts, abstract_vectors, queries,
    query_vectors, tenant,
):  # fmt: skip
    """Ingest, filtered searches and SciFact through a LangChain ``VectorStore``
    (``add_embeddings``, ``similarity_search_by_vector``): both langchain-postgres classes."""
    began = time.perf_counter()
    for start in range(0, len(rows), 1000):
        batch = rows[start : start + 1000]
        memories.add_embeddings(
            texts=[r["text"] for r in batch],
            embeddings=[vectors[start + i].tolist() for i in range(len(batch))],
            metadatas=[{"tenant": r["tenant"], "row": r["row"]} for r in batch],
        )
    ingest = len(rows) / (time.perf_counter() - began)
    after_ingest()

    def filtered(index: int) -> list[str]:
        found = memories.similarity_search_by_vector(
            query_vectors[index].tolist(), k=10, filter={"tenant": tenant}
        )
        return [str(d.metadata["row"]) for d in found]

    ids, times = _timed(filtered, len(queries["claims"]))
    scifact = make_scifact()
    scifact.add_embeddings(
        texts=[a["text"] for a in abstracts],
        embeddings=abstract_vectors.tolist(),
        metadatas=[{"doc_id": a["doc_id"]} for a in abstracts],
    )
    ranked = [
        [d.metadata["doc_id"] for d in scifact.similarity_search_by_vector(v.tolist(), k=10)]
        for v in query_vectors
    ]
    return {"ingest_rows_per_s": ingest, "filtered_ids": ids, "times_ms": times, "scifact": ranked}


def _langchain(args, rows, vectors, abstracts, abstract_vectors, queries, query_vectors, tenant):  # type: ignore[no-untyped-def]
    from langchain_postgres import PGVector
    from langchain_postgres.vectorstores import DistanceStrategy
    from sqlalchemy import create_engine, text

    engine = create_engine(args.url)
    model = _given_vectors(rows, vectors, abstracts, abstract_vectors, queries, query_vectors)

    def store(name: str) -> Any:
        return PGVector(
            embeddings=model,  # type: ignore[arg-type]
            connection=engine,
            collection_name=name,
            distance_strategy=DistanceStrategy.EUCLIDEAN,
            embedding_length=384,
            pre_delete_collection=True,
            use_jsonb=True,
        )

    def vacuum() -> None:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE langchain_pg_embedding"))

    memories = store("peers_memories")
    with engine.begin() as connection:
        connection.execute(
            text(
                "CREATE INDEX IF NOT EXISTS langchain_pg_embedding_hnsw ON langchain_pg_embedding "
                "USING hnsw (embedding vector_l2_ops)"
            )
        )
    return _langchain_measured(
        memories, lambda: store("peers_abstracts"), vacuum, rows, vectors, abstracts,
        abstract_vectors, queries, query_vectors, tenant,
    )  # fmt: skip


def _pgvectorstore(
    args, rows, vectors, abstracts, abstract_vectors, queries, query_vectors, tenant
):  # type: ignore[no-untyped-def]
    from langchain_postgres import Column, PGEngine, PGVectorStore
    from langchain_postgres.v2.indexes import DistanceStrategy, HNSWIndex

    engine = PGEngine.from_connection_string(url=args.url)
    model = _given_vectors(rows, vectors, abstracts, abstract_vectors, queries, query_vectors)

    def store(table: str, columns: list[Column]) -> Any:
        engine.init_vectorstore_table(table, 384, metadata_columns=columns, overwrite_existing=True)
        made = PGVectorStore.create_sync(
            engine,
            embedding_service=model,  # type: ignore[arg-type]
            table_name=table,
            metadata_columns=[column.name for column in columns],
            distance_strategy=DistanceStrategy.EUCLIDEAN,
        )
        made.apply_vector_index(HNSWIndex(distance_strategy=DistanceStrategy.EUCLIDEAN))
        return made

    memories = store("peers_v2_memories", [Column("tenant", "TEXT"), Column("row", "INTEGER")])
    return _langchain_measured(
        memories, lambda: store("peers_v2_abstracts", [Column("doc_id", "TEXT")]), lambda: None,
        rows, vectors, abstracts, abstract_vectors, queries, query_vectors, tenant,
    )  # fmt: skip


def _llamaindex(args, rows, vectors, abstracts, abstract_vectors, queries, query_vectors, tenant):  # type: ignore[no-untyped-def]
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores.types import (
        ExactMatchFilter,
        MetadataFilters,
        VectorStoreQuery,
        VectorStoreQueryMode,
    )
    from llama_index.vector_stores.postgres import PGVectorStore
    from sqlalchemy.engine import make_url

    hybrid = args.library == "llamaindex-hybrid"
    url = make_url(args.url)

    def store(table: str) -> Any:
        return PGVectorStore.from_params(
            # Its sync path binds SET hnsw.ef_search client-side: psycopg2, as it expects.
            connection_string=url.set(drivername="postgresql+psycopg2"),
            async_connection_string=url.set(drivername="postgresql+asyncpg"),
            table_name=table,
            embed_dim=384,
            hybrid_search=hybrid,
            text_search_config="english",
            hnsw_kwargs={
                "hnsw_m": 16,
                "hnsw_ef_construction": 64,
                "hnsw_ef_search": 40,
                "hnsw_dist_method": "vector_l2_ops",
            },
        )

    suffix = "_hybrid" if hybrid else ""
    memories = store(f"peers_memories{suffix}")
    began = time.perf_counter()
    for start in range(0, len(rows), 1000):
        batch = rows[start : start + 1000]
        memories.add(
            [
                TextNode(
                    text=r["text"],
                    embedding=vectors[start + i].tolist(),
                    metadata={"tenant": r["tenant"], "row": r["row"]},
                )
                for i, r in enumerate(batch)
            ]
        )
    ingest = len(rows) / (time.perf_counter() - began)
    mode = VectorStoreQueryMode.HYBRID if hybrid else VectorStoreQueryMode.DEFAULT
    only_tenant = MetadataFilters(filters=[ExactMatchFilter(key="tenant", value=tenant)])

    def filtered(index: int) -> list[str]:
        found = memories.query(
            VectorStoreQuery(
                query_embedding=query_vectors[index].tolist(),
                query_str=queries["claims"][index],
                similarity_top_k=10,
                filters=only_tenant,
                mode=mode,
            )
        )
        return [str(n.metadata["row"]) for n in found.nodes]

    ids, times = _timed(filtered, len(queries["claims"]))
    scifact = store(f"peers_abstracts{suffix}")
    scifact.add(
        [
            TextNode(
                text=a["text"],
                embedding=abstract_vectors[i].tolist(),
                metadata={"doc_id": a["doc_id"]},
            )
            for i, a in enumerate(abstracts)
        ]
    )
    ranked = []
    for index, vector in enumerate(query_vectors):
        found = scifact.query(
            VectorStoreQuery(
                query_embedding=vector.tolist(),
                query_str=queries["claims"][index],
                similarity_top_k=10,
                mode=mode,
            )
        )
        ranked.append([n.metadata["doc_id"] for n in found.nodes])
    return {"ingest_rows_per_s": ingest, "filtered_ids": ids, "times_ms": times, "scifact": ranked}


if __name__ == "__main__":
    main()
