"""This library against its peers (langchain-postgres ``PGVector`` and ``PGVectorStore``,
llama-index's ``PGVectorStore``) on the same data, model and server, each as shipped and at its
documented best, with the floor (our plan's bare statement), measured in one run. What is
measured and how, and the figures: benchmarks/README.md, "Peers".

The peers pin versions of SQLAlchemy and pgvector this library cannot share a virtual
environment with, so they run in their own (``--peers-python``; make it with ``python -m venv
.venv-peers && .venv-peers/bin/pip install langchain-postgres llama-index-vector-stores-postgres
numpy``) through ``benchmarks/peers/_peers_worker.py``, against a database of their own on the same
embedded PostgreSQL. The rows and tenants are ``_scifact.py``'s (``memory_vectors``,
``tenant_of``).

Usage: python benchmarks/peers/peers.py [--rows 100000] [--data-dir DIR] [--peers-python PATH]
       [--libraries langchain,langchain-pgvectorstore,llamaindex] [--ours NAMES]
       [--filtered-only] [--index-after-load] [--keep-peers] [--searches-only RESULT]
       [--json PATH]

``--searches-only RESULT`` measures every search again (ours, the floor, the peers) on the rows
an earlier run of the same ``--rows`` kept in ``--data-dir``, and writes them into RESULT.
``curves.py`` sweeps each system's knobs on those rows (recall against latency).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import ROOT, add_output, claim_timing, git_commit, timed_passes, write_result
from _peers_common import (
    PASSES,
    PEERS_DATABASE,
    floor_search,
    peer_summary,
    peer_work,
    peers_data,
    run_peer,
    searched,
)
from _scifact import (
    AS_OF,
    DATA,
    OURS,
    SCIFACT_TENANT,
    TENANTS,
    abstract_text,
    cached_vectors,
    evaluate,
    floor_statement,
    row_numbers,
    shapes,
    vector_alone,
)
from pgvector import HalfVector
from pgvector.psycopg import register_vector
from sqlalchemy import text

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

# The documented best's second line: pgvector's knob for recall raised (ours is 160).
RAISED_EF_SEARCH = 400


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--data-dir", type=Path, help="keep the server's data here")
    parser.add_argument(
        "--peers-python", type=Path, default=ROOT / ".venv-peers" / "bin" / "python"
    )
    parser.add_argument(
        "--libraries",
        default="langchain,langchain-pgvectorstore,llamaindex",
        help="comma-separated, of langchain, langchain-pgvectorstore, llamaindex ('' for ours "
        "alone)",
    )
    parser.add_argument(
        "--filtered-only", action="store_true", help="ingest and filtered search, no nDCG"
    )
    parser.add_argument(
        "--ours",
        default=",".join(OURS),
        help=f"comma-separated, of our configurations: {', '.join(OURS)}",
    )
    parser.add_argument(
        "--searches-only",
        type=Path,
        help="measure our searches and the floor again on the data of --data-dir (stored by an "
        "earlier run of the same --rows), keeping that run's ingest figures and peers, and "
        "write them into this result file",
    )
    parser.add_argument(
        "--keep-peers",
        action="store_true",
        help="keep the peers' database and the tables of the libraries not in --libraries (load "
        "only these again: a million-row run whose last library did not finish)",
    )
    parser.add_argument(
        "--index-after-load",
        action="store_true",
        help="the peers' HNSW indexes built after their rows are stored (pgvector's advice for an "
        "initial load; maintenance_work_mem 8GB on their database): their load rows/s and build "
        "times, not an ingest rate; for a million rows, whose ingest one by one into their graphs "
        "takes about an hour each",
    )
    add_output(parser)
    args = parser.parse_args()
    libraries = [name for name in args.libraries.split(",") if name]
    ours = [name for name in args.ours.split(",") if name]
    if libraries and not args.peers_python.exists():
        raise SystemExit(
            f"no peers' Python at {args.peers_python}: make it with `python -m venv .venv-peers && "
            ".venv-peers/bin/pip install langchain-postgres llama-index-vector-stores-postgres "
            "numpy`, or give --peers-python"
        )

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rtv-peers-")) / "pg"
    database = connect(DatabaseConfig(data_dir=data_dir))
    assert database.embedded is not None
    embedder = SentenceTransformerEmbedder()
    data = peers_data(embedder, args.rows, data_dir.parent)
    rows, vectors, claims, claim_vectors, exact = (
        data.rows, data.vectors, data.claims, data.claim_vectors, data.exact
    )  # fmt: skip
    abstracts_raw = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    abstracts = [{"doc_id": d["_id"], "text": abstract_text(d)} for d in abstracts_raw]
    abstract_vectors = cached_vectors(
        embedder, [a["text"] for a in abstracts], data_dir.parent / "scifact-abstract-vectors.npy"
    )
    qrels, query_ids = data.qrels, data.query_ids
    results: dict[str, Any] = {
        "rows": args.rows,
        "tenant_rows": data.tenant_rows,
        "claims": len(claims),
        "passes": PASSES,
    }
    pool = vector_alone(shapes()["semantic"]).pool
    # What each peer's worker is asked to do (more below, by the kind of run).
    plan = {"claims": claims, "tenants": list(TENANTS), "passes": PASSES,
            "raised_ef_search": RAISED_EF_SEARCH}  # fmt: skip
    scifact = None if args.filtered_only else (abstracts, abstract_vectors, qrels, query_ids)
    if args.searches_only is not None:
        kept = json.loads(args.searches_only.read_text())
        for name in ours:
            earlier = kept["results"].get(name, {})
            kept["results"][name] = _ours(
                database, embedder, OURS[name], rows, vectors, claims, exact, scifact, reuse=True
            )
            if "ingest_rows_per_s" in earlier:
                kept["results"][name]["ingest_rows_per_s"] = earlier["ingest_rows_per_s"]
            print(name, json.dumps(kept["results"][name]), flush=True)
        kept["results"]["floor"] = _floor(database.embedded.libpq_dsn(), claim_vectors, exact, pool)
        print("floor", json.dumps(kept["results"]["floor"]), flush=True)
        if libraries:  # their searches again, on their kept rows
            url = str(database.embedded.url(PEERS_DATABASE))
            plan |= {"scifact": False, "reuse": True}
            work = peer_work(plan, rows, vectors, claim_vectors)
        for library in libraries:
            raw = run_peer(args.peers_python, library, url, work)
            earlier = kept["results"].get(library, {})
            kept["results"][library] = {
                **{k: v for k, v in earlier.items() if not isinstance(v, dict)},
                **peer_summary(raw, exact, qrels, query_ids),
            }
            print(library, json.dumps(kept["results"][library]), flush=True)
        kept["searches_remeasured_at"] = git_commit()
        kept["searches_remeasured_on"] = date.today().isoformat()
        args.searches_only.write_text(json.dumps(kept, indent=2) + "\n")
        return
    for name in ours:
        setting = OURS[name]
        results[name] = _ours(database, embedder, setting, rows, vectors, claims, exact, scifact)
        print(name, json.dumps(results[name]), flush=True)
    results["floor"] = _floor(database.embedded.libpq_dsn(), claim_vectors, exact, pool)
    print("floor", json.dumps(results["floor"]), flush=True)

    if libraries:
        url = _peers_database(database, args.index_after_load, keep=args.keep_peers)
        plan |= {"scifact": not args.filtered_only, "index_after_load": args.index_after_load}
        work = peer_work(plan, rows, vectors, claim_vectors, (abstracts, abstract_vectors))
        for library in libraries:
            began = time.perf_counter()
            raw = run_peer(args.peers_python, library, url, work)
            results[library] = peer_summary(raw, exact, qrels, query_ids)
            results[library]["run_s"] = time.perf_counter() - began
            print(library, json.dumps(results[library]), flush=True)
    write_result("peers", results, args)
    database.dispose()


def _ours(database, embedder, setting, rows, vectors, claims, exact, scifact, reuse=False):  # type: ignore[no-untyped-def]
    schema, vector_type, hnsw_options, ef_search = setting
    settings = MigrationSettings(schema=schema, embedding_dim=384, vector_type=vector_type)
    upgrade(database.engine, settings)
    database.engine.dispose()
    store = MemoryStore(database.engine, schema=schema, embedder=embedder)
    if reuse:
        return _our_searches(database, store, schema, ef_search, claims, exact, scifact)
    with database.engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {schema}.memories CASCADE"))
        if hnsw_options is not None:  # the peers' graph in place of ours, before the rows
            connection.execute(text(f"DROP INDEX {schema}.memories_embedding_hnsw_idx"))
            connection.execute(
                text(
                    f"CREATE INDEX memories_embedding_hnsw_idx ON {schema}.memories "
                    f"USING hnsw (embedding vector_l2_ops) WITH ({hnsw_options})"
                )
            )
    began = time.perf_counter()
    ids: list[int] = []
    for start in range(0, len(rows), 1000):
        ids += store.remember_many(
            MemoryInput(text=r["text"], tenant_id=r["tenant"], embedding=vectors[start + i],
                        created_at=AS_OF)
            for i, r in enumerate(rows[start : start + 1000])
        )  # fmt: skip
    result: dict[str, Any] = {"ingest_rows_per_s": len(rows) / (time.perf_counter() - began)}
    if scifact is not None:
        abstracts, abstract_vectors, _, _ = scifact
        store.remember_many(
            MemoryInput(text=a["text"], tenant_id=SCIFACT_TENANT, embedding=abstract_vectors[i],
                        metadata={"doc_id": a["doc_id"]}, created_at=AS_OF)
            for i, a in enumerate(abstracts)
        )  # fmt: skip
    with database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f"VACUUM ANALYZE {schema}.memories"))
    searched = _our_searches(database, store, schema, ef_search, claims, exact, scifact)
    return {**result, **searched}


def _our_searches(database, store, schema, ef_search, claims, exact, scifact):  # type: ignore[no-untyped-def]
    row_of = row_numbers(database.engine, schema)
    result: dict[str, Any] = {}
    semantic = shapes()["semantic"]
    if ef_search is not None:
        semantic = replace(semantic, ef_search=ef_search)
    alone = vector_alone(semantic)
    with HybridRetriever.from_store(store, config=alone) as retriever:
        for tenant, nearest in exact.items():

            def search(index: int, tenant: str = tenant) -> list[int]:
                found = retriever.retrieve(claims[index], tenant_id=tenant, as_of=AS_OF)
                return [row_of[r.metadata["id"]] for r in found]

            result[tenant] = searched(*timed_passes(search, len(claims), PASSES), nearest)

            def default(index: int, tenant: str = tenant) -> list[int]:
                found = retriever.retrieve(
                    claims[index], tenant_id=tenant, as_of=AS_OF, config=semantic, limit=10
                )
                return [row_of.get(r.metadata["id"], -1) for r in found]

            found, times = timed_passes(default, len(claims), PASSES)
            result[tenant]["semantic_source_defaults"] = {
                **claim_timing(times),
                "rows_per_query": statistics.mean(len(ids) for ids in found),
            }
        if scifact is not None:
            _, _, qrels, query_ids = scifact
            for name, config in (("ndcg_at_10", shapes()["all sources"]),
                                 ("ndcg_at_10_vector_alone", alone)):  # fmt: skip
                run = {}
                for query_id, claim in zip(query_ids, claims, strict=True):
                    found = retriever.retrieve(
                        claim, tenant_id=SCIFACT_TENANT, as_of=AS_OF, limit=10, config=config
                    )
                    run[query_id] = [
                        (r.metadata["metadata"]["doc_id"], r.final_score) for r in found
                    ]
                result[name] = evaluate(run, qrels)["ndcg@10"]
    return result


def _floor(
    url: str, claim_vectors: np.ndarray, exact: dict[str, list[list[int]]], pool: int
) -> dict[str, Any]:
    """The bare statement of our filtered search on our default table
    (``_scifact.floor_statement``), no library code, the 10 nearest of its rows kept; the same
    session settings as the retriever's, psycopg, prepared, vectors bound in binary."""
    schema = OURS["ours"][0]
    floor: dict[str, Any] = {}
    with psycopg.connect(url, autocommit=True) as connection:
        register_vector(connection)
        connection.execute("SET hnsw.iterative_scan = relaxed_order")
        connection.execute(f"SET hnsw.ef_search = {RetrievalConfig().ef_search}")
        ids = connection.execute(f"SELECT id FROM {schema}.memories ORDER BY id").fetchall()
        row_of = {memory_id: row for row, (memory_id,) in enumerate(ids)}
        halves = [HalfVector(vector.astype(np.float16)) for vector in claim_vectors]
        for tenant, top in exact.items():
            query, read_exactly = floor_statement(
                connection, schema, tenant, config=RetrievalConfig()
            )
            search = floor_search(connection, query, halves, tenant, pool, row_of)
            found, times = timed_passes(search, len(claim_vectors), PASSES)
            floor[tenant] = {**searched(found, times, top), "read_exactly": read_exactly}
    return floor


def _peers_database(database, index_after_load: bool, keep: bool = False) -> str:  # type: ignore[no-untyped-def]
    """A database of the peers' own on the same server (its settings are changed between the
    as-shipped and the documented-best runs), with pgvector, made anew unless ``keep`` and it
    exists; its SQLAlchemy URL."""
    with database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        exists = connection.execute(
            text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": PEERS_DATABASE}
        ).first()
        if not (keep and exists):
            connection.execute(text(f"DROP DATABASE IF EXISTS {PEERS_DATABASE} WITH (FORCE)"))
            connection.execute(text(f"CREATE DATABASE {PEERS_DATABASE}"))
        if index_after_load:  # pgvector: a graph built in memory builds much faster
            connection.execute(
                text(f"ALTER DATABASE {PEERS_DATABASE} SET maintenance_work_mem = '8GB'")
            )
    with psycopg.connect(database.embedded.libpq_dsn(PEERS_DATABASE), autocommit=True) as peers:
        peers.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return str(database.embedded.url(PEERS_DATABASE))


if __name__ == "__main__":
    main()
