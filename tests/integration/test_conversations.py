"""Conversations in memory: threads and positions, neighbours, transcripts, per-call limits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.errors import ValidationError
from retrieval.memory.file_ingest import ingest, read_file
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.context import to_markdown
from retrieval.search.retriever import HybridRetriever
from tests.conftest import PgDatabase

AS_OF = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
MAY = datetime(2026, 5, 8, 13, 56, tzinfo=UTC)
SESSION_1 = [
    'Ana said, "Hi Bo! How was the weekend?"',
    'Bo said, "Great: I adopted a grey cat from the shelter on Saturday."',
    'Ana said, "What did you name it?"',
    'Bo said, "Pepper, after the colour of her fur."',
    'Ana said, "Lovely. See you Monday."',
]
SESSION_2 = [
    'Ana said, "Did the quarterly report go out?"',
    'Bo said, "Yes, on Friday, with the new revenue chart."',
]


def _conversation(store: MemoryStore, tenant: str = "acme") -> list[int]:
    items = [
        MemoryInput(
            text=body,
            tenant_id=tenant,
            kind="message",
            created_at=MAY + timedelta(minutes=position),
            thread_id="session-1",
            position=position,
        )
        for position, body in enumerate(SESSION_1)
    ]
    items += [
        MemoryInput(
            text=body,
            tenant_id=tenant,
            kind="message",
            created_at=MAY + timedelta(days=30, minutes=position),
            thread_id="session-2",
            position=position,
        )
        for position, body in enumerate(SESSION_2)
    ]
    return store.remember_many(items)


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    config = RetrievalConfig(record_access=False)
    with HybridRetriever.from_store(store, config=config, background_writes=False) as retriever:
        yield retriever


def test_a_hit_comes_with_the_turns_around_it_in_order(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    ids = _conversation(store)
    _conversation(store, tenant="globex")  # the same thread names in another tenant
    question = "Where did Bo adopt the grey cat?"
    response = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF, limit=1, neighbors=1)
    (hit,) = response.results
    assert hit.metadata["id"] == ids[1] and hit.metadata["position"] == 1
    assert hit.metadata["thread_id"] == "session-1"
    neighbors = hit.metadata["neighbors"]
    assert [n["id"] for n in neighbors] == [ids[0], ids[2]]  # positions 0 and 2, in order
    assert [n["position"] for n in neighbors] == [0, 2]
    assert neighbors[1]["created_at"] == (MAY + timedelta(minutes=2)).isoformat()
    wider = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF, limit=1, neighbors=20)
    # The whole session but the hit, and nothing of the other session or tenant.
    assert [n["id"] for n in wider[0].metadata["neighbors"]] == [ids[i] for i in (0, 2, 3, 4)]
    block = to_markdown(response)
    assert "2026-05-08 13:58 UTC" in block and "» Bo said" in block
    plain = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF)
    assert all("neighbors" not in result.metadata for result in plain)


def test_memories_without_a_thread_have_no_neighbors(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    before = AS_OF - timedelta(days=1)
    store.remember("Bo adopted a grey cat named Pepper.", tenant_id="acme", created_at=before)
    response = retriever.retrieve("Bo's cat", tenant_id="acme", as_of=AS_OF, neighbors=2)
    assert response.results and all("neighbors" not in r.metadata for r in response)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"thread_id": 7}, "thread_id: must be a string"),
        ({"thread_id": "  "}, "thread_id: is empty"),
        ({"thread_id": "s", "position": -1}, "position: must be a non-negative integer"),
        ({"thread_id": "s", "position": 1.5}, "position: must be a non-negative integer"),
        ({"thread_id": "s", "position": True}, "position: must be a non-negative integer"),
        ({"thread_id": "s", "position": 2**31}, "position: is over the largest position"),
        ({"position": 3}, "position: .* has no thread_id"),
    ],
)
def test_bad_threads_and_positions_write_nothing(
    database: PgDatabase, store: MemoryStore, fields: dict[str, object], message: str
) -> None:
    good = {"text": "fine", "tenant_id": "acme"}
    with pytest.raises(ValidationError, match=message) as raised:
        store.remember_many([good, {**good, **fields}])
    assert raised.value.item == 1
    with database.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM retrieval.memories")).scalar() == 0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"neighbors": -1}, "neighbors must be an integer from 0 to 20"),
        ({"neighbors": 21}, "neighbors must be an integer from 0 to 20"),
        ({"neighbors": "1"}, "neighbors must be an integer from 0 to 20"),
        ({"limit": 0}, "limit must be an integer from 1 to 1,000"),
        ({"limit": 2.5}, "limit must be an integer from 1 to 1,000"),
    ],
)
def test_bad_call_options_are_refused(
    retriever: HybridRetriever, call: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        retriever.retrieve("cat", tenant_id="acme", **call)  # type: ignore[arg-type]


def test_a_limit_per_call_widens_the_pool_and_the_hnsw_search(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    store.remember_many(
        {"text": f"Note {i}: the build of module {i} passed.", "tenant_id": "acme"}
        for i in range(80)
    )
    # ef_search at pgvector's default (the library's is wider), so that the pool widens it.
    config = replace(retriever.config, max_distance=None, min_final_score=0.0, ef_search=40)
    assert len(retriever.retrieve("build", tenant_id="acme", config=config).results) == 10
    many = retriever.retrieve("build", tenant_id="acme", config=config, limit=60)
    assert len(many.results) == 60 and many.diagnostics.sources["semantic"].candidates >= 60
    show = "SELECT current_setting('hnsw.ef_search')"
    assert retriever._connections.execute(show, {}) == [("60",)]
    # A semantic limit of 50 in the config needs no candidate_pool of its own.
    fifty = replace(config, semantic=replace(config.semantic, limit=50), total_limit=50)
    assert len(retriever.retrieve("build", tenant_id="acme", config=fifty).results) == 50


def test_a_transcript_is_stored_as_numbered_turns_of_its_sessions(
    database: PgDatabase, store: MemoryStore, tmp_path: Path
) -> None:
    transcript = tmp_path / "chat.jsonl"
    lines = [
        {"speaker": "Ana", "text": "Hello!", "time": "2026-05-08T13:56:00+00:00", "session": "s1"},
        {"speaker": "Bo", "text": "Hi Ana.", "time": "2026-05-08T13:57:00+00:00", "session": "s1"},
        {
            "speaker": "Ana",
            "text": "New day.",
            "time": "2026-05-09T09:00:00+00:00",
            "session": "s2",
        },
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(store, read_file(transcript, store, tenant_id="acme"))
    ingest(store, read_file(transcript, store, tenant_id="acme"))  # appended after the first
    with database.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT thread_id, position, content, kind, metadata->>'speaker' "
                "FROM retrieval.memories ORDER BY thread_id, position"
            )
        ).all()
    assert [(r.thread_id, r.position) for r in rows] == [
        ("s1", 0), ("s1", 1), ("s1", 2), ("s1", 3), ("s2", 0), ("s2", 1),
    ]  # fmt: skip
    assert rows[0].content == "Ana: Hello!" and rows[1][4] == "Bo"
    assert {r.kind for r in rows} == {"message"}
    untitled = tmp_path / "standup.jsonl"
    untitled.write_text(json.dumps({"speaker": "Cy", "text": "Blocked on CI."}) + "\n")
    ingest(store, read_file(untitled, store, tenant_id="acme"))
    memories = store.get_memories(list(range(1, 20)), tenant_id="acme")
    assert ("standup.jsonl", 0) in {(m.thread_id, m.position) for m in memories}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"text": "no speaker", "type": "message"}, "line 2: speaker: a message needs a non-empty"),
        ({"speaker": "Ana"}, "line 2: text: a message needs a non-empty text"),
        ({"speaker": "Ana", "text": " "}, "line 2: text: a message needs a non-empty text"),
        ({"speaker": "Ana", "text": "x", "mood": "happy"}, "line 2: unknown field.*'mood'"),
        ({"speaker": "Ana", "text": "x", "position": -2}, "line 2: position: must be a non-neg"),
        ({"speaker": "Ana", "text": "x", "time": "yesterday"}, "line 2: time: 'yesterday'"),
    ],
)
def test_a_bad_transcript_line_is_named_and_nothing_is_written(
    database: PgDatabase, store: MemoryStore, tmp_path: Path, line: dict[str, object], message: str
) -> None:
    transcript = tmp_path / "chat.jsonl"
    first = {"speaker": "Bo", "text": "fine", "time": "2026-05-08T13:56:00+00:00"}
    transcript.write_text(json.dumps(first) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(ValidationError, match=message):
        read_file(transcript, store, tenant_id="acme")
    with database.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM retrieval.memories")).scalar() == 0


def test_documents_and_chunks_carry_their_dates_and_metadata(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    documents = DocumentStore(store)
    old = datetime(2024, 11, 26, tzinfo=UTC)
    documents.add(
        DocumentInput(
            tenant_id="acme",
            doc_id="handbook.md",
            metadata={"team": "platform"},
            created_at=old,
            chunks=[
                ChunkInput("Deploys happen on Tuesdays after the review.", metadata={"page": 1}),
                ChunkInput(
                    "Deploys moved to Thursdays in 2026.",
                    created_at=AS_OF - timedelta(days=7),
                    metadata={"page": 2},
                ),
            ],
        )
    )
    response = retriever.retrieve("When do deploys happen?", tenant_id="acme", as_of=AS_OF)
    chunks = {r.content: r for r in response if r.source == "documents"}
    tuesday = chunks["Deploys happen on Tuesdays after the review."]
    thursday = chunks["Deploys moved to Thursdays in 2026."]
    assert tuesday.metadata["created_at"].startswith("2024-11-26")
    assert tuesday.metadata["metadata"] == {"team": "platform", "page": 1}
    assert tuesday.recency_score == pytest.approx(0.25, abs=0.01)  # two half-lives of a year
    assert thursday.recency_score > 0.98
    with pytest.raises(ValidationError, match=r"chunk 0: created_at: .* has no time zone"):
        documents.add(
            DocumentInput(
                tenant_id="acme",
                doc_id="x",
                chunks=[ChunkInput("t", created_at=datetime(2026, 1, 1))],
            )
        )
    with pytest.raises(ValidationError, match="chunk 0: metadata of document 'x' is not JSON"):
        documents.add(
            DocumentInput(
                tenant_id="acme", doc_id="x", chunks=[ChunkInput("t", metadata={"v": float("nan")})]
            )
        )
