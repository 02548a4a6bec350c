"""The BM25 channel of memories on the real PostgreSQL: statistics, parity, fusion, tenants."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text

from retrieval import scoring
from retrieval.config import RetrievalConfig, SourceConfig, WriteConfig
from retrieval.errors import ValidationError
from retrieval.retriever import HybridRetriever
from retrieval.store import MemoryStore
from tests.conftest import CountingEmbedder, PgDatabase

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "scifact_sample.json"
AS_OF = datetime(2026, 11, 26, tzinfo=UTC)
QUERY = "gene expression in cancer cells"
WITH_BM25 = RetrievalConfig(
    semantic=SourceConfig(relevance=1.0, recency=0.0, limit=100, half_life_hours=720),
    episodic=SourceConfig(relevance=0.7, recency=0.3, limit=5, half_life_hours=168, enabled=False),
    documents=SourceConfig(
        relevance=0.9, recency=0.1, limit=5, half_life_hours=8760, enabled=False
    ),
    total_limit=200,
    min_final_score=0.0,
    candidate_pool=100,
    max_distance=None,
    record_access=False,
    memory_bm25=True,
)
POOL = 100


@pytest.fixture
def indexed(database: PgDatabase, counting_embedder: CountingEmbedder) -> MemoryStore:
    """A store keeping the lexical index of memories."""
    return MemoryStore(
        database.engine,
        embedder=counting_embedder,
        config=WriteConfig(memory_bm25=True),
    )


@pytest.fixture
def titles() -> list[str]:
    return list(json.loads(SAMPLE.read_text())["titles"])[:120]


@pytest.fixture
def retriever(indexed: MemoryStore, titles: list[str]) -> Iterator[HybridRetriever]:
    kinds = ("fact", "episteme", "synthesized_insight")
    indexed.remember_many(
        {"text": title, "tenant_id": "acme", "kind": kinds[i % 3], "created_at": AS_OF}
        for i, title in enumerate(titles[:100])
    )
    indexed.remember_many(
        {"text": title, "tenant_id": "globex", "created_at": AS_OF} for title in titles[100:]
    )
    with HybridRetriever.from_store(indexed, config=WITH_BM25) as retriever:
        yield retriever


def _lexemes(store: MemoryStore, body: str) -> list[str]:
    with store.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT lexeme, cardinality(positions) FROM unnest(to_tsvector('english', :t))"),
            {"t": body},
        ).all()
    return [lexeme for lexeme, count in rows for _ in range(count)]


def _reference(store: MemoryStore, tenant: str, query: str) -> dict[int, float]:
    """BM25 in Python over the tenant's memories that hold at least one lexeme."""
    with store.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT id, content FROM retrieval.memories WHERE tenant_id = :t ORDER BY id"),
            {"t": tenant},
        ).all()
    memories = [(memory_id, _lexemes(store, content)) for memory_id, content in rows]
    memories = [(memory_id, terms) for memory_id, terms in memories if terms]
    scores = scoring.bm25_scores(
        list(dict.fromkeys(_lexemes(store, query))), [terms for _, terms in memories]
    )
    return {memory_id: score for (memory_id, _), score in zip(memories, scores, strict=True)}


def _stats(store: MemoryStore, tenant: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    with store.engine.connect() as connection:
        kept = connection.execute(
            text(
                "SELECT term, document_frequency FROM retrieval.memory_term_stats "
                "WHERE tenant_id = :t ORDER BY term"
            ),
            {"t": tenant},
        ).all()
        recount = connection.execute(
            text(
                "SELECT term, count(*) FROM retrieval.memory_terms WHERE tenant_id = :t "
                "GROUP BY term ORDER BY term"
            ),
            {"t": tenant},
        ).all()
    return [tuple(r) for r in kept], [tuple(r) for r in recount]  # type: ignore[misc]


def test_bm25_of_memories_equals_the_python_reference(
    indexed: MemoryStore, retriever: HybridRetriever
) -> None:
    response = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF)
    reference = _reference(indexed, "acme", QUERY)
    found = {r.metadata["id"]: r.metadata["bm25"] for r in response if r.metadata["bm25"]}
    best = sorted(reference.items(), key=lambda item: (-item[1], item[0]))[:POOL]
    assert set(found) == {memory_id for memory_id, score in best if score > 0}
    for memory_id, score in found.items():
        assert score == pytest.approx(reference[memory_id], abs=1e-6)


def _oracle(store: MemoryStore, fusion: str) -> dict[int, float]:
    reference = _reference(store, "acme", QUERY)
    bm25 = sorted(
        ((i, score) for i, score in reference.items() if score > 0),
        key=lambda item: (-item[1], item[0]),
    )[:POOL]
    with store.engine.connect() as connection:
        rows = connection.exec_driver_sql(
            "SELECT id, embedding FROM retrieval.memories WHERE tenant_id = 'acme'"
        ).all()
    vector = store.embedder.embed([QUERY])[0]
    dense = sorted(
        ((int(r.id), float(np.linalg.norm(r.embedding.to_numpy() - vector))) for r in rows),
        key=lambda item: (item[1], item[0]),
    )[:POOL]
    bm25_norm = dict(zip([i for i, _ in bm25], scoring.min_max([s for _, s in bm25]), strict=True))
    similarity = [scoring.distance_relevance(d) for _, d in dense]
    dense_norm = dict(zip([i for i, _ in dense], scoring.min_max(similarity), strict=True))
    bm25_rank = {i: rank for rank, (i, _) in enumerate(bm25, start=1)}
    dense_rank = {i: rank for rank, (i, _) in enumerate(dense, start=1)}
    fused = {}
    for memory in set(bm25_norm) | set(dense_norm):
        lexical, semantic = bm25_norm.get(memory, 0.0), dense_norm.get(memory, 0.0)
        if fusion == "rrf":
            fused[memory] = scoring.reciprocal_rank_fusion(
                {"bm25": bm25_rank.get(memory), "dense": dense_rank.get(memory)},
                weights={"bm25": 0.5, "dense": 0.5},
            )
        elif fusion == "convex":
            fused[memory] = scoring.weighted_sum(
                {"bm25": lexical, "dense": semantic}, {"bm25": 0.5, "dense": 0.5}
            )
        elif fusion == "max":
            fused[memory] = scoring.fuse_max([lexical, semantic])
        else:
            fused[memory] = scoring.cascade([(lexical, 0.7)], semantic)
    return fused


@pytest.mark.parametrize("fusion", ["rrf", "convex", "max", "cascade"])
def test_each_fusion_of_memories_equals_scoring_py(
    indexed: MemoryStore, retriever: HybridRetriever, fusion: str
) -> None:
    response = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF, fusion=fusion)
    got = {r.metadata["id"]: r.relevance_score for r in response}
    expected = _oracle(indexed, fusion)
    assert got.keys() == expected.keys()
    for memory, score in expected.items():
        assert got[memory] == pytest.approx(score, abs=1e-6), (fusion, memory)
    for key in ("fusion", "bm25", "bm25_rank", "dense_distance", "dense_rank"):
        assert key in response[0].metadata


def test_the_bm25_channel_finds_exact_words_the_vectors_miss(
    indexed: MemoryStore, retriever: HybridRetriever
) -> None:
    code = indexed.remember(
        "Deploy failed with error E4012 on the staging cluster", tenant_id="acme"
    )
    narrow = replace(WITH_BM25.semantic, limit=5)
    plain = replace(
        WITH_BM25, semantic=narrow, memory_bm25=False, candidate_pool=5, max_distance=1.0
    )
    fused = replace(WITH_BM25, semantic=narrow, candidate_pool=5, max_distance=1.0)
    query = "E4012"
    without = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=plain)
    assert code not in [r.metadata["id"] for r in without]
    found = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=fused)
    top = next(iter(found))
    assert top.metadata["id"] == code and top.metadata["bm25_rank"] == 1


def test_modes_and_tenants_filter_the_bm25_channel(retriever: HybridRetriever) -> None:
    recovery = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF, mode="session_recovery")
    assert recovery.results and all(r.metadata["kind"] != "synthesized_insight" for r in recovery)
    lookup = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF, mode="knowledge_lookup")
    assert lookup.results and all(r.metadata["kind"] == "episteme" for r in lookup)
    acme = {r.metadata["id"] for r in retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF)}
    globex = {r.metadata["id"] for r in retriever.retrieve(QUERY, tenant_id="globex", as_of=AS_OF)}
    assert acme and globex and not acme & globex
    assert not retriever.retrieve(QUERY, tenant_id="nobody", as_of=AS_OF).results


def test_statistics_follow_writes_and_forgetting(
    indexed: MemoryStore, retriever: HybridRetriever
) -> None:
    kept, recount = _stats(indexed, "acme")
    assert kept == recount and kept
    with indexed.engine.connect() as connection:
        corpus = connection.execute(
            text(
                "SELECT memories, total_terms FROM retrieval.memory_corpus WHERE tenant_id = 'acme'"
            )
        ).one()
        lengths = connection.execute(
            text(
                "SELECT count(DISTINCT memory_id), sum(term_frequency) FROM retrieval.memory_terms "
                "WHERE tenant_id = 'acme'"
            )
        ).one()
    assert tuple(corpus) == tuple(lengths)
    ids = [r.metadata["id"] for r in retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF)]
    indexed.forget(tenant_id="acme", memory_ids=ids[:7])
    kept, recount = _stats(indexed, "acme")
    assert kept == recount
    response = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF)
    reference = _reference(indexed, "acme", QUERY)
    for result in response:
        if result.metadata["bm25"]:
            assert result.metadata["bm25"] == pytest.approx(reference[result.metadata["id"]])
    indexed.forget(tenant_id="acme", everything=True)
    assert _stats(indexed, "acme") == ([], [])
    assert _stats(indexed, "globex")[0]


def test_memories_stored_before_are_indexed_later(
    database: PgDatabase, counting_embedder: CountingEmbedder, titles: list[str]
) -> None:
    plain = MemoryStore(database.engine, embedder=counting_embedder)
    plain.remember_many({"text": title, "tenant_id": "acme"} for title in titles[:40])
    plain.remember("the of and", tenant_id="acme")  # only stop words: never indexed
    assert _stats(plain, "acme") == ([], [])
    indexed = MemoryStore(
        database.engine, embedder=counting_embedder, config=WriteConfig(memory_bm25=True)
    )
    seen: list[int] = []
    assert indexed.index_memories(batch_size=16, progress=seen.append) == 41
    assert seen == [16, 16, 9]
    kept, recount = _stats(indexed, "acme")
    assert kept == recount and kept
    assert indexed.index_memories() == 1  # the stop-word memory is examined again, no more
    assert _stats(indexed, "acme") == (kept, recount)
    other = MemoryStore(
        database.engine,
        embedder=counting_embedder,
        config=WriteConfig(memory_bm25=True, text_search_config="simple"),
    )
    with pytest.raises(ValidationError, match="text search configuration 'english'"):
        other.remember("more words", tenant_id="acme")
