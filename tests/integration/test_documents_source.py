"""The documents source of retrieve(): BM25 and vector fused in SQL, checked against scoring.py."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.embedding.calibration import calibration_for
from retrieval.errors import ConfigurationError
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.retriever import HybridRetriever
from tests.bm25_reference import bm25_reference, exact_distances, fused, total_idf

AS_OF = datetime(2026, 11, 26, tzinfo=UTC)
QUERY = "how do I restore a database backup"
CHUNKS = [
    ("runbook.md", "Backups", "Restore a database backup with pg_restore into staging."),
    ("runbook.md", "Backups", "Nightly backups are taken with pg_basebackup at two."),
    ("costs.md", "Storage", "Backup storage costs rose by ten percent this quarter."),
    ("hiring.md", None, "We are hiring two engineers for the platform team."),
    ("oncall.md", None, "The on-call engineer restores service before finding the cause."),
]
DOCS_ONLY = RetrievalConfig(
    semantic=SourceConfig(relevance=0.9, recency=0.1, limit=5, half_life_hours=720, enabled=False),
    episodic=SourceConfig(relevance=0.7, recency=0.3, limit=5, half_life_hours=168, enabled=False),
    documents=SourceConfig(relevance=1.0, recency=0.0, limit=10, half_life_hours=8760),
    min_final_score=0.0,
    max_distance=None,  # no evidence gate: every fused chunk, to check the fusion itself
    record_access=False,
)


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    documents = DocumentStore(store)
    for index, (filename, section, body) in enumerate(CHUNKS):
        documents.add(
            DocumentInput(
                tenant_id="acme",
                doc_id=f"{filename}#{index}",
                filename=filename,
                chunks=[ChunkInput(body, section_title=section)],
            )
        )
    documents.add(
        DocumentInput(tenant_id="globex", doc_id="secret", chunks=[ChunkInput(CHUNKS[0][2])])
    )
    with HybridRetriever.from_store(store, config=DOCS_ONLY) as retriever:
        yield retriever


def _oracle(store: MemoryStore, fusion: str) -> dict[int, float]:
    # Every chunk of the small tenant is in both channels' pools.
    vector = store.embedder.embed([QUERY])[0]
    return fused(
        bm25_reference(store.engine, "document_chunks", "acme", QUERY),
        dict(exact_distances(store.engine, "document_chunks", "acme", vector)),
        total_idf(store.engine, "document_chunks", "acme", QUERY),
        calibration_for(store.embedder.model_id),
        fusion,
    )


@pytest.mark.parametrize("fusion", ["rrf", "convex", "max", "cascade"])
def test_each_fusion_in_sql_equals_scoring_py(
    store: MemoryStore, retriever: HybridRetriever, fusion: str
) -> None:
    response = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF, fusion=fusion)
    got = {r.metadata["id"]: r.relevance_score for r in response if r.source == "documents"}
    expected = _oracle(store, fusion)
    assert got.keys() == expected.keys()
    for chunk, score in expected.items():
        assert got[chunk] == pytest.approx(score, abs=1e-6), (fusion, chunk)
    best = response[0]
    assert best.content == CHUNKS[0][2]
    assert best.metadata["fusion"] == fusion
    for key in (
        "bm25",
        "bm25_rank",
        "bm25_relevance",
        "dense_distance",
        "dense_rank",
        "dense_relevance",
        "doc_id",
        "section_title",
    ):
        assert key in best.metadata
    assert best.metadata["filename"] == "runbook.md"


def test_documents_of_another_tenant_never_appear(retriever: HybridRetriever) -> None:
    response = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF)
    assert all(r.metadata["doc_id"] != "secret" for r in response)
    only = retriever.retrieve(QUERY, tenant_id="globex", as_of=AS_OF)
    assert [r.metadata["doc_id"] for r in only] == ["secret"]


def test_the_default_config_ranks_documents_beside_memories(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    store.remember("Backups are restored by the platform team.", tenant_id="acme")
    response = retriever.retrieve(QUERY, tenant_id="acme", config=RetrievalConfig())
    sources = {r.source for r in response}
    assert {"documents", "semantic"} <= sources
    assert response.diagnostics.statements == 1
    with pytest.raises(ConfigurationError, match="fusion 'best'"):
        retriever.retrieve(QUERY, tenant_id="acme", fusion="best")


def test_query_expansions_reach_the_bm25_channel(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    DocumentStore(store).add(
        DocumentInput(
            tenant_id="acme",
            doc_id="drones.md",
            chunks=[ChunkInput("The unmanned aerial vehicle lost its link over the lake.")],
        )
    )

    def bm25_hit(config: RetrievalConfig) -> bool:
        response = retriever.retrieve("UAV", tenant_id="acme", as_of=AS_OF, config=config)
        return any(
            r.metadata.get("doc_id") == "drones.md" and r.metadata["bm25"] > 0 for r in response
        )

    assert not bm25_hit(DOCS_ONLY)  # "uav" is in no chunk: only the vector channel finds it
    expanded = replace(DOCS_ONLY, query_expansions={"UAV": "unmanned aerial vehicle"})
    assert bm25_hit(expanded)


def test_the_evidence_gate_drops_chunks_of_unrelated_questions(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    DocumentStore(store).add(
        DocumentInput(
            tenant_id="acme",
            doc_id="incident.md",
            chunks=[ChunkInput("Deploy failed with error E4012 on the staging cluster.")],
        )
    )
    gated = replace(DOCS_ONLY, max_distance=1.2)
    ungated = retriever.retrieve("How do I bake sourdough bread?", tenant_id="acme", as_of=AS_OF)
    assert len(ungated) > 0  # fused relevance alone ranks something first for any question
    unrelated = retriever.retrieve(
        "How do I bake sourdough bread?", tenant_id="acme", as_of=AS_OF, config=gated
    )
    assert len(unrelated) == 0
    related = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF, config=gated)
    assert related[0].content == CHUNKS[0][2]
    assert all(r.metadata["distance"] <= 1.2 or r.metadata["coverage"] >= 0.9 for r in related)
    code = retriever.retrieve("E4012", tenant_id="acme", as_of=AS_OF, config=gated)
    found = [r for r in code if "E4012" in r.content]
    assert found and found[0].metadata["coverage"] == pytest.approx(1.0)


def test_query_expansions_reach_the_episodic_keywords_and_the_working_state(
    store: MemoryStore,
) -> None:
    store.record_decision(
        tenant_id="acme",
        task_id="t1",
        action_type="investigate",
        content="The unmanned aerial vehicle lost its link over the lake",
        status="open",
        created_at=AS_OF,
    )
    config = replace(
        DOCS_ONLY,
        episodic=SourceConfig(relevance=0.7, recency=0.3, limit=5, half_life_hours=168),
        documents=replace(DOCS_ONLY.documents, enabled=False),
    )
    messages = [{"role": "user", "content": "the unmanned vehicle is back"}]
    with HybridRetriever.from_store(store, config=config) as retriever:
        plain = retriever.retrieve("UAV link lost", tenant_id="acme", as_of=AS_OF)
        assert [r.metadata["matched_keywords"] for r in plain] == [["link", "lost"]]
        expanded = replace(config, query_expansions={"UAV": "unmanned aerial vehicle"})
        response = retriever.retrieve(
            "UAV link lost",
            tenant_id="acme",
            as_of=AS_OF,
            config=expanded,
            working_state=messages,
        )
    decision = next(r for r in response if r.source == "episodic")
    assert decision.metadata["matched_keywords"] == [
        "link",
        "lost",
        "unmanned",
        "aerial",
        "vehicle",
    ]
    assert decision.relevance_score == 1.0
    message = next(r for r in response if r.source == "working_state")
    assert message.metadata["matched_keywords"] == ["unmanned", "vehicle"]


def test_a_tenant_without_documents_is_asked_without_them_until_it_has_some(
    store: MemoryStore,
) -> None:
    # The documents CTEs are left out for a tenant that held no chunks at the last call; the
    # statement's presence row brings them back the moment the tenant's first chunks exist,
    # written by another store object, and drops them again once they are all forgotten.
    documents = DocumentStore(store)
    with HybridRetriever.from_store(store, config=DOCS_ONLY) as retriever:

        def ask() -> tuple[list[str], int]:
            response = retriever.retrieve(QUERY, tenant_id="initech", as_of=AS_OF)
            return [r.content for r in response], response.diagnostics.statements

        # An empty answer asks once more whether the tenant holds anything (its note).
        assert ask() == ([], 2)  # not known yet: asked with the documents CTEs
        assert ask() == ([], 2)  # known to hold none: asked without them
        statements_before = len(retriever._statements)
        DocumentStore(store).add(
            DocumentInput(tenant_id="initech", doc_id="runbook", chunks=[ChunkInput(CHUNKS[0][2])])
        )
        assert ask() == ([CHUNKS[0][2]], 2)  # the presence row saw it: asked again, with them
        assert ask() == ([CHUNKS[0][2]], 1)
        assert len(retriever._statements) == statements_before  # both shapes already known
        assert documents.forget(tenant_id="initech", doc_id="runbook")
        assert ask() == ([], 2)
        assert ask() == ([], 2)
        response = retriever.retrieve(QUERY, tenant_id="initech", as_of=AS_OF)
        assert response.diagnostics.sources["documents"].candidates == 0


def test_another_tenant_s_documents_do_not_bring_back_the_documents_ctes(
    retriever: HybridRetriever,
) -> None:
    for _ in range(2):
        response = retriever.retrieve(QUERY, tenant_id="initech", as_of=AS_OF)
        assert list(response) == [] and response.diagnostics.statements == 2  # and the probe
    assert retriever._presence.may_hold("initech", "documents") is False
    response = retriever.retrieve(QUERY, tenant_id="acme", as_of=AS_OF)
    assert response[0].content == CHUNKS[0][2]
    assert retriever._presence.may_hold("acme", "documents") is True


def test_scores_of_memories_and_chunks_are_comparable(store: MemoryStore) -> None:
    # An architecture document mentions checkout everywhere; the memory answers the question.
    # Fused relevance relative to the query ranked the best chunk near 1 whatever it said.
    documents = DocumentStore(store)
    documents.add(
        DocumentInput(
            tenant_id="shop",
            doc_id="architecture.md",
            chunks=[
                ChunkInput(
                    "The checkout service renders the cart, applies vouchers and hands the "
                    "order to the payments service; checkout runs three replicas.",
                    section_title="Architecture > Checkout",
                ),
                ChunkInput("The catalog service serves product pages from a read replica."),
            ],
        )
    )
    answer = store.remember(
        "Checkout times out because the payment provider takes 30 seconds to answer under load.",
        tenant_id="shop",
        created_at=AS_OF - timedelta(days=1),
    )
    with HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False)) as r:
        response = r.retrieve("Why does checkout time out?", tenant_id="shop", as_of=AS_OF)
    assert response[0].metadata["id"] == answer and response[0].source == "semantic"
    chunks = [result for result in response if result.source == "documents"]
    assert all(chunk.relevance_score < response[0].relevance_score for chunk in chunks)
    assert all(chunk.relevance_score < 0.9 for chunk in chunks)
