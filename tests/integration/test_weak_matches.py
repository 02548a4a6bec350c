"""An answer that would be empty gets its best weak matches, marked below_threshold, through
``retrieve()`` on a real PostgreSQL: a vague question finds the memory a stricter reading
drops; an answer with a result gets none; a tenant holding nothing still gets nothing; the weak
matches are the memories nearest the question, whenever they were told."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

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


ALICE = [
    "Alice is vegetarian and avoids mushrooms.",
    "Alice works as a nurse on the night shift at St. Mary's.",
    "Alice has two cats called Miso and Tofu.",
    "Alice is training for the Berlin half marathon in April.",
    "Alice's sister Jana lives in Prague.",
    "Alice takes antihistamines every spring for hay fever.",
    "Alice drives a blue 2018 Toyota Yaris.",
    "Alice wants to learn Italian before her trip to Rome.",
]


def test_the_weak_matches_are_the_nearest_memories_not_the_first_or_last_told(
    store: MemoryStore,
) -> None:
    # Told one at a time, as an agent tells them. Most are beyond the model's calibrated zero
    # for a vague question (relevance 0), where only the distance tells them apart: chosen by
    # id (the first told) or by final score (the recency alone: the last told), the hay fever
    # memory, the sixth, was left out.
    for text in ALICE:
        store.remember(text, tenant_id="alice")
    config = RetrievalConfig(record_access=False)
    with HybridRetriever.from_store(store, config=config) as retriever:
        weak = retriever.retrieve("Any health issues I should keep in mind?", tenant_id="alice")
    assert all(r.metadata["below_threshold"] for r in weak)
    assert ALICE[5] in [r.content for r in weak]
    # They are the memories nearest the question, by the model's own vectors...
    vectors = store.cache.embedder.embed(["Any health issues I should keep in mind?", *ALICE])
    distances = np.linalg.norm(vectors[1:] - vectors[0], axis=1)
    nearest = {ALICE[i] for i in np.argsort(distances)[: config.fallback_results]}
    assert {r.content for r in weak} == nearest
    # ... returned ranked by their final scores, as every answer is.
    assert [r.final_score for r in weak] == sorted((r.final_score for r in weak), reverse=True)
