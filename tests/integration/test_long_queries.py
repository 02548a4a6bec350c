"""A long query's keyword channels read at most ``max_query_words`` of its words, the rarest by
the tenant's statistics: the result equals the one of a query made of those words alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.errors import ConfigurationError
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.retriever import HybridRetriever

AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
COMMON = [f"common{i:02d}" for i in range(40)]  # no stemmer changes them
RARE = ["zephyr", "quokka"]
OFF = SourceConfig(relevance=0.9, recency=0.1, limit=5, half_life_hours=720, enabled=False)


def _only(source: str, **options: object) -> RetrievalConfig:
    on = SourceConfig(relevance=1.0, recency=0.0, limit=40, half_life_hours=720)
    return RetrievalConfig(
        semantic=on if source == "semantic" else OFF,
        episodic=replace(on, relevance=0.7, recency=0.3) if source == "episodic" else OFF,
        documents=on if source == "documents" else OFF,
        total_limit=40,
        min_final_score=0.0,
        max_distance=None,
        record_access=False,
        context_lift=0.0,
        time_weight=0.0,
        **options,  # type: ignore[arg-type]
    )


def _texts() -> list[str]:
    # 20 texts hold every common word; one more each rare word beside them.
    return [" ".join(COMMON) + f" filler number {i}" for i in range(20)] + [
        " ".join([*COMMON, rare]) for rare in RARE
    ]


def _record_decisions(store: MemoryStore) -> None:
    store.record_decisions(
        {"tenant_id": "acme", "action_type": "note", "content": body, "status": "done",
         "created_at": AS_OF}
        for body in _texts()
    )  # fmt: skip


def _scores(response: object, key: str) -> dict[str, float]:
    return {r.content: r.metadata[key] for r in response}  # type: ignore[attr-defined]


def test_the_episodic_source_reads_the_rarest_keywords(store: MemoryStore) -> None:
    _record_decisions(store)
    query = " ".join([*COMMON, *RARE])  # 42 keywords
    config = _only("episodic")
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        long = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=config)
        # The rarest: the two rare words (one row each), then the commonest in the query's order.
        chosen = " ".join([*COMMON[: 32 - len(RARE)], *RARE])
        short = retriever.retrieve(chosen, tenant_id="acme", as_of=AS_OF, config=config)
    assert len(long.diagnostics.keywords) == 42
    assert {r.content: r.relevance_score for r in long} == {
        r.content: r.relevance_score for r in short
    }
    for result in long:
        matched = result.metadata["matched_keywords"]
        assert len(matched) <= 32
        assert result.relevance_score == pytest.approx(len(matched) / 32)
    best = [r for r in long if any(rare in r.content for rare in RARE)]
    assert len(best) == 2 and all(r.relevance_score == pytest.approx(31 / 32) for r in best)


def test_the_documents_bm25_reads_the_rarest_held_terms(store: MemoryStore) -> None:
    documents = DocumentStore(store)
    for index, body in enumerate(_texts()):
        chunks = [ChunkInput(body)]
        documents.add(DocumentInput(tenant_id="acme", doc_id=f"d{index}", chunks=chunks))
    unheld = [f"nowhere{chr(97 + i)}" for i in range(10)]  # held by no chunk: read last
    query = " ".join([*unheld, *COMMON, *RARE])
    config = _only("documents")
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        long = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=config)
        chosen = " ".join([*RARE, *COMMON[: 32 - len(RARE)]])
        short = retriever.retrieve(chosen, tenant_id="acme", as_of=AS_OF, config=config)
    assert _scores(long, "bm25") == pytest.approx(_scores(short, "bm25"))
    assert max(_scores(long, "bm25"), key=_scores(long, "bm25").get).endswith(tuple(RARE))


def test_the_memories_bm25_reads_the_rarest_by_its_sample(store: MemoryStore) -> None:
    store.remember_many({"text": body, "tenant_id": "acme"} for body in _texts())
    with store.engine.connect() as connection:
        sampled = dict(
            connection.execute(
                text("SELECT term, document_frequency FROM retrieval.memory_term_stats "
                     "WHERE tenant_id = 'acme'")
            ).all()
        )  # fmt: skip
    query = " ".join([*COMMON, *RARE])
    # The rarest 32 by the sample's count (a term outside the sample counts 0), then by term.
    chosen = sorted([*COMMON, *RARE], key=lambda term: (sampled.get(term, 0), term))[:32]
    config = _only("semantic", fusion="max")
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        long = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=config)
        short = retriever.retrieve(" ".join(chosen), tenant_id="acme", as_of=AS_OF, config=config)
    assert _scores(long, "bm25") == pytest.approx(_scores(short, "bm25"))


def test_a_query_within_the_bound_reads_every_word(store: MemoryStore) -> None:
    _record_decisions(store)
    query = " ".join([*COMMON, *RARE])
    config = _only("episodic", max_query_words=100)
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        response = retriever.retrieve(query, tenant_id="acme", as_of=AS_OF, config=config)
    best = [r for r in response if any(rare in r.content for rare in RARE)]
    assert all(r.relevance_score == pytest.approx(41 / 42) for r in best)


def test_the_bound_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert RetrievalConfig().max_query_words == 32
    monkeypatch.setenv("RETRIEVAL_MAX_QUERY_WORDS", "8")
    assert RetrievalConfig.from_env().max_query_words == 8
    with pytest.raises(ConfigurationError, match="max_query_words"):
        RetrievalConfig(max_query_words=0)
