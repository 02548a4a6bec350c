"""An answer that would be empty gets its best weak matches, marked below_threshold, through
``retrieve()`` on a real PostgreSQL: a vague question finds the memory a stricter reading
drops; an answer with a result gets none; a tenant holding nothing still gets nothing."""

from __future__ import annotations

from dataclasses import replace

from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

MEMORIES = [
    "Alice is vegetarian and avoids mushrooms.",
    "Alice works as a nurse on the night shift.",
    "Alice drives a blue 2018 Toyota Yaris.",
    "Alice's sister Jana lives in Prague.",
]


def test_a_vague_question_finds_the_memory_as_a_weak_match(store: MemoryStore) -> None:
    store.remember_many({"text": text, "tenant_id": "alice"} for text in MEMORIES)
    config = RetrievalConfig(record_access=False)
    with HybridRetriever.from_store(store, config=config) as retriever:
        vague = retriever.retrieve("What food does the user like?", tenant_id="alice")
        assert len(vague) == config.fallback_results
        assert vague[0].content == MEMORIES[0]
        assert all(r.metadata["below_threshold"] for r in vague)
        assert all(0.0 <= r.final_score < config.min_final_score for r in vague)
        # A question with an answer above the threshold gets no weak match.
        plain = retriever.retrieve("Where does Alice's sister live?", tenant_id="alice")
        assert plain[0].content == MEMORIES[3]
        assert not any(r.metadata.get("below_threshold") for r in plain)
        # A tenant holding nothing has nothing to offer.
        assert list(retriever.retrieve("What food does the user like?", tenant_id="bob")) == []
    off = replace(config, fallback_results=0)
    with HybridRetriever.from_store(store, config=off) as strict:
        assert list(strict.retrieve("What food does the user like?", tenant_id="alice")) == []
