"""Namespaces below the tenant, on a real PostgreSQL: a memory stored in one, read by prefix
inside the search (a full top k, its namespace in the evidence), listed, copied only within
its namespace, exported and ingested back, forgotten by prefix, and never a way past the
tenant (row-level security as before)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from retrieval.errors import ValidationError
from retrieval.memory.export import export_records
from retrieval.memory.file_ingest import ingest, read_file
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever
from tests.conftest import CountingEmbedder

WHEN = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
QUESTION = "Which editor theme does the user like?"


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    config = RetrievalConfig(record_access=False, min_final_score=0.0, max_distance=None)
    with HybridRetriever.from_store(store, config=config, background_writes=False) as r:
        yield r


def _ids(results: Any, source: str = "semantic") -> list[int]:
    return [r.metadata["id"] for r in results if r.source == source]


def _preferences(store: MemoryStore) -> dict[tuple[str, ...], list[int]]:
    # 30 preferences of user u2, nearer the question than the 12 of user u1 (half of them one
    # level further down), and 3 at the tenant's top.
    places: dict[tuple[str, ...], list[int]] = {}
    rows = [(("users", "u2", "preferences"), f"The user likes the dark editor theme, take {i}.")
            for i in range(30)]  # fmt: skip
    rows += [(("users", "u1", "preferences"), f"Note {i}: the user prefers tabs to spaces.")
             for i in range(6)]  # fmt: skip
    rows += [(("users", "u1", "preferences", "editor"), f"Editor note {i}: font size 14.")
             for i in range(6)]  # fmt: skip
    rows += [((), f"Team note {i}: the editor theme is chosen per user.") for i in range(3)]
    for namespace, text in rows:
        memory_id = store.remember(text, tenant_id="acme", namespace=namespace, created_at=WHEN)
        places.setdefault(namespace, []).append(memory_id)
    return places


def test_a_namespace_reads_its_memories_and_those_below_it_with_a_full_top_k(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    places = _preferences(store)
    u1 = places[("users", "u1", "preferences")] + places[("users", "u1", "preferences", "editor")]
    everyone = _ids(retriever.retrieve(QUESTION, tenant_id="acme", limit=10))
    assert not set(everyone) & set(u1)
    found = retriever.retrieve(QUESTION, tenant_id="acme", limit=10, namespace=("users", "u1"))
    assert len(_ids(found)) == 10 and set(_ids(found)) <= set(u1)
    assert {tuple(r.metadata["namespace"]) for r in found} <= {
        ("users", "u1", "preferences"),
        ("users", "u1", "preferences", "editor"),
    }
    editor = ["users", "u1", "preferences", "editor"]
    deeper = _ids(retriever.retrieve(QUESTION, tenant_id="acme", limit=50, namespace=editor))
    assert set(deeper) == set(places[("users", "u1", "preferences", "editor")])
    # A name is matched whole: "u" is no prefix of "u1", and the names' order counts.
    assert not _ids(retriever.retrieve(QUESTION, tenant_id="acme", namespace=["users", "u"]))
    assert not _ids(retriever.retrieve(QUESTION, tenant_id="acme", namespace=["u1", "users"]))
    # The tenant's top (no namespace, or ()) reads everything.
    top = _ids(retriever.retrieve(QUESTION, tenant_id="acme", limit=60, namespace=()))
    assert set(top) == {one for ids in places.values() for one in ids}


def test_a_namespaced_call_reads_memories_only_and_meets_the_filter_too(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    store.record_decision(tenant_id="acme", task_id="t1", action_type="plan",
                          content="Set the editor theme for the user", status="done")  # fmt: skip
    kept = store.remember("The user likes the light editor theme.", tenant_id="acme",
                          namespace=["users", "u1"], metadata={"device": "laptop"})  # fmt: skip
    store.remember("The user likes the dark editor theme.", tenant_id="acme",
                   namespace=["users", "u1"], metadata={"device": "phone"})  # fmt: skip
    plain = retriever.retrieve(QUESTION, tenant_id="acme")
    assert any(r.source == "episodic" for r in plain)
    scoped = retriever.retrieve(
        QUESTION, tenant_id="acme", namespace=["users", "u1"], filter={"device": "laptop"}
    )
    assert _ids(scoped) == [kept] and {r.source for r in scoped} == {"semantic"}


def test_the_same_text_in_two_namespaces_is_two_memories_and_a_copy_within_one_refreshes(
    store: MemoryStore,
) -> None:
    first = store.remember("Prefers dark mode.", tenant_id="acme", namespace=["users", "u1"])
    other = store.remember("Prefers dark mode.", tenant_id="acme", namespace=["users", "u2"])
    again = store.remember("Prefers  dark mode.", tenant_id="acme", namespace=("users", "u1"))
    assert first != other and again == first
    memory = store.get_memory(first, tenant_id="acme")
    assert memory is not None and memory.namespace == ("users", "u1") and memory.seen_count == 2
    batch = store.remember_many([
        {"text": "Likes tea.", "tenant_id": "acme", "namespace": ["users", "u1"]},
        {"text": "Likes tea.", "tenant_id": "acme", "namespace": ["users", "u2"]},
        {"text": "Likes tea.", "tenant_id": "acme", "namespace": ["users", "u1"]},
    ])  # fmt: skip
    assert batch[0] == batch[2] != batch[1] and batch.duplicates == 1


def test_a_newer_version_in_another_namespace_does_not_demote_a_memory(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    older = store.remember("The user's favourite colour is blue.", tenant_id="acme",
                           namespace=["users", "u1"], created_at=WHEN)  # fmt: skip
    store.remember("The user's favourite colour is green.", tenant_id="acme",
                   namespace=["users", "u2"], created_at=WHEN + timedelta(days=1))  # fmt: skip
    store.remember("The user's favourite colour is red.", tenant_id="acme",
                   namespace=["users", "u1"], created_at=WHEN + timedelta(days=2))  # fmt: skip
    results = retriever.retrieve("What is the user's favourite colour?", tenant_id="acme")
    outdated = {r.metadata["id"]: r.metadata.get("possibly_outdated_by") for r in results}
    newest = next(r for r in results if r.content.endswith("red.")).metadata["id"]
    assert outdated[older] is not None and outdated[older]["id"] == newest
    green = next(r for r in results if r.content.endswith("green.")).metadata["id"]
    assert outdated[green] is None


def test_namespaces_are_listed_by_prefix_suffix_and_depth(store: MemoryStore) -> None:
    _preferences(store)
    expired = store.remember("Old.", tenant_id="acme", namespace=["archive"],
                             expires_at=datetime.now(UTC) + timedelta(seconds=1))  # fmt: skip
    assert expired
    listed = store.namespaces(tenant_id="acme")
    assert ("users", "u1", "preferences") in listed and () not in listed
    assert store.namespaces(tenant_id="acme", prefix=["users"], max_depth=2) == [
        ("users", "u1"),
        ("users", "u2"),
    ]
    assert store.namespaces(tenant_id="acme", suffix=["editor"]) == [
        ("users", "u1", "preferences", "editor")
    ]
    assert store.namespaces(tenant_id="acme", prefix=["users", "*", "preferences"], limit=1,
                            offset=1) == [("users", "u1", "preferences", "editor")]  # fmt: skip
    assert store.namespaces(tenant_id="other") == []
    with pytest.raises(ValidationError, match="prefix must be a list or tuple of names"):
        store.namespaces(tenant_id="acme", prefix="users")  # type: ignore[arg-type]


def test_forget_by_namespace_erases_it_and_what_lies_below_it(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    places = _preferences(store)
    old = places[("users", "u1", "preferences")][0]
    newer = store.remember("The user prefers spaces now.", tenant_id="acme",
                           namespace=["users", "u1", "preferences"], supersedes=old)  # fmt: skip
    forgotten = store.forget(tenant_id="acme", namespace=["users", "u1"])
    u1 = places[("users", "u1", "preferences")] + places[("users", "u1", "preferences", "editor")]
    assert set(forgotten.memory_ids) == set(u1) | {newer}  # the retired version too
    assert store.get_memory(old, tenant_id="acme") is None
    left = _ids(retriever.retrieve(QUESTION, tenant_id="acme", limit=60))
    assert set(left) == set(places[("users", "u2", "preferences")]) | set(places[()])
    assert store.namespaces(tenant_id="acme", prefix=["users"], max_depth=2) == [("users", "u2")]
    with pytest.raises(ValidationError, match="names the tenant's top"):
        store.forget(tenant_id="acme", namespace=())


def test_a_namespace_is_exported_and_ingested_back(store: MemoryStore, tmp_path: Path) -> None:
    store.remember("Prefers dark mode.", tenant_id="acme", namespace=["users", "u1"])
    store.remember("Ships on Fridays.", tenant_id="acme")
    lines = list(export_records(store, "acme"))
    by_text = {line["text"]: line for line in lines if line["type"] == "memory"}
    assert by_text["Prefers dark mode."]["namespace"] == ["users", "u1"]
    assert "namespace" not in by_text["Ships on Fridays."]
    exported = tmp_path / "acme.jsonl"
    exported.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(store, read_file(exported, store, tenant_id="copy", override_tenant=True))
    assert store.namespaces(tenant_id="copy") == [("users", "u1")]
    csv = tmp_path / "notes.csv"
    csv.write_text('text,namespace\n"Likes tea.",users;u3\n"Likes coffee.","[""a;b"", ""c""]"\n')
    ingest(store, read_file(csv, store, tenant_id="csv"))
    assert store.namespaces(tenant_id="csv") == [("a;b", "c"), ("users", "u3")]


def test_bad_namespaces_are_refused_and_nothing_is_written(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    for bad, message in [
        ("users/u1", "must be a list or tuple of names"),
        (["users", ""], "must hold non-empty strings"),
        (["users", 1], "must hold non-empty strings"),
        (["a\x00b"], "NUL byte"),
        (["n"] * 33, "over the limit of 32"),
        (["users", " "], "white space only"),
        (["\n"], "white space only"),
    ]:
        with pytest.raises(ValidationError, match=message):
            store.remember_many([
                {"text": "fine", "tenant_id": "acme"},
                {"text": "bad", "tenant_id": "acme", "namespace": bad},
            ])  # fmt: skip
        with pytest.raises(ValidationError, match=message):
            retriever.retrieve(QUESTION, tenant_id="acme", namespace=bad)
    # Within 32 names of 256 characters, but more than one index entry holds: refused before
    # any SQL, the whole batch with it (a read of such a namespace finds nothing, as any).
    for bad in (["n" * 256] * 11, ["\u00e9" * 256] * 5):
        with pytest.raises(ValidationError, match="over the limit of 2,400") as raised:
            store.remember_many([
                {"text": "fine", "tenant_id": "acme"},
                {"text": "bad", "tenant_id": "acme", "namespace": bad},
            ])  # fmt: skip
        assert raised.value.field == "namespace" and "postgres" not in str(raised.value)
        assert not _ids(retriever.retrieve(QUESTION, tenant_id="acme", namespace=bad))
    assert store.namespaces(tenant_id="acme") == []
    assert not _ids(retriever.retrieve("fine", tenant_id="acme"))


def test_the_longest_namespace_within_the_limit_is_stored_and_read(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    longest = ("n" * 256,) * 9
    memory = store.remember("Prefers dark mode.", tenant_id="acme", namespace=longest, key="ui")
    found = retriever.retrieve("dark mode", tenant_id="acme", namespace=longest)
    assert _ids(found) == [memory]
    assert store.namespaces(tenant_id="acme") == [longest]


def test_a_role_bound_by_row_level_security_reads_and_forgets_by_namespace(
    store: MemoryStore, app_engine: Engine, counting_embedder: CountingEmbedder
) -> None:
    places = _preferences(store)
    _preferences_of_another_tenant(store)
    app = MemoryStore(app_engine, embedder=counting_embedder)
    with HybridRetriever.from_store(app, config=RetrievalConfig(record_access=False)) as bound:
        found = _ids(bound.retrieve("tabs or spaces", tenant_id="acme", namespace=["users", "u1"]))
        other = _ids(bound.retrieve("tabs or spaces", tenant_id="beta", namespace=["users", "u1"]))
    assert found and set(found) <= set(places[("users", "u1", "preferences")])
    assert other and not set(other) & set(found)
    assert app.namespaces(tenant_id="beta") == [("users", "u1")]
    forgotten = app.forget(tenant_id="beta", namespace=["users"])
    assert len(forgotten.memory_ids) == 2
    assert store.namespaces(tenant_id="acme", prefix=["users", "u1"], max_depth=2) == [
        ("users", "u1")
    ]


def _preferences_of_another_tenant(store: MemoryStore) -> None:
    for text in ("The user prefers tabs.", "The user prefers spaces."):
        store.remember(text, tenant_id="beta", namespace=["users", "u1"])


def test_near_duplicates_are_looked_for_in_one_namespace_when_asked(store: MemoryStore) -> None:
    mine = store.remember("The user prefers dark mode.", tenant_id="acme", namespace=["u1"])
    other = store.remember("The user prefers dark mode!", tenant_id="acme", namespace=["u2"])
    near = store.similar("The user prefers the dark mode.", tenant_id="acme", namespace=["u1"])
    assert [one.memory.id for one in near] == [mine]
    everywhere = store.similar("The user prefers the dark mode.", tenant_id="acme")
    assert {one.memory.id for one in everywhere} == {mine, other}
    assert store.similar("The user prefers dark mode.", tenant_id="acme", namespace=()) == []
