"""Mem0's interface: its quickstart and its documented search and filter examples, run on the
library as a Mem0 user writes them, on a real PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from retrieval.errors import ValidationError
from retrieval.integrations.mem0 import AsyncMemory, Memory, mem0_filter
from retrieval.memory.store import MemoryStore

MOVIES = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {
        "role": "assistant",
        "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in "
        "the future.",
    },
]


@pytest.fixture
def memory(store: MemoryStore) -> Any:
    with Memory(store, tenant_id="acme") as facade:
        yield facade


def test_the_quickstart_runs(memory: Memory) -> None:
    added = memory.add(MOVIES, user_id="alice", metadata={"category": "movies"})
    assert [r["event"] for r in added["results"]] == ["ADD"] * 4
    assert [r["role"] for r in added["results"]] == ["user", "assistant", "user", "assistant"]

    related = memory.search("Should I watch a thriller?", filters={"user_id": "alice"})
    assert related["results"], "a search within the user's memories finds them"
    first = related["results"][0]
    assert {"id", "memory", "hash", "score", "created_at", "updated_at", "user_id"} <= set(first)
    assert first["user_id"] == "alice"
    assert any("thriller" in r["memory"] for r in related["results"][:2])
    assert first["metadata"] == {"category": "movies"}
    assert 0.0 <= first["score"] <= 1.0

    everything = memory.get_all(filters={"user_id": "alice"})["results"]
    assert sorted(r["memory"] for r in everything) == sorted(m["content"] for m in MOVIES)

    memory_id = added["results"][2]["id"]
    assert memory.get(memory_id)["memory"] == MOVIES[2]["content"]
    assert memory.update(memory_id, data="I love sci-fi movies, and thrillers now too.") == {
        "message": "Memory updated successfully!"
    }
    updated = memory.get(memory_id)
    assert updated["memory"] == "I love sci-fi movies, and thrillers now too."
    assert updated["user_id"] == "alice" and updated["role"] == "user"
    history = memory.history(memory_id)
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert history[1]["old_memory"] == MOVIES[2]["content"]
    assert history[1]["new_memory"] == updated["memory"]

    assert memory.delete(memory_id) == {"message": "Memory deleted successfully!"}
    assert memory.get(memory_id) is None and memory.history(memory_id) == []
    memory.delete_all(user_id="alice")
    assert memory.get_all(filters={"user_id": "alice"})["results"] == []


def test_scopes_narrow_every_read_and_erase(memory: Memory, store: MemoryStore) -> None:
    memory.add("I'm vegetarian and allergic to nuts.", user_id="alice")
    memory.add("I eat everything but mushrooms.", user_id="bob")
    memory.add("Alice's dinner agent books tables for two.", user_id="alice", agent_id="dinner")
    found = memory.search("What does she eat?", filters={"user_id": "alice"})["results"]
    assert found and all(r["user_id"] == "alice" for r in found)
    assert [r["memory"] for r in memory.search("food", user_id="bob")["results"]] == [
        "I eat everything but mushrooms."
    ]  # Mem0 1's arguments as well as Mem0 2's filters
    by_agent = memory.get_all(filters={"agent_id": "dinner"})["results"]
    assert [r["memory"] for r in by_agent] == ["Alice's dinner agent books tables for two."]
    memory.delete_all(user_id="bob")
    assert memory.get_all(filters={"user_id": "bob"})["results"] == []
    assert len(memory.get_all(filters={"user_id": "alice"})["results"]) == 2
    # Another tenant is another memory: nothing of acme's is seen.
    with Memory(store, tenant_id="globex") as other:
        assert other.get_all(filters={"user_id": "alice"})["results"] == []
        assert other.search("nuts", filters={"user_id": "alice"})["results"] == []
    memory.reset()
    assert memory.get_all(filters={"user_id": "alice"})["results"] == []


def test_filters_as_mem0_documents_them(memory: Memory) -> None:
    memory.add(
        "Pasta with pesto on Friday.", user_id="alice", metadata={"category": "food", "rating": 5}
    )
    memory.add("Sushi once a month.", user_id="alice", metadata={"category": "food", "rating": 3})
    memory.add(
        "Watches sci-fi films.", user_id="alice", metadata={"category": "movies", "rating": 4}
    )
    memory.add("Runs on Sundays.", user_id="alice", metadata={"category": "sport"})

    def found(filters: dict[str, Any]) -> list[str]:
        results = memory.get_all(filters={"user_id": "alice", **filters})["results"]
        return sorted(r["memory"] for r in results)

    assert found({"category": "food"}) == ["Pasta with pesto on Friday.", "Sushi once a month."]
    assert found({"rating": {"gte": 4}}) == ["Pasta with pesto on Friday.", "Watches sci-fi films."]
    assert found({"category": {"in": ["movies", "sport"]}}) == [
        "Runs on Sundays.",
        "Watches sci-fi films.",
    ]
    assert found({"category": {"ne": "food"}}) == ["Runs on Sundays.", "Watches sci-fi films."]
    assert found({"rating": "*"}) == [
        "Pasta with pesto on Friday.",
        "Sushi once a month.",
        "Watches sci-fi films.",
    ]
    assert found({"category": {"icontains": "MOV"}}) == ["Watches sci-fi films."]
    assert found({"OR": [{"category": "sport"}, {"rating": {"lt": 4}}]}) == [
        "Runs on Sundays.",
        "Sushi once a month.",
    ]
    assert found({"AND": [{"category": "food"}, {"rating": {"gt": 4}}]}) == [
        "Pasta with pesto on Friday."
    ]
    assert found({"NOT": [{"category": "food"}]}) == ["Runs on Sundays.", "Watches sci-fi films."]
    searched = memory.search(
        "what does alice eat", filters={"user_id": "alice", "category": "food"}
    )
    assert {r["memory"] for r in searched["results"]} <= {
        "Pasta with pesto on Friday.",
        "Sushi once a month.",
    }
    strict = memory.search("Runs on Sundays.", filters={"user_id": "alice"}, threshold=0.9)
    assert [r["memory"] for r in strict["results"]] == ["Runs on Sundays."]


def test_mem0_filters_become_the_librarys() -> None:
    assert mem0_filter({"user_id": "u1", "rating": {"gte": 3}}) == {
        "user_id": "u1",
        "rating": {"$gte": 3},
    }
    assert mem0_filter({"OR": [{"a": 1}, {"b": {"in": [1, 2]}}]}) == {
        "$or": [{"a": 1}, {"b": {"$in": [1, 2]}}]
    }
    assert mem0_filter({"NOT": [{"a": 1}, {"b": 2}]}) == {"$not": {"$or": [{"a": 1}, {"b": 2}]}}
    assert mem0_filter({"k": {"$eq": 1}}) == {"k": {"$eq": 1}}  # the library's own pass


def test_careless_calls_are_refused_in_words(memory: Memory) -> None:
    with pytest.raises(ValidationError, match="needs a scope"):
        memory.add("no one's memory")
    with pytest.raises(ValidationError, match="a dict with a 'role'"):
        memory.add([{"text": "hi"}], user_id="alice")
    with pytest.raises(ValidationError, match="scopes as arguments"):
        memory.add("x", user_id="alice", metadata={"user_id": "bob"})
    with pytest.raises(ValidationError, match="not found"):
        memory.delete("no-such-id")
    with pytest.raises(ValidationError, match="not found"):
        memory.update("no-such-id", data="x")
    with pytest.raises(ValidationError, match="OR takes a non-empty list"):
        memory.search("x", filters={"user_id": "alice", "OR": []})
    with pytest.raises(ValidationError, match="top_k must be"):
        memory.search("x", filters={"user_id": "alice"}, top_k=0)
    with pytest.raises(ValidationError, match=r"threshold must be a number in \[0, 1\].*1\.5"):
        memory.search("x", filters={"user_id": "alice"}, threshold=1.5)
    with pytest.raises(ValidationError, match="given twice"):
        memory.search("x", user_id="alice", filters={"user_id": "bob"})
    with pytest.raises(ValidationError, match="delete_all needs a scope"):
        memory.delete_all()
    with pytest.raises(ValidationError, match="created_at compares with a date or a time"):
        memory.search("x", filters={"user_id": "alice", "created_at": {"gte": "last week"}})
    with pytest.raises(ValidationError, match="memory's own times are kept"):
        memory.add("x", user_id="alice", metadata={"created_at": "2024-01-01"})
    assert memory.get_all(filters={"user_id": "alice"})["results"] == []  # nothing was written


def test_a_conversation_imported_with_mem0s_timestamps_keeps_its_times(memory: Memory) -> None:
    # Mem0's platform takes when a memory was said as Unix seconds (``timestamp``): the
    # memories keep those times, and a question naming one finds what was said then.
    may = datetime(2023, 5, 8, 14, tzinfo=UTC)
    august = datetime(2023, 8, 20, 10, tzinfo=UTC)
    alps = memory.add(
        [{"role": "user", "content": "I went hiking in the Alps with my brother."}],
        user_id="alice",
        timestamp=int(may.timestamp()),
    )["results"][0]["id"]
    memory.add(
        [{"role": "user", "content": "I went hiking in the Dolomites with my sister."}],
        user_id="alice",
        timestamp=august.timestamp(),  # a float is Unix seconds too
    )
    assert memory.get(alps)["created_at"] == may.isoformat()
    found = memory.search("Where did I go hiking in May 2023?", filters={"user_id": "alice"})
    assert found["results"][0]["id"] == alps
    assert found["results"][0]["created_at"] == may.isoformat()


def test_mem0s_filters_on_a_memorys_times(memory: Memory) -> None:
    # Mem0's filters on created_at and updated_at (a date is its midnight, a time in any zone),
    # in search and get_all; an update keeps when the memory was added and says when it changed.
    def stamp(*day: int) -> int:
        return int(datetime(*day, tzinfo=UTC).timestamp())

    alps = memory.add("I went hiking in the Alps.", user_id="alice", timestamp=stamp(2023, 5, 8))
    memory.add("I went hiking in the Dolomites.", user_id="alice", timestamp=stamp(2023, 8, 20))
    memory.add("I went hiking in the Tatras.", user_id="alice")  # now

    def found(filters: dict[str, Any]) -> tuple[list[str], list[str]]:
        scoped = {"AND": [{"user_id": "alice"}, filters]}
        searched = memory.search("hiking", filters=scoped)["results"]
        listed = memory.get_all(filters=scoped)["results"]
        return sorted(r["memory"][21:-1] for r in searched), sorted(
            r["memory"][21:-1] for r in listed
        )

    assert found({"created_at": {"gte": "2023-06-01"}}) == (["Dolomites", "Tatras"],) * 2
    assert found({"created_at": {"lt": "2023-06-01T02:00:00+02:00"}}) == (["Alps"],) * 2
    assert (
        found({"created_at": {"gte": "2023-05-08", "lte": "2023-08-20"}})
        == (["Alps", "Dolomites"],) * 2
    )
    memory_id = alps["results"][0]["id"]
    memory.update(memory_id, text="I went hiking in the Alps, with Tom.")
    updated = memory.get(memory_id)
    assert updated["created_at"] == "2023-05-08T00:00:00+00:00"
    assert updated["updated_at"] > updated["created_at"] and "metadata" not in updated
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    assert found({"updated_at": {"gte": yesterday}})[1] == ["Alps, with Tom", "Tatras"]


@pytest.mark.parametrize(
    ("timestamp", "said"),
    [
        ("1683554400", "must be Unix seconds"),
        (True, "must be Unix seconds"),
        (datetime(2023, 5, 8, tzinfo=UTC), r"int\(value.timestamp\(\)\)"),
        (-1, "at or after 1970"),
        (float("nan"), "at or after 1970"),
        (1683554400000, "not milliseconds"),
    ],
)
def test_a_timestamp_that_is_not_unix_seconds_is_refused_in_words(
    memory: Memory, timestamp: Any, said: str
) -> None:
    with pytest.raises(ValidationError, match=said):
        memory.add("I went hiking in the Alps.", user_id="alice", timestamp=timestamp)
    assert memory.get_all(filters={"user_id": "alice"})["results"] == []  # nothing was written


def test_async_memory(store: MemoryStore) -> None:
    async def run() -> list[str]:
        memory = AsyncMemory(store, tenant_id="acme")
        try:
            await memory.add(MOVIES[:1], user_id="alice")
            found = await memory.search("movie tonight", filters={"user_id": "alice"})
            return [r["memory"] for r in found["results"]]
        finally:
            memory.close()

    assert asyncio.run(run()) == [MOVIES[0]["content"]]
