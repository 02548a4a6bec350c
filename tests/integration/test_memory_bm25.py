"""The BM25 channel of memories on the real PostgreSQL: statistics, parity, fusion, tenants."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from retrieval.embedding.calibration import calibration_for
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.retriever import HybridRetriever
from tests.bm25_reference import (
    bm25_reference,
    exact_distances,
    fused,
    term_statistics,
    total_idf,
)

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "scifact_sample.json"
AS_OF = datetime(2026, 11, 26, tzinfo=UTC)
QUERY = "gene expression in cancer cells"
POOL = 100
# Relevance alone, every memory of the small tenant in the pool, no threshold nor cut-off.
WITH_BM25 = RetrievalConfig(
    semantic=SourceConfig(relevance=1.0, recency=0.0, limit=POOL, half_life_hours=720),
    episodic=SourceConfig(relevance=0.7, recency=0.3, limit=5, half_life_hours=168, enabled=False),
    documents=SourceConfig(
        relevance=0.9, recency=0.1, limit=5, half_life_hours=8760, enabled=False
    ),
    total_limit=200,
    min_final_score=0.0,
    candidate_pool=POOL,
    max_distance=None,
    record_access=False,
    memory_bm25=True,
    memory_bm25_rows=10_000,
)


@pytest.fixture
def titles() -> list[str]:
    return list(json.loads(SAMPLE.read_text())["titles"])[:120]


@pytest.fixture
def retriever(store: MemoryStore, titles: list[str]) -> Iterator[HybridRetriever]:
    kinds = ("fact", "episteme", "synthesized_insight")
    store.remember_many(
        {"text": title, "tenant_id": "acme", "kind": kinds[i % 3], "created_at": AS_OF}
        for i, title in enumerate(titles[:100])
    )
    store.remember_many(
        {"text": title, "tenant_id": "globex", "created_at": AS_OF} for title in titles[100:]
    )
    with HybridRetriever.from_store(store, config=WITH_BM25) as retriever:
        yield retriever


def _reference(store: MemoryStore, tenant: str, query: str) -> dict[int, float]:
    """BM25 in Python over the tenant's memories that hold a lexeme, distinct-lexeme lengths."""
    return bm25_reference(store.engine, "memories", tenant, query, memories=True)


def _stats(store: MemoryStore, tenant: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    return term_statistics(store.engine, "memory", tenant)


def _corpus(store: MemoryStore, tenant: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(memories, total distinct lexemes, sampled memories) kept in memory_corpus, and
    recounted."""
    with store.engine.connect() as connection:
        kept = connection.execute(
            text(
                "SELECT memories, total_terms, sampled_memories FROM retrieval.memory_corpus "
                "WHERE tenant_id = :t"
            ),
            {"t": tenant},
        ).one_or_none()
        recount = connection.execute(
            text(
                "SELECT count(*), COALESCE(sum(length(search_vector)), 0), "
                "count(*) FILTER (WHERE hashint8(id) & 7 = 0) "
                "FROM retrieval.memories WHERE tenant_id = :t AND search_vector <> ''"
            ),
            {"t": tenant},
        ).one()
    return (tuple(kept) if kept else (0, 0, 0)), tuple(recount)


def test_bm25_of_memories_equals_the_python_reference(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    response = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF)
    reference = _reference(store, "acme", QUERY)
    assert len(response) == 100  # every memory is a candidate of the dense pool
    for result in response:
        expected = reference.get(result.metadata["id"], 0.0)
        assert result.metadata["bm25"] == pytest.approx(expected, abs=1e-9)
    assert any(result.metadata["bm25"] > 0 for result in response)
    assert response[0].metadata["bm25_complete"] is True


@pytest.mark.parametrize("fusion", ["convex", "max", "cascade", "rrf"])
def test_each_fusion_of_memories_equals_scoring_py(
    store: MemoryStore, retriever: HybridRetriever, fusion: str
) -> None:
    response = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF, fusion=fusion)
    got = {r.metadata["id"]: r.relevance_score for r in response}
    vector = store.embedder.embed([QUERY])[0]
    distances = dict(exact_distances(store.engine, "memories", "acme", vector))
    expected = fused(
        _reference(store, "acme", QUERY),
        distances,
        total_idf(store.engine, "memories", "acme", QUERY, memories=True),
        calibration_for(store.embedder.model_id),
        fusion,
    )
    assert got.keys() == expected.keys()
    for memory, score in expected.items():
        assert got[memory] == pytest.approx(score, abs=1e-6), (fusion, memory)
    for key in ("fusion", "bm25", "bm25_rank", "bm25_relevance", "dense_rank", "dense_relevance"):
        assert key in response[0].metadata
    assert {"distance", "inverse_distance", "coverage"} <= set(response[0].metadata)


def test_relevance_is_absolute_an_unrelated_question_scores_low(
    retriever: HybridRetriever,
) -> None:
    related = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF, fusion="convex")
    unrelated = retriever.retrieve(
        "Who approves a refund over 500 euros?", tenant_id="acme", as_of=AS_OF, fusion="convex"
    )
    # Min-max or rank fusion would give both questions a best memory near 1.
    assert related[0].relevance_score > 0.3
    assert unrelated[0].relevance_score < 0.15, unrelated[0].relevance_score


def test_the_bm25_channel_finds_exact_words_the_vectors_miss(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    code = store.remember(
        "Deploy failed with error E4012 on the staging cluster", tenant_id="acme", created_at=AS_OF
    )
    narrow = replace(WITH_BM25.semantic, limit=5)
    plain = replace(
        WITH_BM25,
        semantic=narrow,
        memory_bm25=False,
        candidate_pool=5,
        max_distance=1.0,
        fallback_results=0,
    )
    gated = replace(
        WITH_BM25, semantic=narrow, candidate_pool=5, max_distance=1.0, fallback_results=0
    )
    query = "E4012"
    without = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=plain)
    assert code not in [r.metadata["id"] for r in without]
    found = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=gated)
    top = next(iter(found))
    assert top.metadata["id"] == code and top.metadata["bm25_rank"] == 1
    # Beyond the distance cut-off, the exact code passes the gate by its coverage.
    assert top.metadata["distance"] > 1.0 and top.metadata["coverage"] == pytest.approx(1.0)


def test_the_row_budget_probes_the_rarest_terms_only(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    code = store.remember("cancer cells with marker AB12", tenant_id="acme", created_at=AS_OF)
    narrow = replace(WITH_BM25, semantic=replace(WITH_BM25.semantic, limit=3), candidate_pool=3)
    budget = replace(narrow, memory_bm25_rows=1)
    response = retriever.retrieve("cancer AB12", tenant_id="acme", as_of=AS_OF, config=budget)
    # "ab12" (one memory, estimated at most as many as "cancer") fits the budget, "cancer"
    # does not: the rare word is searched, the other only scores what the channels found.
    assert response[0].metadata["id"] == code
    assert response[0].metadata["bm25_complete"] is False
    whole = retriever.retrieve("cancer AB12", tenant_id="acme", as_of=AS_OF, config=narrow)
    assert whole[0].metadata["bm25_complete"] is True


def test_modes_and_tenants_filter_the_bm25_channel(retriever: HybridRetriever) -> None:
    recovery = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF, mode="session_recovery")
    assert recovery.results and all(r.metadata["kind"] != "synthesized_insight" for r in recovery)
    lookup = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF, mode="knowledge_lookup")
    assert lookup.results and all(r.metadata["kind"] == "episteme" for r in lookup)
    acme = {r.metadata["id"] for r in retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF)}
    globex = {r.metadata["id"] for r in retriever.retrieve(QUERY, tenant_id="globex", as_of=AS_OF)}
    assert acme and globex and not acme & globex
    assert not retriever.retrieve(QUERY, tenant_id="nobody", as_of=AS_OF).results


def test_statistics_follow_every_write_whoever_writes(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    kept, recount = _stats(store, "acme")
    assert kept == recount and kept
    assert _corpus(store, "acme")[0] == _corpus(store, "acme")[1]
    ids = [r.metadata["id"] for r in retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF)]
    store.forget(tenant_id="acme", memory_ids=ids[:7])
    store.remember("the of and", tenant_id="acme")  # only stop words: no lexeme, not counted
    with store.engine.begin() as connection:  # another writer, in plain SQL
        connection.execute(
            text(
                "UPDATE retrieval.memories SET content = 'gene therapy for rare cancers' "
                "WHERE tenant_id = 'acme' AND id = :id"
            ),
            {"id": ids[8]},
        )
        connection.execute(
            text("UPDATE retrieval.memories SET access_count = access_count + 1")
        )  # words unchanged: the statistics too
    kept, recount = _stats(store, "acme")
    assert kept == recount
    assert _corpus(store, "acme")[0] == _corpus(store, "acme")[1]
    response = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF)
    reference = _reference(store, "acme", QUERY)
    for result in response:
        assert result.metadata["bm25"] == pytest.approx(reference.get(result.metadata["id"], 0.0))
    store.forget(tenant_id="acme", everything=True)
    assert _stats(store, "acme") == ([], [])
    assert _corpus(store, "acme") == ((0, 0, 0), (0, 0, 0))
    assert _stats(store, "globex")[0]
    with store.engine.begin() as connection:
        connection.execute(text("TRUNCATE retrieval.memories CASCADE"))
    assert _stats(store, "globex") == ([], [])


@pytest.mark.parametrize("fusion", ["convex", "max", "cascade", "rrf"])
def test_each_fusion_records_the_lexical_share_of_its_relevance(
    retriever: HybridRetriever, fusion: str
) -> None:
    config = retriever.config
    lexical_weight, dense_weight, k = config.bm25_weight, 1.0 - config.bm25_weight, config.rrf_k
    response = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF, fusion=fusion)
    for result in response:
        metadata = result.metadata
        lexical, dense = metadata["bm25_relevance"], metadata["dense_relevance"]
        if fusion == "convex":
            fused = lexical_weight * lexical + dense_weight * dense
            expected = lexical_weight * lexical / fused if fused else 0.0
        elif fusion == "max":
            expected = 1.0 if lexical > dense else 0.0 if lexical < dense else 0.5
        elif fusion == "cascade":
            expected = 1.0 if lexical >= config.cascade_threshold else 0.0
        else:
            rank = metadata["bm25_rank"]
            lexical_term = lexical_weight / (k + rank) if rank is not None else 0.0
            dense_term = dense_weight / (k + metadata["dense_rank"])
            expected = lexical_term / (lexical_term + dense_term)
        assert metadata["lexical_share"] == pytest.approx(expected, abs=1e-9), fusion
        parts = metadata["parts"]
        assert sum(part["value"] for part in parts.values()) == pytest.approx(
            result.final_score, abs=1e-9
        )
        relevance_parts = parts["meaning"]["value"] + parts["lexical"]["value"]
        assert relevance_parts == pytest.approx(
            metadata["weights"]["relevance"] * result.relevance_score, abs=1e-9
        )
