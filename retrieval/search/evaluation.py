"""Measure a configuration on labelled questions: which related and unrelated memories come back.

A labelled set is memories and questions, each question naming the memories that answer it
(``{"memories": [...], "queries": [{"text": ..., "relevant": [indexes]}]}``, as in
``tests/data/calibration.json``); every other memory is unrelated to it. The threshold and the
distance cut-off are calibrated on such a set (docs/design.md, "Calibration"): the defaults
return 27 of its 29 relevant pairs and 1 of its 547 unrelated ones. Check your own model or
settings the same way before relying on them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever


@dataclass(frozen=True)
class PairsReturned:
    """How many (question, memory) pairs came back, of the related and of the unrelated."""

    relevant_returned: int
    relevant_total: int
    unrelated_returned: int
    unrelated_total: int

    @property
    def relevant_share(self) -> float:
        """Share of the related pairs returned (higher is better)."""
        return self.relevant_returned / self.relevant_total if self.relevant_total else 0.0

    @property
    def unrelated_share(self) -> float:
        """Share of the unrelated pairs returned (lower is better)."""
        return self.unrelated_returned / self.unrelated_total if self.unrelated_total else 0.0


def store_labelled(
    store: MemoryStore, labelled: Mapping[str, Any], tenant_id: str, as_of: datetime
) -> list[int]:
    """Store the set's memories in ``tenant_id`` with ages from 0 to 119 days before ``as_of``
    (so that recency varies as in a real memory); return their ids in the set's order."""
    return store.remember_many(
        MemoryInput(
            text=text,
            tenant_id=tenant_id,
            created_at=as_of - timedelta(days=(index * 7) % 120),
        )
        for index, text in enumerate(labelled["memories"])
    )


def pairs_returned(
    store: MemoryStore,
    config: RetrievalConfig,
    labelled: Mapping[str, Any],
    ids: Sequence[int],
    tenant_id: str,
    as_of: datetime,
) -> PairsReturned:
    """Ask every question of the set with ``config`` and count the memories returned above
    the thresholds (a weak match that fills an answer, ``below_threshold``, is not counted)."""
    relevant_returned = unrelated_returned = relevant_total = unrelated_total = 0
    with HybridRetriever.from_store(store, config=config, background_writes=False) as retriever:
        for question in labelled["queries"]:
            response = retriever.retrieve(question["text"], tenant_id=tenant_id, as_of=as_of)
            returned = {
                r.metadata["id"]
                for r in response
                if r.source == "semantic" and not r.metadata.get("below_threshold")
            }
            relevant = {ids[i] for i in question["relevant"]}
            relevant_returned += len(returned & relevant)
            unrelated_returned += len(returned - relevant)
            relevant_total += len(relevant)
            unrelated_total += len(ids) - len(relevant)
    return PairsReturned(relevant_returned, relevant_total, unrelated_returned, unrelated_total)
