"""The BM25 channel of memories on the real PostgreSQL: statistics, parity, fusion, tenants."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from retrieval.config import RetrievalConfig, SourceConfig, WriteConfig
from retrieval.errors import ValidationError
from retrieval.retriever import HybridRetriever
from retrieval.store import MemoryStore
from tests.bm25_reference import bm25_reference, exact_distances, fused, term_statistics
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


def _reference(store: MemoryStore, tenant: str, query: str) -> dict[int, float]:
    """BM25 in Python over the tenant's memories that hold at least one lexeme."""
    return bm25_reference(store.engine, "memories", tenant, query, corpus_of_lexical_rows=True)


def _stats(store: MemoryStore, tenant: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    return term_statistics(store.engine, "memory", tenant)


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
    bm25 = sorted(_reference(store, "acme", QUERY).items(), key=lambda item: (-item[1], item[0]))[
        :POOL
    ]
    vector = store.embedder.embed([QUERY])[0]
    dense = exact_distances(store.engine, "memories", "acme", vector)[:POOL]
    return fused(bm25, dense, fusion)


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
