"""The default threshold, with the real model, on a hand-labelled fixture of an agent's memory.

``tests/data/calibration.json`` holds 36 memories and 16 questions, each with the memories that
answer it; every other memory is unrelated to it. The memories are stored with ages from 0 to
119 days, so recency varies as it does in a real memory.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.evaluation import pairs_returned, store_labelled

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "calibration.json"
AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
ORIGINAL = RetrievalConfig(min_final_score=0.5, max_distance=None)


def _kept(store: MemoryStore, config: RetrievalConfig) -> tuple[float, float]:
    """Share of relevant (query, memory) pairs returned; share of unrelated pairs returned."""
    data = json.loads(FIXTURE.read_text())
    ids = store_labelled(store, data, "calibration", AS_OF)
    pairs = pairs_returned(store, config, data, ids, "calibration", AS_OF)
    store.forget(tenant_id="calibration", everything=True)
    return pairs.relevant_share, pairs.unrelated_share


def test_the_default_threshold_keeps_relevant_memories_and_drops_unrelated_ones(
    store: MemoryStore,
) -> None:
    relevant, unrelated = _kept(store, RetrievalConfig())
    # Measured: 27 of 29 relevant pairs returned, 1 of 547 unrelated (docs/design.md, Calibration).
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
