"""The SciFact data the benchmarks build on, and the stored datasets they share.

The corpus, the 300 test claims and their judgments (``../shared/data/scifact``); the read
benchmark's tenant of 100,000 memories, decisions and tool calls (``bench_one``, made by
``retrieve.py``, read by ``embedded_memory.py``, ``retrieve_ab.py``,
``row_security.py`` and ``load.py``); the documents benchmark's 100,000 chunks
(``bench_docs``); BEIR's evaluation of a run (nDCG@10, recall@10 and @100); and the timed loop
of ``retrieve()`` calls the read benchmarks report.
"""

from __future__ import annotations

import json
import math
import random
import re
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from _common import percentiles, timed_ms
from sqlalchemy import Engine, text

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import Database, connect
from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.db.vector_index import build_vector_index, drop_vector_index
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.records import DecisionInput, MemoryInput, ToolCallInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.retriever import HybridRetriever

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
ONE = MigrationSettings(schema="bench_one", embedding_dim=384)
SPREAD = MigrationSettings(schema="bench_spread", embedding_dim=384)
TENANT = "agent-1"
AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
KINDS = ("fact", "episteme", "techne", "critique", "decision", "proposal", "synthesized_insight")
TOOLS = [
    f"{verb}_{noun}"
    for verb in ("search", "fetch", "summarize", "compare", "run")
    for noun in ("pubmed", "papers", "trials", "genes", "notes", "sql", "table", "figure")
]
BATCH = 5000
DOCUMENTS = MigrationSettings(schema="bench_docs", embedding_dim=384)
CORPUS = DATA / "corpus.jsonl"
Ranking = list[tuple[str, float]]  # (doc_id, score), best first
# beir_eval.py's SciFact abstracts as documents and memories (read by documents_gate.py).
BEIR = MigrationSettings(schema="beir", embedding_dim=384)
BEIR_TENANT = "beir"


@dataclass(frozen=True)
class Corpus:
    titles: list[str]
    vectors: np.ndarray
    sentences: list[str]
    queries: list[str]


def load_corpus(embedder: SentenceTransformerEmbedder, cache: Path) -> Corpus:
    docs = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    titles = [doc["title"].strip() or doc["text"][:120] for doc in docs]
    if cache.exists():
        vectors = np.load(cache)
    else:
        print(f"embedding {len(titles)} SciFact titles once (cached in {cache})")
        vectors = embedder.embed(titles)
        np.save(cache, vectors)
    sentences = [
        sentence.strip()[:220]
        for doc in docs
        for sentence in re.split(r"(?<=\.)\s+", doc["text"])
        if len(sentence.strip()) > 40
    ]
    wanted = {line.split("\t")[0] for line in (DATA / "qrels" / "test.tsv").open()}
    queries = [
        q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open()) if q["_id"] in wanted
    ]
    return Corpus(titles=titles, vectors=vectors, sentences=sentences, queries=queries)


def noisy_copies(base: np.ndarray, rows: int, rng: np.random.Generator) -> np.ndarray:
    picks = np.arange(rows) % len(base)
    noisy = base[picks] + rng.normal(0.0, 0.02, size=(rows, base.shape[1])).astype(np.float32)
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def count(engine: Engine, schema: str) -> int:
    with engine.connect() as connection:
        return int(connection.execute(text(f"SELECT count(*) FROM {schema}.memories")).scalar_one())


def load(
    engine: Engine,
    schema: str,
    embedder: SentenceTransformerEmbedder,
    corpus: Corpus,
    vectors: np.ndarray,
    tenants: int,
    rows: int,
) -> None:
    started = time.perf_counter()
    with engine.begin() as connection:
        connection.execute(
            # The word index and the memories' statistics follow, by their triggers.
            text(f"TRUNCATE {schema}.memories, {schema}.decisions, {schema}.tool_calls CASCADE")
        )
    drop_vector_index(engine, schema)
    store = MemoryStore(engine, schema=schema, embedder=embedder)
    rng = random.Random(11)
    span = 90 * 24 * 3600

    def when() -> datetime:
        return AS_OF - timedelta(seconds=rng.randrange(span))

    def tenant(i: int) -> str:
        return TENANT if tenants == 1 else f"t{i % tenants:02d}"

    for start in range(0, rows, BATCH):
        stop = min(rows, start + BATCH)
        store.remember_many(
            MemoryInput(
                text=f"{corpus.titles[i % len(corpus.titles)]} (note {i})",
                tenant_id=tenant(i),
                kind=KINDS[i % len(KINDS)],
                created_at=when(),
                embedding=vectors[i],
            )
            for i in range(start, stop)
        )
        if tenants > 1:
            continue
        decision_ids = store.record_decisions(
            DecisionInput(
                tenant_id=TENANT,
                task_id=f"task-{i % 2000}",
                action_type=rng.choice(("plan", "investigate", "write", "review")),
                content=corpus.sentences[i % len(corpus.sentences)],
                status=rng.choice(("done", "open", "failed")),
                created_at=when(),
            )
            for i in range(start, stop)
        )
        store.record_tool_calls(
            ToolCallInput(
                tenant_id=TENANT,
                decision_id=decision_ids[(i - start) % len(decision_ids)],
                tool_name=TOOLS[i % len(TOOLS)],
                params={
                    "query": " ".join(corpus.titles[(i * 7) % len(corpus.titles)].split()[:4]),
                    "limit": 10 + i % 50,
                },
                result=f"{i % 37} results",
                created_at=when(),
            )
            for i in range(start, stop)
        )
        print(f"{schema}: {stop} rows per table loaded", flush=True)
    build_vector_index(engine, schema)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        for table in (
            "memories",
            "decisions",
            "tool_calls",
            "memory_entities",
            "episodic_vocabulary",
            "episodic_postings",
        ):
            connection.execute(text(f"VACUUM ANALYZE {schema}.{table}"))
    print(f"{schema}: loaded in {time.perf_counter() - started:.0f} s", flush=True)


def latency(
    store: MemoryStore,
    queries: Sequence[str],
    runs: int,
    *,
    config: RetrievalConfig | None = None,
    access: bool = True,
) -> dict[str, Any]:
    per_run: list[dict[str, float]] = []
    config = config or RetrievalConfig(record_access=False)
    with HybridRetriever.from_store(store, config=config) as retriever:
        for query in queries:  # cache every query vector (and warm the connection)
            retriever.retrieve(query, tenant_id=TENANT, as_of=AS_OF)
        diagnostics = []
        for _ in range(runs):
            times = []
            for query in queries:
                response, elapsed = timed_ms(
                    retriever.retrieve, query, tenant_id=TENANT, as_of=AS_OF
                )
                times.append(elapsed)
                diagnostics.append(response.diagnostics)
            per_run.append(percentiles(times))
        with_access = []
        if access:
            recording = HybridRetriever.from_store(
                store, config=replace(config, record_access=True)
            )
            for query in queries[:50]:
                recording.retrieve(query, tenant_id=TENANT, as_of=AS_OF)
            for query in queries:
                with_access.append(
                    timed_ms(recording.retrieve, query, tenant_id=TENANT, as_of=AS_OF)[1]
                )
            recording.close()
    candidates = {
        name: statistics.mean(d.sources[name].candidates for d in diagnostics)
        for name in ("semantic", "episodic", "documents")
        if all(name in d.sources for d in diagnostics)
    }
    return {
        "queries": len(queries),
        "runs": per_run,
        "p50_ms": statistics.median(r["p50"] for r in per_run),
        "p95_ms": statistics.median(r["p95"] for r in per_run),
        "sql_p50_ms": statistics.median(d.sql_ms for d in diagnostics),
        "fusion_p50_ms": statistics.median(d.fusion_ms for d in diagnostics),
        "mean_candidates": candidates,
        "mean_results": statistics.mean(
            sum(s.returned for s in d.sources.values()) for d in diagnostics
        ),
        "with_access_recording": percentiles(with_access) if with_access else None,
    }


def read_queries() -> list[str]:
    wanted = {line.split("\t")[0] for line in (DATA / "qrels" / "test.tsv").open()}
    return [
        q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open()) if q["_id"] in wanted
    ]


def stored_chunks(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(
            connection.execute(
                text(
                    f"SELECT count(*) FROM {DOCUMENTS.schema}.document_chunks WHERE tenant_id = :t"
                ),
                {"t": TENANT},
            ).scalar_one()
        )


def documents_only() -> RetrievalConfig:
    default = RetrievalConfig(record_access=False)
    return replace(
        default,
        semantic=replace(default.semantic, enabled=False),
        episodic=replace(default.episodic, enabled=False),
    )


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in list(path.open())[1:]:
        query_id, doc_id, score = line.rstrip("\n").split("\t")
        if int(score) > 0:
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def evaluate(
    run: Mapping[str, Ranking], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, float]:
    ndcg, recall10, recall100 = [], [], []
    for query_id, relevant in qrels.items():
        ranked = [doc for doc, _ in run.get(query_id, [])]
        gains = [relevant.get(doc, 0) for doc in ranked[:10]]
        dcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains))
        ideal = sorted(relevant.values(), reverse=True)[:10]
        idcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))
        ndcg.append(dcg / idcg if idcg else 0.0)
        recall10.append(len(set(ranked[:10]) & set(relevant)) / len(relevant))
        recall100.append(len(set(ranked[:100]) & set(relevant)) / len(relevant))
    return {
        "ndcg@10": statistics.mean(ndcg),
        "recall@10": statistics.mean(recall10),
        "recall@100": statistics.mean(recall100),
    }


def abstract_text(doc: Mapping[str, Any]) -> str:
    """A SciFact abstract as one text: its title, then its body."""
    title = str(doc.get("title", "")).strip()
    return f"{title}. {doc['text']}" if title else str(doc["text"])


def cached_vectors(
    embedder: SentenceTransformerEmbedder, texts: Sequence[str], cache: Path
) -> np.ndarray:
    """The embeddings of ``texts``, computed once and kept in ``cache`` (a ``.npy`` file)."""
    if cache.exists():
        vectors = np.load(cache)
        if len(vectors) == len(texts):
            return vectors
    print(f"embedding {len(texts)} texts once (cached in {cache})", flush=True)
    step = 2048
    vectors = np.concatenate(
        [embedder.embed(list(texts[i : i + step])) for i in range(0, len(texts), step)]
    )
    np.save(cache, vectors)
    return vectors


def scifact_sentences(limit: int) -> list[str]:
    """Sentences of SciFact abstracts, as long as a decision's content usually is."""
    sentences: list[str] = []
    with CORPUS.open() as handle:
        for line in handle:
            for sentence in json.loads(line)["text"].split(". "):
                if len(sentence) > 40:
                    sentences.append(sentence.strip())
                if len(sentences) == limit:
                    return sentences
    return sentences


def scifact_texts(limit: int, *, long: bool) -> list[str]:
    """Memory-sized texts (SciFact titles, about 90 characters) or long ones (whole abstracts)."""
    texts: list[str] = []
    with CORPUS.open() as handle:
        for line in handle:
            doc = json.loads(line)
            texts.append(f"{doc['title']} {doc['text']}".strip() if long else doc["title"])
    # Past the corpus size, vary the texts so that every one is distinct.
    return [texts[i % len(texts)] + ("" if i < len(texts) else f" (copy {i // len(texts)})")
            for i in range(limit)]  # fmt: skip


def shapes() -> dict[str, RetrievalConfig]:
    """The retriever's configs the read benchmarks time: all sources, and each database source alone
    (access recording off)."""
    base = RetrievalConfig(record_access=False)
    semantic, episodic, documents = (
        replace(base.semantic, enabled=False),
        replace(base.episodic, enabled=False),
        replace(base.documents, enabled=False),
    )
    return {
        "all sources": base,
        "semantic": replace(base, episodic=episodic, documents=documents),
        "episodic": replace(base, semantic=semantic, documents=documents),
        "documents": replace(base, semantic=semantic, episodic=episodic),
    }


def sentence_memories(data_dir: Path, tenant: str, rows: int) -> tuple[Database, MemoryStore]:
    """The embedded server of ``data_dir`` (migrated), and a store whose ``tenant`` holds
    ``rows`` SciFact sentences as memories (stored and embedded once; the data directory keeps
    them between runs)."""
    config = DatabaseConfig(data_dir=data_dir)
    database = connect(config)
    upgrade(database.engine, MigrationSettings.from_config(config))
    store = MemoryStore.from_database(database)
    with database.engine.connect() as connection:
        have = connection.execute(
            text("SELECT count(*) FROM retrieval.memories WHERE tenant_id = :t"), {"t": tenant}
        ).scalar_one()
    if have != rows:
        if have:
            store.forget(tenant_id=tenant, everything=True)
        sentences = scifact_sentences(rows)
        print(f"storing {len(sentences)} SciFact sentences as memories (embedded once)")
        for start in range(0, len(sentences), 500):
            batch = sentences[start : start + 500]
            store.remember_many({"text": sentence, "tenant_id": tenant} for sentence in batch)
    # Settled tables (statistics, visibility map, the GIN pending list) before any timing.
    with database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM ANALYZE retrieval.memories"))
    return database, store


# -- the peers' and the scale benchmarks' rows ---------------------------------------------

# Noise of the copies of the sentences' vectors that make up large tables.
NOISE = 0.01


def memory_vectors(base: np.ndarray, rows: int) -> np.ndarray:
    """``rows`` vectors: the sentences' own, then noisy copies of them."""
    rng = np.random.default_rng(11)
    out = np.empty((rows, base.shape[1]), dtype=np.float32)
    out[: len(base)] = base[: min(rows, len(base))]
    for start in range(len(base), rows, 100_000):
        stop = min(rows, start + 100_000)
        noisy = base[np.arange(start, stop) % len(base)] + rng.normal(
            0.0, NOISE, size=(stop - start, base.shape[1])
        ).astype(np.float32)
        out[start:stop] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return out


# The tenants of the peers' data: rows per 1,000 of the three measured ones, the others about
# 1% each; the libraries' settings measured.
TENANTS = {"t-0.1pct": 1, "t-1pct": 10, "t-10pct": 100}  # rows per 1,000
OTHERS = 89
SCIFACT_TENANT = "scifact"
PEERS_HNSW = "m = 16, ef_construction = 64"
OURS = {
    # name: (schema, vector type, HNSW options or None for the migration's, ef_search)
    "ours": ("peers_ours", "halfvec", None, None),
    "ours (peers' index settings)": ("peers_ours_vector", "vector", PEERS_HNSW, 40),
}


def tenant_of(row: int) -> str:
    """The tenant of row ``row``: 0.1%, 1% and 10% of the rows in the three measured tenants,
    spread through the table (7919 is prime to 1,000, so each residue comes once in 1,000)."""
    slot = (row * 7919 + 13) % 1000
    for tenant, share in TENANTS.items():
        if slot < share:
            return tenant
        slot -= share
    return f"o{slot % OTHERS:02d}"


def exact_nearest(vectors: np.ndarray, mine: np.ndarray, queries: np.ndarray) -> list[list[int]]:
    """The rows of ``mine`` nearest each query (L2 on unit vectors: the largest dot product)."""
    scores = queries @ vectors[mine].T
    return [mine[np.argsort(-row, kind="stable")[:10]].tolist() for row in scores]


def row_numbers(engine: Engine, schema: str) -> dict[int, int]:
    """Each stored memory's row number in the data (the SciFact abstracts left out)."""
    with engine.connect() as connection:
        ids = connection.execute(
            text(f"SELECT id FROM {schema}.memories WHERE tenant_id <> :s ORDER BY id"),
            {"s": SCIFACT_TENANT},
        ).scalars()
        return {memory_id: row for row, memory_id in enumerate(ids)}


def dense_alone(config: RetrievalConfig) -> RetrievalConfig:
    """``config`` with the semantic source ranked by its relevance alone (recency weight 0),
    no BM25 channel, no threshold, no cut-off, no newer version first: the vector channel's own
    ranking, its limits kept."""
    return replace(
        config,
        semantic=replace(config.semantic, relevance=1.0, recency=0.0),
        min_final_score=0.0,
        max_distance=None,
        memory_bm25=False,
        **_nearest_only(config),
    )


def _nearest_only(config: RetrievalConfig) -> dict[str, bool]:
    # No memory ranked under a newer version of itself (a revision without the setting: none).
    return {"newer_versions_first": False} if hasattr(config, "newer_versions_first") else {}


def vector_alone(config: RetrievalConfig) -> RetrievalConfig:
    """``config`` with the semantic source ranking by its vector channel alone: relevance
    weight 1, no BM25, no threshold, no time or thread lift, no newer version first (what the
    peers return)."""
    return replace(
        config,
        semantic=SourceConfig(relevance=1.0, recency=0.0, limit=10, half_life_hours=720.0),
        min_final_score=0.0,
        max_distance=None,
        memory_bm25=False,
        context_lift=0.0,
        time_weight=0.0,
        total_limit=10,
        **_nearest_only(config),
    )


def floor_statement(connection: Any, schema: str, tenant: str, *, config: Any) -> tuple[str, bool]:
    """The bare statement of our filtered search for ``tenant`` (psycopg placeholders: the query
    vector as halfvec, the tenant, the pool) and whether it reads the tenant exactly: the
    tenant's ``pool`` nearest rows as the default semantic CTE asks for them, read exactly
    (btree, each distance once, a sort) when the retriever would (``n^2 <= exact_scan_factor x
    pool x N``), else through the graph (``relaxed_order`` returns them nearly in order)."""
    row = connection.execute(
        "SELECT reltuples FROM pg_class WHERE oid = %s::regclass", (f"{schema}.memories",)
    ).fetchone()
    table_rows = max(row[0] if row else 0, 0)
    (memories,) = connection.execute(
        f"SELECT memories FROM {schema}.memory_corpus WHERE tenant_id = %s", (tenant,)
    ).fetchone() or (0,)
    read_exactly = memories**2 <= config.exact_scan_factor * config.pool * table_rows
    if read_exactly:
        return (
            f"SELECT x.* FROM (SELECT id, embedding <-> %s::halfvec AS distance "
            f"FROM {schema}.memories WHERE tenant_id = %s OFFSET 0) AS x "
            "ORDER BY x.distance LIMIT %s",
            True,
        )
    return (
        f"SELECT id, embedding <-> %s::halfvec AS distance FROM {schema}.memories "
        "WHERE tenant_id = %s ORDER BY distance LIMIT %s",
        False,
    )
