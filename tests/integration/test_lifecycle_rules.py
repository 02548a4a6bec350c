"""The rules of a memory over time at their edges: an expiry that has passed, a forgotten
correction, a correction dated later, a message told again in another session, and the order
of a history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from retrieval.errors import ValidationError
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever

NOW = datetime.now(UTC)
HOUR = timedelta(hours=1)


def test_an_expiry_that_has_passed_is_refused_without_created_at(store: MemoryStore) -> None:
    with pytest.raises(ValidationError, match=r"expires_at: .* has passed"):
        store.remember("Already expired note.", tenant_id="acme", expires_at=NOW - HOUR)
    with pytest.raises(ValidationError, match=r"item 1: expires_at: .* has passed"):
        store.remember_many(
            [{"text": "Fine.", "tenant_id": "acme"},
             {"text": "Too late.", "tenant_id": "acme", "expires_at": NOW - HOUR}]
        )  # fmt: skip
    assert store.similar("note", tenant_id="acme", threshold=0.0) == []  # nothing written
    kept = store.remember("Told then.", tenant_id="acme", created_at=NOW - 2 * HOUR,
                          expires_at=NOW - HOUR)  # fmt: skip
    assert store.get_memory(kept, tenant_id="acme") is not None  # the past, as it was


def test_forgetting_a_correction_brings_back_what_it_retired(store: MemoryStore) -> None:
    old = store.remember("Standup is at 9:30 in room Orion.", tenant_id="acme")
    fix = store.remember("Standup moved to 10:00, room Vega.", tenant_id="acme", supersedes=old)
    forgotten = store.forget(tenant_id="acme", memory_ids=[fix])
    assert forgotten.revived_ids == (old,)
    back = store.get_memory(old, tenant_id="acme")
    assert back is not None and back.retired_at is None and back.superseded_by is None
    assert [v.memory.id for v in store.history(old, tenant_id="acme")] == [old]
    again = store.remember("Standup is at 10:15 in room Lyra.", tenant_id="acme", supersedes=old)
    assert [v.memory.id for v in store.history(old, tenant_id="acme")] == [old, again]


def test_a_retired_text_told_again_stays_retired_when_its_correction_is_forgotten(
    store: MemoryStore,
) -> None:
    old = store.remember("The office is in Berlin.", tenant_id="acme")
    fix = store.remember("The office is in Munich.", tenant_id="acme", supersedes=old)
    told = store.remember("The office is in Berlin.", tenant_id="acme")  # live again, anew
    assert told != old
    forgotten = store.forget(tenant_id="acme", memory_ids=[fix])
    assert forgotten.revived_ids == ()
    kept = store.get_memory(old, tenant_id="acme")
    assert kept is not None and kept.retired_at is not None and kept.superseded_by is None
    with pytest.raises(ValidationError, match="has no newer version"):
        store.remember("The office is in Hamburg.", tenant_id="acme", supersedes=old)


def test_an_expired_correction_forgotten_leaves_what_it_retired_retired(
    store: MemoryStore,
) -> None:
    old = store.remember("Bob is on call.", tenant_id="acme", created_at=NOW - 3 * HOUR)
    store.remember(
        "Erin is on call until noon.", tenant_id="acme", supersedes=old,
        created_at=NOW - 2 * HOUR, expires_at=NOW - HOUR,
    )  # fmt: skip
    store.forget(tenant_id="acme", expired=True)
    kept = store.get_memory(old, tenant_id="acme")
    assert kept is not None and kept.superseded_by is None
    assert kept.retired_at == NOW - 2 * HOUR  # what reads saw before the forget, they see after
    assert store.similar("Bob is on call.", tenant_id="acme") == []
    assert [v.valid_until for v in store.history(old, tenant_id="acme")] == [NOW - 2 * HOUR]


def test_a_correction_dated_later_leaves_the_old_version_live_until_then(
    store: MemoryStore,
) -> None:
    old = store.remember("Deploys go out on Tuesdays.", tenant_id="acme")
    later = store.remember(
        "Deploys go out on Thursdays.", tenant_id="acme", supersedes=old, created_at=NOW + 48 * HOUR
    )
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        found = {r.metadata["id"] for r in retriever.retrieve("When do deploys go out?",
                                                              tenant_id="acme")}  # fmt: skip
    near = {one.memory.id for one in store.similar("Deploys go out on Tuesdays.",
                                                   tenant_id="acme", threshold=0.3)}  # fmt: skip
    assert found == near == {old, later}  # one rule: live as of now


def test_a_message_without_a_thread_told_again_is_another_turn(store: MemoryStore) -> None:
    first = store.remember(
        "assistant: ok", tenant_id="acme", kind="message", created_at=NOW - 5 * HOUR
    )
    again = store.remember("assistant: ok", tenant_id="acme", kind="message")
    ids = store.remember_many(
        [{"text": "assistant: ok", "tenant_id": "acme", "kind": "message"},
         {"text": "A fact told twice.", "tenant_id": "acme"},
         {"text": "A fact told twice.", "tenant_id": "acme"}]
    )  # fmt: skip
    assert len({first, again, ids[0]}) == 3
    assert ids[1] == ids[2] and ids.duplicates == 1  # other memories still collapse
    memory = store.get_memory(again, tenant_id="acme")
    assert memory is not None and memory.seen_count == 1


def test_history_is_in_the_order_the_versions_held(store: MemoryStore) -> None:
    berlin = store.remember("The office is in Berlin.", tenant_id="acme",
                            created_at=NOW - 72 * HOUR)  # fmt: skip
    munich = store.remember("The office is in Munich.", tenant_id="acme",
                            created_at=NOW - 48 * HOUR)  # fmt: skip
    told = store.remember("The office is in Berlin.", tenant_id="acme", supersedes=munich)
    assert told == berlin  # a copy of the live memory, which now corrects the newer one
    versions = store.history(berlin, tenant_id="acme")
    assert [v.memory.id for v in versions] == [munich, berlin]
    assert versions[0].valid_until is not None and versions[1].valid_until is None


def test_similar_names_the_known_kinds_for_an_unknown_one(store: MemoryStore) -> None:
    with pytest.raises(ValidationError, match=r"'nokind' is not a memory kind; known: .*fact"):
        store.similar("anything", tenant_id="acme", kind="nokind")


def test_a_kind_given_two_lifetimes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval.errors import ConfigurationError
    from retrieval.memory.config import WriteConfig

    monkeypatch.setenv("RETRIEVAL_KIND_LIFETIMES", "event=1,event=2")
    with pytest.raises(ConfigurationError, match="event is given two lifetimes"):
        WriteConfig.from_env()
