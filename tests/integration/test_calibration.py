"""The default threshold, with the real model, on a hand-labelled fixture of an agent's memory.

``tests/data/calibration.json`` holds 36 memories and 16 questions, each with the memories that
answer it; every other memory is unrelated to it. The memories are stored with ages from 0 to
119 days, so recency varies as it does in a real memory.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "calibration.json"
AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
ORIGINAL = RetrievalConfig(min_final_score=0.5, max_distance=None)


def _kept(store: MemoryStore, config: RetrievalConfig) -> tuple[float, float]:
    """Share of relevant (query, memory) pairs returned; share of unrelated pairs returned."""
    data = json.loads(FIXTURE.read_text())
    ids = store.remember_many(
        MemoryInput(
            text=text,
            tenant_id="calibration",
            created_at=AS_OF - timedelta(days=(index * 7) % 120),
        )
        for index, text in enumerate(data["memories"])
    )
    relevant_kept = unrelated_kept = relevant_total = unrelated_total = 0
    with HybridRetriever.from_store(store, config=config, background_writes=False) as retriever:
        for query in data["queries"]:
            response = retriever.retrieve(query["text"], tenant_id="calibration", as_of=AS_OF)
            returned = {r.metadata["id"] for r in response if r.source == "semantic"}
            relevant = {ids[i] for i in query["relevant"]}
            relevant_kept += len(returned & relevant)
            unrelated_kept += len(returned - relevant)
            relevant_total += len(relevant)
            unrelated_total += len(ids) - len(relevant)
    store.forget(tenant_id="calibration", everything=True)
    return relevant_kept / relevant_total, unrelated_kept / unrelated_total


def test_the_default_threshold_keeps_relevant_memories_and_drops_unrelated_ones(
    store: MemoryStore,
) -> None:
    relevant, unrelated = _kept(store, RetrievalConfig())
    # Measured: 27 of 29 relevant pairs returned, 1 of 547 unrelated pairs (README, Calibration).
    assert relevant >= 0.9
    assert unrelated <= 0.01


def test_the_original_threshold_drops_older_relevant_memories(store: MemoryStore) -> None:
    relevant, _ = _kept(store, ORIGINAL)
    calibrated_relevant, _ = _kept(store, RetrievalConfig())
    # The original design's threshold 0.5 without a cut-off: with relevance spanning [0, 1]
    # (median 0.64 for the relevant pairs, fused with BM25), the weaker relevant memories fall
    # below it.
    assert relevant < calibrated_relevant
    assert relevant < 0.7
