"""One peer library's side of ``peers.py``, run in the peers' own virtual environment.

The peers pin versions of SQLAlchemy and pgvector that this library cannot share a virtual
environment with, so ``peers.py`` runs this script with the peers' Python. It reads the rows
and query vectors ``peers.py`` wrote (``WORK/rows.jsonl``, ``WORK/vectors.npy``, ...), stores them
through one library's public API in the peers' database, and writes ``WORK/<library>.json``:
ingest rows/s; for each measured tenant, as shipped and at the documented best, each claim's
filtered top 10 (row numbers) and its times; the SciFact rankings. For ``curves.py`` (a plan
with ``ef_search_sweep``), on the rows already stored: the documented best alone, once per
``hnsw.ef_search`` of the sweep.

Libraries: ``langchain`` (langchain-postgres ``PGVector``, L2 distance, an HNSW index made with
pgvector's defaults before the rows are stored, as its documentation leaves to the user),
``langchain-pgvectorstore`` (its ``PGVectorStore``: the tenant a column of its own, L2
distance, its ``HNSWIndex`` applied before the rows are stored; its ``HybridSearchConfig`` for
SciFact) and ``llamaindex`` (llama-index ``PGVectorStore`` with its HNSW index in its own
operator class, cosine; hybrid with its text search channel for SciFact).

The documented best of each: pgvector's iterative scan (``ALTER DATABASE ... SET
hnsw.iterative_scan = relaxed_order``, then new connections), and an index on the tenant filter
where the library has one or its documentation shows how (``PGVectorStore``: a btree on its
``tenant`` column; llama-index: ``indexed_metadata_keys={("tenant", "text")}``, the btree it
makes on ``metadata_->>'tenant'``). ``PGVector`` filters with ``jsonb_path_match``, which no
index serves: its best is the iterative scan alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import timed_passes
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

BATCH = 1000
HYBRID_CANDIDATES = 40


class _GivenVectors:
    """An embedding "model" that returns the vectors computed beforehand for each text
    (all-MiniLM-L6-v2's, the same the library under test gets)."""

    def __init__(self, by_text: dict[str, np.ndarray]) -> None:
        self.by_text = by_text

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.by_text[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.by_text[text].tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


class Data:
    """What ``peers.py`` wrote for the worker."""

    def __init__(self, work: Path) -> None:
        self.rows = [json.loads(line) for line in (work / "rows.jsonl").open()]
        self.vectors = np.load(work / "vectors.npy")
        self.abstracts = [json.loads(line) for line in (work / "abstracts.jsonl").open()]
        self.abstract_vectors = np.load(work / "abstract_vectors.npy")
        self.plan = json.loads((work / "queries.json").read_text())
        self.query_vectors = np.load(work / "query_vectors.npy")
        by_text = {r["text"]: self.vectors[i] for i, r in enumerate(self.rows)}
        by_text |= {q: self.query_vectors[i] for i, q in enumerate(self.plan["claims"])}
        by_text |= {a["text"]: self.abstract_vectors[i] for i, a in enumerate(self.abstracts)}
        self.model = _GivenVectors(by_text)

    @property
    def reuse(self) -> bool:
        """Whether the rows are in the peers' database already (``peers.py --searches-only``):
        no load, the as-shipped searches after dropping the indexes the best adds."""
        return bool(self.plan.get("reuse"))

    @property
    def claims(self) -> list[str]:
        return list(self.plan["claims"])

    @property
    def shipped(self) -> bool:
        """Whether the as-shipped searches are measured (not in ``curves.py``'s sweep, which
        measures the documented best alone)."""
        return "ef_search_sweep" not in self.plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library", choices=("langchain", "langchain-pgvectorstore", "llamaindex"))
    parser.add_argument("--url", required=True, help="postgresql+psycopg:// URL")
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    data = Data(args.work)
    run = {
        "langchain": _langchain,
        "langchain-pgvectorstore": _pgvectorstore,
        "llamaindex": _llamaindex,
    }[args.library]
    result = run(args.url, data)
    (args.work / f"{args.library}.json").write_text(json.dumps(result))


def _measured(search: Callable[[int], list[int]], count: int, passes: int) -> dict[str, Any]:
    ids, times = timed_passes(search, count, passes)
    return {"ids": ids, "times_ms": times}


def _searches(data: Data, search: Callable[[str, int], list[int]]) -> dict[str, Any]:
    """Each measured tenant's filtered searches through ``search(tenant, claim_index)``."""
    return {
        tenant: _measured(lambda i, t=tenant: search(t, i), len(data.claims), data.plan["passes"])
        for tenant in data.plan["tenants"]
    }


def _shipped(data: Data, search: Callable[[str, int], list[int]]) -> dict[str, Any]:
    """The as-shipped searches' line, when the plan measures it."""
    return {"shipped": _searches(data, search)} if data.shipped else {}


def _iterative_scan(url: str, on: bool, ef_search: int | None = None) -> None:
    """pgvector's iterative scan (and ``hnsw.ef_search`` when given) for every new connection
    to the peers' database; ``on=False`` resets both."""
    engine = create_engine(url, poolclass=NullPool)  # each connect() a new session
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        database = connection.execute(text("SELECT current_database()")).scalar_one()
        alter = f'ALTER DATABASE "{database}"'
        if on:
            connection.execute(text(f"{alter} SET hnsw.iterative_scan = relaxed_order"))
        else:
            connection.execute(text(f"{alter} RESET hnsw.iterative_scan"))
        if ef_search is not None:
            connection.execute(text(f"{alter} SET hnsw.ef_search = {int(ef_search)}"))
        else:
            connection.execute(text(f"{alter} RESET hnsw.ef_search"))
    with engine.connect() as connection:  # a new session sees it (once pgvector is loaded)
        connection.execute(text("SELECT '[1]'::vector"))
        shown = connection.execute(text("SHOW hnsw.iterative_scan")).scalar_one()
        ef = connection.execute(text("SHOW hnsw.ef_search")).scalar_one()
    engine.dispose()
    assert shown == ("relaxed_order" if on else "off"), f"hnsw.iterative_scan is {shown!r}"
    assert ef == str(ef_search or 40), f"hnsw.ef_search is {ef!r}"


def _best_lines(data: Data) -> list[tuple[str, int | None]]:
    """The documented best's lines: its ``hnsw.ef_search`` as it is, then raised when the plan
    asks (pgvector's knob for recall: "a higher value provides better recall at the cost of
    speed"); or, for ``curves.py``, one line per ``hnsw.ef_search`` of the plan's sweep."""
    if not data.shipped:
        return [(f"best_ef_search_{ef}", int(ef)) for ef in data.plan["ef_search_sweep"]]
    raised = data.plan.get("raised_ef_search")
    return [("best", None)] + ([("best_raised_ef_search", int(raised))] if raised else [])


def _drop_index(url: str, name: str) -> None:
    """Drop an index the documented best adds, so that a reused table is searched as shipped."""
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text(f'DROP INDEX IF EXISTS "{name}"'))
    engine.dispose()


def _drop_table(url: str, name: str) -> None:
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text(f'DROP TABLE IF EXISTS "{name}"'))
    engine.dispose()


def _analyze(url: str, table: str) -> None:
    engine = create_engine(url)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f'VACUUM ANALYZE "{table}"'))
    engine.dispose()


def _timed_ingest(data: Data, add: Callable[[list[dict[str, Any]], np.ndarray], None]) -> float:
    began = time.perf_counter()
    for start in range(0, len(data.rows), BATCH):
        add(data.rows[start : start + BATCH], data.vectors[start : start + BATCH])
    return len(data.rows) / (time.perf_counter() - began)


def _stored(
    data: Data,
    add: Callable[[list[dict[str, Any]], np.ndarray], None],
    build_index: Callable[[], None],
) -> dict[str, Any]:
    """The rows stored through ``add``, with the library's HNSW index in place (ingest rows/s),
    or, when ``peers.py`` asks for it (``--index-after-load``), built after the rows (pgvector's
    advice for an initial load): load rows/s and the index's build time, not an ingest rate."""
    if data.reuse:
        return {}
    if not data.plan.get("index_after_load"):
        build_index()
        return {"ingest_rows_per_s": _timed_ingest(data, add)}
    loaded = {"load_rows_per_s": _timed_ingest(data, add)}
    began = time.perf_counter()
    build_index()
    return loaded | {"index_build_s": time.perf_counter() - began}


def _adder(memories: Any) -> Callable[[list[dict[str, Any]], np.ndarray], None]:
    """A batch of rows into a LangChain ``VectorStore`` (both langchain-postgres classes)."""

    def add(rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        memories.add_embeddings(
            texts=[r["text"] for r in rows],
            embeddings=vectors.tolist(),
            metadatas=[{"tenant": r["tenant"], "row": r["row"]} for r in rows],
        )

    return add


def _searcher(data: Data, vectors: Any) -> Callable[[str, int], list[int]]:
    """A LangChain ``VectorStore``'s filtered top 10 for a tenant and a claim, as row numbers."""

    def search(tenant: str, index: int) -> list[int]:
        found = vectors.similarity_search_by_vector(
            data.query_vectors[index].tolist(), k=10, filter={"tenant": tenant}
        )
        return [int(d.metadata["row"]) for d in found]

    return search


def _langchain(url: str, data: Data) -> dict[str, Any]:
    from langchain_postgres import PGVector
    from langchain_postgres.vectorstores import DistanceStrategy

    def store(name: str, engine: Any, fresh: bool = True) -> Any:
        return PGVector(
            embeddings=data.model,  # type: ignore[arg-type]
            connection=engine,
            collection_name=name,
            distance_strategy=DistanceStrategy.EUCLIDEAN,
            embedding_length=384,
            pre_delete_collection=fresh,
            use_jsonb=True,
        )

    engine = create_engine(url)
    memories = store("peers_memories", engine, not data.reuse)

    def build_index() -> None:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "CREATE INDEX IF NOT EXISTS langchain_pg_embedding_hnsw "
                    "ON langchain_pg_embedding USING hnsw (embedding vector_l2_ops)"
                )
            )

    result = _stored(data, _adder(memories), build_index)
    _analyze(url, "langchain_pg_embedding")

    result["filtered"] = _shipped(data, _searcher(data, memories))
    engine.dispose()
    for setting, ef_search in _best_lines(data):
        _iterative_scan(url, True, ef_search)
        engine = create_engine(url)
        result["filtered"][setting] = _searches(
            data, _searcher(data, store("peers_memories", engine, False))
        )
        engine.dispose()
    _iterative_scan(url, False)
    if data.plan["scifact"]:
        engine = create_engine(url)
        abstracts = store("peers_abstracts", engine)
        abstracts.add_embeddings(
            texts=[a["text"] for a in data.abstracts],
            embeddings=data.abstract_vectors.tolist(),
            metadatas=[{"doc_id": a["doc_id"]} for a in data.abstracts],
        )
        nearest = abstracts.similarity_search_by_vector
        result["scifact"] = {
            "ndcg_at_10": [
                [d.metadata["doc_id"] for d in nearest(v.tolist(), k=10)]
                for v in data.query_vectors
            ]
        }
        engine.dispose()
    return result


def _pgvectorstore(url: str, data: Data) -> dict[str, Any]:
    from langchain_postgres import Column, PGEngine, PGVectorStore
    from langchain_postgres.v2.hybrid_search_config import (
        HybridSearchConfig,
        reciprocal_rank_fusion,
        weighted_sum_ranking,
    )
    from langchain_postgres.v2.indexes import DistanceStrategy, HNSWIndex

    table = "peers_v2_memories"
    columns = [Column("tenant", "TEXT"), Column("row", "INTEGER")]

    def open_store(engine: Any, name: str, names: list[str], **options: Any) -> Any:
        return PGVectorStore.create_sync(
            engine,
            embedding_service=data.model,  # type: ignore[arg-type]
            table_name=name,
            metadata_columns=names,
            distance_strategy=DistanceStrategy.EUCLIDEAN,
            **options,
        )

    engine = PGEngine.from_connection_string(url=url)
    if not data.reuse:
        engine.init_vectorstore_table(table, 384, metadata_columns=columns, overwrite_existing=True)
    memories = open_store(engine, table, ["tenant", "row"])

    def build_index() -> None:
        memories.apply_vector_index(HNSWIndex(distance_strategy=DistanceStrategy.EUCLIDEAN))

    result = _stored(data, _adder(memories), build_index)
    _drop_index(url, "peers_v2_tenant")
    _analyze(url, table)

    result["filtered"] = _shipped(data, _searcher(data, memories))
    sync = create_engine(url)
    with sync.begin() as connection:  # its tenant is a column: a btree serves the filter
        connection.execute(text(f'CREATE INDEX peers_v2_tenant ON "{table}" (tenant)'))
    sync.dispose()
    _analyze(url, table)
    for setting, ef_search in _best_lines(data):
        _iterative_scan(url, True, ef_search)
        engine = PGEngine.from_connection_string(url=url)
        best = open_store(engine, table, ["tenant", "row"])
        result["filtered"][setting] = _searches(data, _searcher(data, best))
    _iterative_scan(url, False)
    if data.plan["scifact"]:
        engine = PGEngine.from_connection_string(url=url)
        name = "peers_v2_abstracts"
        hybrid = HybridSearchConfig(tsv_lang="pg_catalog.english")
        engine.init_vectorstore_table(
            name, 384, metadata_columns=[Column("doc_id", "TEXT")], overwrite_existing=True,
            hybrid_search_config=hybrid,
        )  # fmt: skip
        abstracts = open_store(engine, name, ["doc_id"], hybrid_search_config=hybrid)
        abstracts.apply_vector_index(HNSWIndex(distance_strategy=DistanceStrategy.EUCLIDEAN))
        abstracts.add_embeddings(
            texts=[a["text"] for a in data.abstracts],
            embeddings=data.abstract_vectors.tolist(),
            metadatas=[{"doc_id": a["doc_id"]} for a in data.abstracts],
        )
        abstracts.apply_hybrid_search_index()
        dense = open_store(engine, name, ["doc_id"])
        rankings: dict[str, Any] = {
            "ndcg_at_10": [
                [d.metadata["doc_id"] for d in dense.similarity_search_by_vector(v.tolist(), k=10)]
                for v in data.query_vectors
            ]
        }  # fmt: skip
        for label, fusion in (("weighted_sum", weighted_sum_ranking),
                              ("rrf", reciprocal_rank_fusion)):  # fmt: skip
            config = HybridSearchConfig(
                tsv_column=hybrid.tsv_column,
                tsv_lang="pg_catalog.english",
                fusion_function=fusion,
                primary_top_k=HYBRID_CANDIDATES,
                secondary_top_k=HYBRID_CANDIDATES,
            )
            searched = open_store(engine, name, ["doc_id"], hybrid_search_config=config)
            # A config of each call's own: similarity_search writes its query into the config
            # it is given (fts_query), and a shared one would keep the first query's words.
            rankings[f"ndcg_at_10_hybrid_{label}"] = [
                [
                    d.metadata["doc_id"]
                    for d in searched.similarity_search(
                        claim, k=10, hybrid_search_config=replace(config, fts_query=claim)
                    )
                ]
                for claim in data.claims
            ]
        result["scifact"] = rankings
    return result


def _llamaindex(url: str, data: Data) -> dict[str, Any]:
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores.types import (
        ExactMatchFilter,
        MetadataFilters,
        VectorStoreQuery,
        VectorStoreQueryMode,
    )
    from llama_index.vector_stores.postgres import PGVectorStore
    from sqlalchemy.engine import make_url

    parsed = make_url(url)

    def store(
        table: str,
        hybrid: bool = False,
        without_index: bool = False,
        ef_search: int = 40,
        **options: Any,
    ) -> Any:
        hnsw = {"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": ef_search}
        return PGVectorStore.from_params(
            # Its sync path binds SET hnsw.ef_search client-side: psycopg2, as it expects.
            connection_string=parsed.set(drivername="postgresql+psycopg2"),
            async_connection_string=parsed.set(drivername="postgresql+asyncpg"),
            table_name=table,
            embed_dim=384,
            hybrid_search=hybrid,
            text_search_config="english",
            # Its documented HNSW settings; the operator class is its default (cosine, the
            # distance it orders by).
            hnsw_kwargs=None if without_index else hnsw,
            **options,
        )

    after_load = bool(data.plan.get("index_after_load")) and not data.reuse
    if not data.reuse:  # a new load: nothing of an earlier one (its store appends to a table)
        for table in ("memories", "abstracts", "abstracts_hybrid"):
            _drop_table(url, f"data_peers_{table}")
    # Its HNSW index is made when a store with hnsw_kwargs first opens the table.
    memories = store("peers_memories", without_index=after_load)

    def add(rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        memories.add(
            [
                TextNode(
                    text=r["text"],
                    embedding=vectors[i].tolist(),
                    metadata={"tenant": r["tenant"], "row": r["row"]},
                )
                for i, r in enumerate(rows)
            ]
        )

    def build_index() -> None:  # a store with hnsw_kwargs makes the index as it opens
        nonlocal memories
        memories = store("peers_memories")
        memories._initialize()

    result = _stored(data, add, build_index)
    _drop_index(url, "peers_memories_idx_tenant_text")  # its indexed_metadata_keys btree
    _analyze(url, "data_peers_memories")

    def searcher(vectors: Any) -> Callable[[str, int], list[int]]:
        def search(tenant: str, index: int) -> list[int]:
            found = vectors.query(
                VectorStoreQuery(
                    query_embedding=data.query_vectors[index].tolist(),
                    similarity_top_k=10,
                    filters=MetadataFilters(filters=[ExactMatchFilter(key="tenant", value=tenant)]),
                )
            )
            return [int(n.metadata["row"]) for n in found.nodes]

        return search

    result["filtered"] = _shipped(data, searcher(memories))
    # Its documented tenant index: the btree it makes for indexed_metadata_keys, made here on
    # the table the rows are already in (the library makes it only with a new table).
    indexed = store("peers_memories", indexed_metadata_keys={("tenant", "text")})
    engine = create_engine(url)
    for index in indexed._table_class.__table__.indexes:
        index.create(engine, checkfirst=True)
    engine.dispose()
    _analyze(url, "data_peers_memories")
    _iterative_scan(url, True)
    keys = {("tenant", "text")}
    for setting, ef_search in _best_lines(data):
        # It sets hnsw.ef_search itself before each query, from its hnsw_kwargs.
        best = store("peers_memories", indexed_metadata_keys=keys, ef_search=ef_search or 40)
        result["filtered"][setting] = _searches(data, searcher(best))
    _iterative_scan(url, False)
    if data.plan["scifact"]:
        rankings: dict[str, Any] = {}
        for label, hybrid in (("ndcg_at_10", False), ("ndcg_at_10_hybrid", True)):
            abstracts = store("peers_abstracts" + ("_hybrid" if hybrid else ""), hybrid)
            abstracts.add(
                [
                    TextNode(
                        text=a["text"],
                        embedding=data.abstract_vectors[i].tolist(),
                        metadata={"doc_id": a["doc_id"]},
                    )
                    for i, a in enumerate(data.abstracts)
                ]
            )
            mode = VectorStoreQueryMode.HYBRID if hybrid else VectorStoreQueryMode.DEFAULT
            ranked = []
            for index, vector in enumerate(data.query_vectors):
                found = abstracts.query(
                    VectorStoreQuery(
                        query_embedding=vector.tolist(),
                        query_str=data.claims[index],
                        similarity_top_k=10,
                        mode=mode,
                    )
                )
                ranked.append([n.metadata["doc_id"] for n in found.nodes])
            rankings[label] = ranked
        result["scifact"] = rankings
    return result


if __name__ == "__main__":
    main()
