"""LangGraph's store on the library, on a real PostgreSQL: items put, got, searched (by the
hybrid search with a query, listed without), filtered, listed by namespace, deleted, kept over
time, expired by TTL, one tenant each (docs/langgraph.md's graph runs in test_docs_run)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from langgraph.store.base import (
    GetOp,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from retrieval.errors import ConfigurationError, ValidationError
from retrieval.integrations.langgraph import RetrievalStore
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever


@pytest.fixture
def lg(store: MemoryStore) -> Iterator[RetrievalStore]:
    with RetrievalStore(store, tenant_id="acme", index={"fields": ["text"]}) as made:
        yield made


def test_put_get_and_a_value_kept_exactly(lg: RetrievalStore) -> None:
    value = {"text": "Prefers dark mode", "n": 1.5, "tags": ["ui", None], "nested": {"a": True}}
    lg.put(("users", "u1"), "prefs", value)
    item = lg.get(("users", "u1"), "prefs")
    assert item is not None and item.value == value and item.key == "prefs"
    assert item.namespace == ("users", "u1") and item.created_at == item.updated_at
    assert lg.get(("users", "u1"), "missing") is None
    assert lg.get(("users",), "prefs") is None  # a namespace is matched whole
    # A search's item carries the same value, read for the items it returns; a search is a
    # read: it counts no access of the memories it returns.
    found = lg.search(("users",), query="dark mode")
    assert [(i.key, i.value) for i in found] == [("prefs", value)]
    lg.retriever.flush()
    memory = lg.store.similar("Prefers dark mode", tenant_id="acme")[0].memory
    assert memory.access_count == 0 and memory.last_accessed_at is None


def test_a_put_of_an_existing_key_keeps_its_history(lg: RetrievalStore) -> None:
    lg.put(("users", "u1"), "prefs", {"text": "Prefers dark mode"})
    first = lg.get(("users", "u1"), "prefs")
    time.sleep(0.01)
    lg.put(("users", "u1"), "prefs", {"text": "Prefers light mode"})
    second = lg.get(("users", "u1"), "prefs")
    assert first is not None and second is not None
    assert second.value == {"text": "Prefers light mode"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    found = lg.search(("users",), query="which mode does the user prefer?")
    assert [item.value["text"] for item in found] == ["Prefers light mode"]
    # A search's item too was first put with its key's first version, updated with its last.
    assert found[0].created_at == first.created_at and found[0].updated_at == second.updated_at
    memory_id = lg.store.similar("Prefers light mode", tenant_id="acme")[0].memory.id
    versions = lg.store.history(memory_id, tenant_id="acme")
    assert [v.memory.content for v in versions] == ["Prefers dark mode", "Prefers light mode"]
    lg.delete(("users", "u1"), "prefs")  # every version goes
    assert lg.get(("users", "u1"), "prefs") is None
    assert lg.store.get_memory(memory_id, tenant_id="acme") is None
    assert lg.store.get_memory(versions[0].memory.id, tenant_id="acme") is None


def test_search_ranks_by_the_hybrid_relevance_within_the_prefix_and_filter(
    lg: RetrievalStore,
) -> None:
    notes = {
        ("users", "u1", "memories"): [
            ("m1", "The user plays tennis on Sundays", "hobby"),
            ("m2", "The user is allergic to peanuts", "health"),
            ("m3", "The user's favourite sport is football", "hobby"),
        ],
        ("users", "u2", "memories"): [("m1", "The user plays the violin", "hobby")],
    }
    for namespace, rows in notes.items():
        for key, text, kind in rows:
            lg.put(namespace, key, {"text": text, "kind": kind, "year": 2026})
    found = lg.search(("users", "u1"), query="What sports does the user play?", limit=2)
    assert [item.key for item in found] == ["m1", "m3"] or [item.key for item in found] == [
        "m3",
        "m1",
    ]
    assert all(0.0 <= (item.score or 0.0) <= 1.0 for item in found)
    assert found[0].score is not None and found[1].score is not None
    assert found[0].score >= found[1].score
    filtered = lg.search(("users",), query="sport", filter={"kind": "health"})
    assert [item.value["text"] for item in filtered] == ["The user is allergic to peanuts"]
    compared = lg.search(("users",), filter={"year": {"$gte": 2026}, "kind": {"$ne": "health"}})
    assert len(compared) == 3 and all(item.score is None for item in compared)
    assert [item.key for item in lg.search(("users", "u2"))] == ["m1"]
    page = lg.search(("users",), query="sport", limit=2, offset=2)
    everything = lg.search(("users",), query="sport", limit=4)
    assert [i.key for i in page] == [i.key for i in everything[2:]]


def test_list_namespaces_by_prefix_suffix_and_depth(lg: RetrievalStore) -> None:
    for namespace in [("test", "documents", "public"), ("test", "documents", "private"),
                      ("test", "images", "public"), ("prod", "documents", "public")]:  # fmt: skip
        lg.put(namespace, "k", {"text": "/".join(namespace)})
    assert len(lg.list_namespaces()) == 4
    assert lg.list_namespaces(max_depth=2) == [
        ("prod", "documents"),
        ("test", "documents"),
        ("test", "images"),
    ]
    assert lg.list_namespaces(suffix=("public",)) == [
        ("prod", "documents", "public"),
        ("test", "documents", "public"),
        ("test", "images", "public"),
    ]
    assert lg.list_namespaces(prefix=("test", "*", "public")) == [
        ("test", "documents", "public"),
        ("test", "images", "public"),
    ]
    batched = lg.batch([
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("prod",)),)),
        PutOp(("prod", "x"), "k", {"text": "new"}),
        GetOp(("prod", "x"), "k"),
        SearchOp(("prod",), limit=10),
    ])  # fmt: skip
    assert batched[0] == [("prod", "documents", "public")] and batched[1] is None
    assert batched[2] is not None and batched[2].value == {"text": "new"}
    assert {item.key for item in batched[3]} == {"k"} and len(batched[3]) == 2


def test_ttl_expires_items_and_a_read_refreshes_them(store: MemoryStore) -> None:
    ttl = {"default_ttl": 2 / 60, "refresh_on_read": True}
    with RetrievalStore(store, tenant_id="acme", ttl=ttl) as lg:  # type: ignore[arg-type]
        lg.put(("cache",), "kept", {"text": "read often"})
        lg.put(("cache",), "left", {"text": "never read"})
        lg.put(("cache",), "forever", {"text": "no ttl"}, ttl=None)
        for _ in range(3):
            time.sleep(0.8)
            assert lg.get(("cache",), "kept") is not None  # each read starts the 2 s again
        assert lg.get(("cache",), "left") is None  # expired: not read
        assert lg.get(("cache",), "forever") is not None
        assert lg.sweep_ttl() == 1
        assert {item.key for item in lg.search(("cache",))} == {"kept", "forever"}


def test_one_tenant_per_store_and_bad_operations(store: MemoryStore) -> None:
    with (
        RetrievalStore(store, tenant_id="a") as alice,
        RetrievalStore(store, tenant_id="b") as bob,
    ):
        alice.put(("notes",), "k", {"text": "Alice's secret"})
        assert bob.get(("notes",), "k") is None
        assert bob.search(("notes",), query="secret") == []
        assert bob.list_namespaces() == []
        with pytest.raises(ValidationError, match="at least one name"):
            alice.batch([PutOp((), "k", {"text": "x"})])
        with pytest.raises(ValidationError, match="is not an operator of a filter"):
            alice.search(("notes",), filter={"$nor": [{"a": 1}]})
        assert alice.search(("notes",), filter={"$or": [{"a": 1}, {"a": 2}]}) == []
        with pytest.raises(ValueError, match="dims"):
            RetrievalStore(store, tenant_id="a", index={"dims": 3, "fields": ["text"]})


def test_abatch_and_the_async_methods(lg: RetrievalStore) -> None:
    async def scenario() -> list[str]:
        await lg.aput(("users", "u1"), "a", {"text": "Speaks French"})
        await lg.aput(("users", "u1"), "b", {"text": "Lives in Lyon"})
        item = await lg.aget(("users", "u1"), "a")
        assert item is not None and item.value == {"text": "Speaks French"}
        found = await lg.asearch(("users",), query="Which city does the user live in?")
        return [one.key for one in found]

    assert asyncio.run(scenario())[0] == "b"


def test_items_under_other_keys_are_not_taken_for_versions(lg: RetrievalStore) -> None:
    # Whole values as JSON read alike; only a put of the same key makes a newer version.
    with RetrievalStore(lg.store, tenant_id="acme") as whole:
        whole.put(("test",), "doc1", {"text": "red apple", "color": "red", "score": 4.5})
        whole.put(("test",), "doc2", {"text": "red car", "color": "red", "score": 3.0})
        found = whole.search(("test",), query="apple", filter={"color": "red"})
    assert [item.key for item in found] == ["doc1", "doc2"]


def test_a_search_returns_the_stores_items_among_many_other_memories(
    lg: RetrievalStore, store: MemoryStore
) -> None:
    # Memories stored by other means (remember, MCP, the CLI) in the same namespace, nearer the
    # query than the items: a search still returns the items, up to its limit, page by page.
    namespace = ("users", "u1")
    for n in range(30):
        store.remember(f"Deploy pipeline note {n}: the deploy runs on main.", tenant_id="acme",
                       namespace=namespace)  # fmt: skip
    for key, text in (
        ("a", "The deploy pipeline uses GitHub Actions."),
        ("b", "Deploys need a green build."),
        ("c", "Rollback with one command."),
    ):
        lg.put(namespace, key, {"text": text})  # fmt: skip
    found = lg.search(namespace, query="How does the deploy pipeline run?", limit=5)
    assert sorted(item.key for item in found) == ["a", "b", "c"]
    assert [item.key for item in found][:1] == ["a"]
    pages = [lg.search(namespace, query="deploy pipeline", limit=1, offset=n) for n in range(4)]
    assert sorted(page[0].key for page in pages[:3]) == ["a", "b", "c"] and pages[3] == []


@pytest.mark.parametrize(
    ("ttl", "says"),
    [
        ("5", "ttl must be a number of minutes"),
        (True, "ttl must be a number of minutes"),
        (float("nan"), "finite number of minutes above 0"),
        (float("inf"), "finite number of minutes above 0"),
        (1e12, "finite number of minutes above 0"),
        (0, "finite number of minutes above 0"),
    ],
)
def test_a_ttl_that_is_no_number_of_minutes_is_refused_and_nothing_written(
    lg: RetrievalStore, ttl: object, says: str
) -> None:
    with pytest.raises(ValidationError, match=says) as raised:
        lg.put(("users", "u1"), "k", {"text": "Prefers tea."}, ttl=ttl)  # type: ignore[arg-type]
    assert raised.value.field == "ttl"
    assert lg.get(("users", "u1"), "k") is None


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"text": "t", "when": datetime(2026, 1, 1, tzinfo=UTC)}, "value['when'] a datetime"),
        ({"text": "t", "tags": {"a", "b"}}, "value['tags'] a set"),
        ({"text": "t", "raw": [b"xy"]}, "value['raw'][0] a bytes"),
        ({"text": "t", "score": float("nan")}, "value['score'] nan"),
        ({"text": "t", "nested": {1: "one"}}, "a key 1 that is not a string"),
    ],
)
def test_a_value_json_cannot_hold_is_refused_in_words(
    lg: RetrievalStore, value: dict[str, object], says: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(says)):
        lg.put(("users", "u1"), "k", value)
    assert lg.get(("users", "u1"), "k") is None


def test_an_embed_given_in_the_index_is_refused_in_words(store: MemoryStore) -> None:
    # The store's embedder makes the one vector column: another model's embed is not used
    # silently.
    with pytest.raises(ConfigurationError, match="index embed='openai:text-embedding-3-small'"):
        index = {"embed": "openai:text-embedding-3-small", "fields": ["text"]}
        RetrievalStore(store, tenant_id="acme", index=index)  # type: ignore[arg-type]


def test_an_item_put_with_index_false_is_kept_but_not_found_by_a_query(
    lg: RetrievalStore, store: MemoryStore
) -> None:
    lg.put(("users", "u1"), "theme", {"text": "Prefers dark mode"}, index=False)
    lg.put(("users", "u1"), "food", {"text": "Vegetarian, no mushrooms"})
    found = lg.search(("users",), query="dark mode theme", limit=10)
    assert [item.key for item in found] == ["food"]  # the unindexed item is never a hit
    assert lg.get(("users", "u1"), "theme") is not None
    assert {item.key for item in lg.search(("users",), limit=10)} == {"theme", "food"}
    # Put again with an index, the item is found as any other.
    lg.put(("users", "u1"), "theme", {"text": "Prefers dark mode"})
    assert lg.search(("users",), query="dark mode theme", limit=1)[0].key == "theme"
    # A retriever given to the store keeps its settings and still leaves them out.
    lg.put(("users", "u2"), "secret", {"text": "Dark roast coffee"}, index=False)
    with (
        HybridRetriever.from_store(store) as own,
        RetrievalStore(store, tenant_id="acme", retriever=own) as other,
    ):
        assert "secret" not in [item.key for item in other.search(("users",), query="dark")]


def test_an_item_that_opens_with_who_said_it_is_a_turn_of_its_conversation(
    lg: RetrievalStore,
) -> None:
    # A conversation put turn by turn, as an app keeps a chat in its store: each item whose
    # text opens with who said it is a message, placed by the time it was put (its session,
    # the turn before it, the turns around a hit); any other item a fact, and a store given a
    # kind keeps it.
    namespace = ("chats", "c1")
    turns = [
        "Sam: How was your weekend?",
        "Maria: Busy! I tried the new climbing gym downtown on Saturday.",
        "Sam: Nice, I have been meaning to go climbing again.",
        "Maria: On Sunday I went to a gym class with my sister too.",
        'Sam said, "Which class?"',
        "Maria: Spinning, it was exhausting.",
    ]
    for n, text in enumerate(turns):
        lg.put(namespace, f"t{n}", {"text": text})
    lg.put(("notes",), "note", {"text": "Maria prefers morning meetings."})
    lg.put(("notes",), "update", {"text": "Update: Maria's meetings moved to Tuesdays."})
    with RetrievalStore(lg.store, tenant_id="acme", index={"fields": ["text"]},
                        kind="fact") as facts:  # fmt: skip
        facts.put(("chats", "c2"), "t0", {"text": "Sam: See you on Monday."})

    def kind_of(text: str) -> str:
        return next(
            found.memory.kind
            for found in lg.store.similar(text, tenant_id="acme", limit=20)
            if found.memory.content == text
        )

    assert [kind_of(text) for text in turns] == ["message"] * len(turns)
    assert kind_of("Maria prefers morning meetings.") == "fact"
    assert kind_of("Update: Maria's meetings moved to Tuesdays.") == "fact"  # a label, no name
    assert kind_of("Sam: See you on Monday.") == "fact"
    # A hit lifts the turns around it in its conversation: the reply after the question that
    # follows it comes with the hit that lifted it.
    results = lg.retriever.retrieve(
        "Which class did Maria take with her sister?", tenant_id="acme", namespace=namespace
    )
    hit = results[0]
    assert hit.content == turns[3]
    reply = next(r for r in results if r.content == turns[5])
    assert reply.metadata["lifted_by"]["id"] == hit.metadata["id"]
    assert reply.metadata["lifted_by"]["offset"] == 2
