"""A correction answers what its fact answered, on the real PostgreSQL: a question that finds a
memory a live correction replaced (``supersedes``) finds the correction in its place, with the
scores that found the memory and its id (``found_through``); as of before the correction, the
memory itself; a key's new value is found by its own text only."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.results import RetrievalResult
from retrieval.search.retriever import HybridRetriever

JANUARY = datetime(2026, 1, 1, 9, tzinfo=UTC)
APRIL = datetime(2026, 4, 1, 9, tzinfo=UTC)
JULY = datetime(2026, 7, 1, 9, tzinfo=UTC)
QUESTION = "Where do I live?"


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    with HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False)) as r:
        yield r


def _memories(results: list[RetrievalResult]) -> list[RetrievalResult]:
    return [r for r in results if r.source == "semantic"]


def _household(store: MemoryStore, tenant: str, **told: object) -> int:
    # A fact and two others; the fact's correction ("We moved to Porto.") shares no word with
    # it nor with the question, and is far from both in meaning.
    lisbon = store.remember("I live in Lisbon with my partner Joana.", tenant_id=tenant,
                            created_at=JANUARY, **told)  # fmt: skip
    store.remember("My partner Joana is a vet.", tenant_id=tenant, created_at=APRIL)
    store.remember("I work as a backend engineer at Feedzai.", tenant_id=tenant, created_at=APRIL)
    return lisbon


def test_a_correction_is_found_by_what_its_fact_answered(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    lisbon = _household(store, "acme")
    before = _memories(retriever.retrieve(QUESTION, tenant_id="acme"))
    assert before[0].metadata["id"] == lisbon
    porto = store.remember("We moved to Porto.", tenant_id="acme", created_at=JULY,
                           supersedes=lisbon)  # fmt: skip
    after = _memories(retriever.retrieve(QUESTION, tenant_id="acme"))
    assert after[0].metadata["id"] == porto
    assert after[0].metadata["found_through"] == lisbon
    assert "below_threshold" not in after[0].metadata
    assert after[0].final_score == pytest.approx(before[0].final_score, abs=0.05)
    assert lisbon not in [r.metadata["id"] for r in after]
    # Found by its own text, a memory carries no found_through.
    assert all("found_through" not in r.metadata for r in after[1:])
    # As of before the correction, the fact itself answers.
    then = _memories(retriever.retrieve(QUESTION, tenant_id="acme", as_of=JULY - timedelta(days=1)))
    assert then[0].metadata["id"] == lisbon
    assert "found_through" not in then[0].metadata


def test_a_correction_of_a_correction_is_found_through_the_facts_it_replaced(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    sixteen = store.remember("Staging runs PostgreSQL 16.", tenant_id="acme", created_at=JANUARY)
    seventeen = store.remember("Staging runs PostgreSQL 17.", tenant_id="acme", created_at=APRIL,
                               supersedes=sixteen)  # fmt: skip
    aurora = store.remember("We moved staging to Aurora.", tenant_id="acme", created_at=JULY,
                            supersedes=seventeen)  # fmt: skip
    found = _memories(retriever.retrieve("Which PostgreSQL does staging run?", tenant_id="acme"))
    # Both versions lead to Aurora, which comes once, through the one the question ranks higher.
    assert [r.metadata["id"] for r in found] == [aurora]
    assert found[0].metadata["found_through"] in {sixteen, seventeen}


def test_a_fact_corrected_twice_leads_to_its_last_correction(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # Neither correction shares a word with the question or with the fact: only the fact is
    # found, and it leads through the first correction, retired by the second, to the second.
    lisbon = _household(store, "twice")
    porto = store.remember("We moved to Porto.", tenant_id="twice", created_at=APRIL,
                           supersedes=lisbon)  # fmt: skip
    madrid = store.remember("Then we moved on to Madrid.", tenant_id="twice", created_at=JULY,
                            supersedes=porto)  # fmt: skip
    found = _memories(retriever.retrieve(QUESTION, tenant_id="twice"))
    assert found[0].metadata["id"] == madrid
    assert found[0].metadata["found_through"] == lisbon
    assert "below_threshold" not in found[0].metadata
    assert {lisbon, porto}.isdisjoint(r.metadata["id"] for r in found)
    # Between the two corrections, the first one answered.
    between = JULY - timedelta(days=1)
    then = _memories(retriever.retrieve(QUESTION, tenant_id="twice", as_of=between))
    assert then[0].metadata["id"] == porto
    assert then[0].metadata["found_through"] == lisbon
    assert madrid not in [r.metadata["id"] for r in then]
    # Forgetting the last correction brings the first one back, and the fact leads to it.
    store.forget(tenant_id="twice", memory_ids=[madrid])
    after = _memories(retriever.retrieve(QUESTION, tenant_id="twice"))
    assert after[0].metadata["id"] == porto
    assert after[0].metadata["found_through"] == lisbon


def test_a_keys_new_value_is_found_by_its_own_text(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # A key names an item, whose new value replaces the old one (LangGraph's put, Mem0's
    # update): the old value leads to nothing.
    lisbon = _household(store, "keys", key="home")
    porto = store.remember("We moved to Porto.", tenant_id="keys", created_at=JULY, key="home")
    found = _memories(retriever.retrieve(QUESTION, tenant_id="keys"))
    assert lisbon not in [r.metadata["id"] for r in found]
    assert found[0].metadata["id"] == porto
    assert "found_through" not in found[0].metadata
    assert found[0].metadata["below_threshold"] is True


def test_a_correction_the_call_filters_out_is_not_found(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    lisbon = _household(store, "filters", metadata={"user": "u1"})
    store.remember("We moved to Porto.", tenant_id="filters", created_at=JULY, supersedes=lisbon,
                   metadata={"user": "u2"})  # fmt: skip
    found = _memories(retriever.retrieve(QUESTION, tenant_id="filters", filter={"user": "u1"}))
    assert found == []


def test_forgetting_the_correction_brings_the_fact_back(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    lisbon = _household(store, "forget")
    porto = store.remember("We moved to Porto.", tenant_id="forget", created_at=JULY,
                           supersedes=lisbon)  # fmt: skip
    store.forget(tenant_id="forget", memory_ids=[porto])
    found = _memories(retriever.retrieve(QUESTION, tenant_id="forget"))
    assert found[0].metadata["id"] == lisbon
    assert "found_through" not in found[0].metadata


def test_forgetting_the_corrected_memory_ends_its_way_to_the_correction(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    lisbon = _household(store, "erased")
    porto = store.remember("We moved to Porto.", tenant_id="erased", created_at=JULY,
                           supersedes=lisbon)  # fmt: skip
    store.forget(tenant_id="erased", memory_ids=[lisbon])
    found = _memories(retriever.retrieve(QUESTION, tenant_id="erased"))
    assert all("found_through" not in r.metadata for r in found)
    assert found[0].metadata["id"] == porto and found[0].metadata["below_threshold"] is True
