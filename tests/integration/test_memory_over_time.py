"""A memory over time on the real PostgreSQL: copies collapse, corrections retire, memories
expire, and the statistics count the live rows."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from retrieval.errors import ValidationError
from retrieval.memory.config import DEFAULT_SIMILAR_THRESHOLD, WriteConfig
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever
from tests.conftest import CountingEmbedder, PgDatabase

WHEN = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)


def _rows(database: PgDatabase, tenant: str = "acme") -> int:
    with database.engine.connect() as connection:
        return int(
            connection.execute(
                text("SELECT count(*) FROM retrieval.memories WHERE tenant_id = :t"), {"t": tenant}
            ).scalar_one()
        )


def _corpus(database: PgDatabase, tenant: str = "acme") -> tuple[int, int] | None:
    with database.engine.connect() as connection:
        row = connection.execute(
            text("SELECT memories, total_terms FROM retrieval.memory_corpus WHERE tenant_id = :t"),
            {"t": tenant},
        ).one_or_none()
    return None if row is None else (int(row[0]), int(row[1]))


def test_a_copy_returns_the_stored_id_and_refreshes_it(
    store: MemoryStore, database: PgDatabase
) -> None:
    first = store.remember(
        "Deploys need a green CI run.", tenant_id="acme", importance=0.4, created_at=WHEN
    )
    again = store.remember(
        "  Deploys need a green\n CI run. ",
        tenant_id="acme",
        importance=0.9,
        created_at=WHEN + timedelta(days=2),
    )
    assert again == first
    assert _rows(database) == 1
    memory = store.get_memory(first, tenant_id="acme")
    assert memory is not None
    assert memory.seen_count == 2
    assert memory.last_seen_at == WHEN + timedelta(days=2)
    assert memory.importance == 0.9
    assert memory.content == "Deploys need a green CI run."  # the first telling's text
    # another kind, another tenant, another case: other memories
    assert (
        store.remember("Deploys need a green CI run.", tenant_id="acme", kind="directive") != first
    )
    assert store.remember("Deploys need a green CI run.", tenant_id="globex") != first
    assert store.remember("deploys need a green CI run.", tenant_id="acme") != first


def test_a_batch_counts_its_duplicates(store: MemoryStore, database: PgDatabase) -> None:
    stored = store.remember("Backups run nightly.", tenant_id="acme")
    ids = store.remember_many(
        [
            {"text": "Backups run nightly.", "tenant_id": "acme"},
            {"text": "Logs are kept 30 days.", "tenant_id": "acme", "entities": ["logs"]},
            {"text": "Logs are kept 30 days.", "tenant_id": "acme", "importance": 0.7},
            {"text": "Alerts go to #ops.", "tenant_id": "acme"},
        ]
    )
    assert ids[0] == stored and ids[1] == ids[2] and len(set(ids)) == 3
    assert ids.duplicates == 2 and ids.new == 2
    assert _rows(database) == 3
    logs = store.get_memory(ids[1], tenant_id="acme")
    assert logs is not None and logs.seen_count == 2 and logs.importance == 0.7
    assert logs.entities == ("logs",)


def test_a_turn_repeated_elsewhere_in_its_thread_is_a_new_turn(
    store: MemoryStore, database: PgDatabase
) -> None:
    turns = [
        MemoryInput("ok", tenant_id="acme", kind="message", thread_id="t1", position=0),
        MemoryInput("ok", tenant_id="acme", kind="message", thread_id="t1", position=3),
        MemoryInput("ok", tenant_id="acme", kind="message", thread_id="t2", position=0),
    ]
    ids = store.remember_many(turns)
    assert len(set(ids)) == 3 and ids.duplicates == 0
    again = store.remember_many(turns[:1])  # the same turn at the same place: a copy
    assert again == ids[:1] and again.duplicates == 1
    assert _rows(database) == 3


def test_collapsing_can_be_turned_off(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    store = MemoryStore(
        database.engine, embedder=counting_embedder, config=WriteConfig(collapse_duplicates=False)
    )
    first = store.remember("Backups run nightly.", tenant_id="acme")
    second = store.remember("Backups run nightly.", tenant_id="acme")
    assert first != second and _rows(database) == 2
    # a collapsing store then refreshes neither distinct copy: it stores the live key once
    collapsing = MemoryStore(database.engine, embedder=counting_embedder)
    third = collapsing.remember("Backups run nightly.", tenant_id="acme")
    assert third not in (first, second)
    assert collapsing.remember("Backups run nightly.", tenant_id="acme") == third


def test_concurrent_writers_of_one_text_store_one_row(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    stores = [MemoryStore(database.engine, embedder=counting_embedder) for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    ids: list[int] = []
    errors: list[BaseException] = []

    def write(store: MemoryStore) -> None:
        try:
            barrier.wait()
            for _ in range(5):
                ids.extend(
                    store.remember_many(
                        [{"text": f"Shared fact {n}.", "tenant_id": "acme"} for n in range(10)]
                    )
                )
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=write, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(set(ids)) == 10 and _rows(database) == 10
    with database.engine.connect() as connection:
        seen = connection.execute(text("SELECT sum(seen_count) FROM retrieval.memories")).scalar()
    assert seen == 4 * 5 * 10


def test_a_correction_retires_what_it_supersedes(store: MemoryStore, database: PgDatabase) -> None:
    old = store.remember("Staging runs PostgreSQL 17.", tenant_id="acme", created_at=WHEN)
    new = store.remember(
        "Staging now runs PostgreSQL 18.",
        tenant_id="acme",
        supersedes=old,
        created_at=WHEN + timedelta(days=3),
    )
    retired = store.get_memory(old, tenant_id="acme")
    assert retired is not None
    assert retired.retired_at == WHEN + timedelta(days=3) and retired.superseded_by == new
    history = store.history(new, tenant_id="acme")
    assert [version.memory.id for version in history] == [old, new]
    assert history[0].valid_from == WHEN and history[0].valid_until == WHEN + timedelta(days=3)
    assert history[1].valid_until is None
    assert [v.memory.id for v in store.history(old, tenant_id="acme")] == [old, new]
    # the retired text may be told again: it is a new live memory, not the retired one
    back = store.remember("Staging runs PostgreSQL 17.", tenant_id="acme")
    assert back not in (old, new)


@pytest.mark.parametrize(
    ("supersedes", "message"),
    [
        (999_999, "tenant 'acme' has no memory 999999"),
        ("other tenant", "tenant 'acme' has no memory"),
        ("retired", "was already superseded by memory"),
        ("self", "cannot supersede itself"),
        ("later", "after the memory that would supersede it"),
    ],
)
def test_a_wrong_correction_writes_nothing(
    store: MemoryStore, database: PgDatabase, supersedes: object, message: str
) -> None:
    old = store.remember("Staging runs PostgreSQL 17.", tenant_id="acme", created_at=WHEN)
    other = store.remember("Globex staging runs 16.", tenant_id="globex")
    newer = store.remember(
        "Staging runs PostgreSQL 18.",
        tenant_id="acme",
        supersedes=old,
        created_at=WHEN + timedelta(days=1),
    )
    target = {"other tenant": other, "retired": old, "self": newer, "later": newer}.get(
        str(supersedes), supersedes
    )
    text_of = {"self": "Staging runs PostgreSQL 18."}.get(str(supersedes), "Staging runs 19.")
    before = _rows(database)
    with pytest.raises(ValidationError, match=message):
        store.remember(text_of, tenant_id="acme", supersedes=target, created_at=WHEN)
    assert _rows(database) == before
    memory = store.get_memory(newer, tenant_id="acme")
    assert memory is not None and memory.retired_at is None and memory.seen_count == 1


def test_retired_and_statistics(store: MemoryStore, database: PgDatabase) -> None:
    old = store.remember("Staging runs PostgreSQL 17.", tenant_id="acme", created_at=WHEN)
    before = _corpus(database)
    assert before is not None and before[0] == 1
    store.remember("Staging runs PostgreSQL 18 now.", tenant_id="acme", supersedes=[old])
    after = _corpus(database)
    assert after is not None and after[0] == 1  # the retired memory's words left the statistics


def test_expiry_by_argument_and_by_kind(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    store = MemoryStore(
        database.engine, embedder=counting_embedder, config=WriteConfig(kind_lifetimes={"event": 2})
    )
    event = store.remember(
        "The office was closed.", tenant_id="acme", kind="event", created_at=WHEN
    )
    fact = store.remember("The office is in Lyon.", tenant_id="acme", created_at=WHEN)
    until = WHEN + timedelta(hours=5)
    given = store.remember("Door code 1234.", tenant_id="acme", expires_at=until, created_at=WHEN)
    memories = {m.id: m for m in store.get_memories([event, fact, given], tenant_id="acme")}
    assert memories[event].expires_at == WHEN + timedelta(days=2)
    assert memories[fact].expires_at is None
    assert memories[given].expires_at == until
    with pytest.raises(ValidationError, match=r"expires_at: .* is not after created_at"):
        store.remember("Too late.", tenant_id="acme", created_at=WHEN, expires_at=WHEN)


def test_an_expired_copy_is_stored_anew(store: MemoryStore, database: PgDatabase) -> None:
    old = store.remember(
        "Door code 1234.", tenant_id="acme", created_at=WHEN, expires_at=WHEN + timedelta(days=1)
    )
    new = store.remember("Door code 1234.", tenant_id="acme")
    assert new != old
    retired = store.get_memory(old, tenant_id="acme")
    assert retired is not None and retired.retired_at == WHEN + timedelta(days=1)


def _retrieved(retriever: HybridRetriever, query: str, **options: object) -> list[int]:
    response = retriever.retrieve(query, tenant_id="acme", **options)  # type: ignore[arg-type]
    return [r.metadata["id"] for r in response if r.source == "semantic"]


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        yield retriever


def test_retrieval_sees_the_live_memory_and_the_past_as_it_was(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    monday = WHEN
    old = store.remember("Staging runs PostgreSQL 17.", tenant_id="acme", created_at=monday)
    code = store.remember(
        "The staging door code is 4411.",
        tenant_id="acme",
        created_at=monday,
        expires_at=monday + timedelta(days=2),
    )
    new = store.remember(
        "Staging runs PostgreSQL 18.",
        tenant_id="acme",
        supersedes=old,
        created_at=monday + timedelta(days=3),
    )
    later = store.remember(
        "Staging has 64 GB of memory.", tenant_id="acme", created_at=monday + timedelta(days=4)
    )
    now = _retrieved(retriever, "What PostgreSQL version does staging run?")
    assert new in now and old not in now and code not in now
    tuesday = _retrieved(
        retriever, "What PostgreSQL version does staging run?", as_of=monday + timedelta(days=1)
    )
    assert old in tuesday and new not in tuesday and later not in tuesday
    assert code in _retrieved(retriever, "staging door code", as_of=monday + timedelta(days=1))
    assert code not in _retrieved(retriever, "staging door code", as_of=monday + timedelta(days=2))

    # the timeline: live memories now; as it stood then; or everything
    def events(**options: object) -> set[int]:
        return {e.id for e in retriever.timeline("acme", **options) if e.item == "memory"}  # type: ignore[arg-type]

    assert events() == {new, later}
    assert events(as_of=monday + timedelta(days=1)) == {old, code}
    assert events(include_retired=True) == {old, code, new, later}
    marked = {e.id: e.details for e in retriever.timeline("acme", include_retired=True)}
    assert marked[old]["superseded_by"] == new and marked[old]["retired_at"] is not None


def test_decisions_answer_as_of_by_their_time(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    early = store.record_decision(
        tenant_id="acme",
        task_id="t",
        action_type="deploy",
        content="Deploy the billing service",
        status="done",
        created_at=WHEN,
    )
    late = store.record_decision(
        tenant_id="acme",
        task_id="t",
        action_type="deploy",
        content="Deploy the billing service again",
        status="done",
        created_at=WHEN + timedelta(days=5),
    )

    def found(**options: object) -> set[int]:
        response = retriever.retrieve("deploy billing service", tenant_id="acme", **options)  # type: ignore[arg-type]
        return {r.metadata["id"] for r in response if r.metadata.get("item") == "decision"}

    assert {early, late} <= found()
    assert found(as_of=WHEN + timedelta(days=1)) == {early}


def test_forget_expired_removes_them_in_batches(
    store: MemoryStore, database: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("retrieval.memory.store.FORGET_BATCH", 2)
    gone = store.remember_many(
        [
            {
                "text": f"Temporary note {n}.",
                "tenant_id": "acme",
                "created_at": WHEN,
                "expires_at": WHEN + timedelta(hours=1),
            }
            for n in range(5)
        ]
    )
    kept = store.remember("A lasting fact.", tenant_id="acme", created_at=WHEN)
    later = store.remember(
        "Not yet.", tenant_id="acme", expires_at=datetime.now(UTC) + timedelta(days=1)
    )
    forgotten = store.forget(tenant_id="acme", expired=True)
    assert sorted(forgotten.memory_ids) == sorted(gone)
    assert forgotten.cache_entries == 5
    assert {m.id for m in store.get_memories([*gone, kept, later], tenant_id="acme")} == {
        kept,
        later,
    }
    assert _corpus(database) == _recounted(database)


def _recounted(database: PgDatabase) -> tuple[int, int]:
    # The statistics counted from scratch over the live memories.
    with database.engine.connect() as connection:
        row = connection.execute(
            text(
                "SELECT count(*), coalesce(sum(length(search_vector)), 0) FROM retrieval.memories "
                "WHERE tenant_id = 'acme' AND retired_at IS NULL AND search_vector <> ''"
            )
        ).one()
    return int(row[0]), int(row[1])


def test_statistics_stay_exact_through_corrections_and_forgetting(
    store: MemoryStore, database: PgDatabase
) -> None:
    ids = store.remember_many(
        [
            {
                "text": f"Service {n} listens on port {8000 + n}.",
                "tenant_id": "acme",
                "created_at": WHEN,
            }
            for n in range(40)
        ]
    )
    for n in range(0, 40, 3):
        store.remember(
            f"Service {n} now listens on port {9000 + n}.", tenant_id="acme", supersedes=ids[n]
        )
    store.forget(tenant_id="acme", memory_ids=ids[1:10])
    assert _corpus(database) == _recounted(database)
    with database.engine.connect() as connection:
        stats = dict(
            connection.execute(
                text(
                    "SELECT term, document_frequency FROM retrieval.memory_term_stats "
                    "WHERE tenant_id = 'acme'"
                )
            ).all()
        )
        expected = dict(
            connection.execute(
                text(
                    "SELECT u.lexeme, count(*) FROM retrieval.memories AS r, "
                    "unnest(tsvector_to_array(r.search_vector)) AS u(lexeme) "
                    "WHERE r.tenant_id = 'acme' AND r.retired_at IS NULL "
                    "AND (hashint8(r.id) & 7) = 0 GROUP BY u.lexeme"
                )
            ).all()
        )
    assert stats == expected


def test_similar_shows_an_update_written_as_people_write_them(store: MemoryStore) -> None:
    standup = store.remember("The team's standup is at 9:30 in room Orion.", tenant_id="acme")
    store.remember("The sprint review is on Fridays.", tenant_id="acme")
    near = store.similar("Standup moved to 10:00, room Vega.", tenant_id="acme")
    assert [one.memory.id for one in near] == [standup]
    assert 0.4 < near[0].same_fact < 0.8  # shown, with how likely it is the same fact
    below = store.similar("Standup moved to 10:00, room Vega.", tenant_id="acme", threshold=0.0)
    assert all(one.same_fact < near[0].same_fact for one in below[1:])


def test_similar_shows_live_near_duplicates_with_their_similarity(store: MemoryStore) -> None:
    old = store.remember("Staging runs PostgreSQL 17.", tenant_id="acme")
    pet = store.remember("Alice adopted a cat named Pepper.", tenant_id="acme")
    store.remember("Staging runs PostgreSQL 17.", tenant_id="globex")
    near = store.similar("The staging database is on PostgreSQL 18.", tenant_id="acme")
    assert [one.memory.id for one in near] == [old]
    assert DEFAULT_SIMILAR_THRESHOLD <= near[0].similarity <= 1.0
    assert 0.5 < near[0].same_fact <= 1.0
    assert store.similar("Staging runs PostgreSQL 17.", tenant_id="acme", kind="event") == []
    assert store.similar("Staging runs PostgreSQL 17.", tenant_id="acme", exclude=[old]) == []
    cat = store.similar("Pepper is Alice's cat.", tenant_id="acme", threshold=0.0)
    assert cat[0].memory.id == pet
    assert [one.similarity for one in cat] == sorted((one.similarity for one in cat), reverse=True)
    new = store.remember("Staging runs PostgreSQL 18.", tenant_id="acme", supersedes=old)
    assert [
        one.memory.id
        for one in store.similar("staging PostgreSQL", tenant_id="acme", threshold=0.3)
    ] == [new]
    for bad, message in [({"limit": 0}, "limit"), ({"threshold": 1.5}, "threshold")]:
        with pytest.raises(ValidationError, match=message):
            store.similar("x", tenant_id="acme", **bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text_",
    [
        "Staging runs PostgreSQL 18.",
        "  Staging\truns\n\nPostgreSQL 18.  ",
        "Cafe\u0301 au lait",  # NFD: the same key as its NFC form
        "Caf\u00e9 au lait",
        "a\u00a0b\u2003c\u3000d\u2028e\u0085f\x1cg\u200ah",  # every kind of space
        "no\u200bbreak",  # a zero-width space is not whitespace
        "\u2000leading and trailing\u2001",
        "emoji 🐘 and ǅ digraph",
    ],
)
def test_the_text_key_is_the_databases(database: PgDatabase, text_: str) -> None:
    from retrieval.memory.text_key import text_key

    with database.engine.connect() as connection:
        stored = connection.execute(
            text("SELECT retrieval.text_key(:t)"), {"t": text_}
        ).scalar_one()
    assert bytes(stored) == text_key(text_)


def test_every_python_whitespace_is_the_databases() -> None:
    import re
    import sys

    migration = __import__(
        "retrieval.migrations.versions.0016_memory_over_time", fromlist=["WHITESPACE"]
    )
    pattern = migration.WHITESPACE  # PostgreSQL's \\uXXXX escapes are Python's too
    spaces = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert {c for c in spaces if re.fullmatch(pattern, c)} == spaces
    assert not re.fullmatch(pattern, "\u200b") and not re.fullmatch(pattern, "x")


def test_the_readmes_lifecycle_runs_as_written(
    store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    section = readme.split("## A memory that stays true\n", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    seventeen, eighteen = "Staging runs PostgreSQL 17.", "Staging now runs PostgreSQL 18."
    for run in (1, 2):  # as a reader runs it again
        exec(compile(example, "README.md", "exec"), {"store": store})
        printed = capsys.readouterr().out.strip().splitlines()
        assert any(seventeen in line for line in printed[:-1])  # similar() shows the 17
        assert printed[-1] == str([seventeen] * run + [eighteen])


def test_copies_with_their_vectors_collapse_too(store: MemoryStore, database: PgDatabase) -> None:
    import numpy as np

    vectors = np.random.default_rng(7).standard_normal((3, 384)).astype(np.float32)

    def item(text_: str, n: int) -> dict[str, object]:
        return {"text": text_, "tenant_id": "acme", "embedding": vectors[n]}

    first = store.remember_many([item("alpha", 0), item("beta", 1)])  # copied in: no copy
    assert first.duplicates == 0 and _rows(database) == 2
    again = store.remember_many([item("gamma", 2), item("alpha", 0), item("gamma", 2)])
    assert again[1] == first[0] and again[0] == again[2] and again.duplicates == 2
    assert _rows(database) == 3
    expired = store.remember_many(
        [{**item("delta", 2), "created_at": WHEN, "expires_at": WHEN + timedelta(hours=1)}]
    )
    renewed = store.remember_many([item("delta", 2)])  # its copy expired: a new memory
    assert renewed[0] != expired[0] and renewed.duplicates == 0


def test_a_copy_whose_vector_the_cache_holds_collapses(
    store: MemoryStore, database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    first = store.remember_many([{"text": "Cached fact one.", "tenant_id": "acme"},
                                 {"text": "Cached fact two.", "tenant_id": "acme"}])  # fmt: skip
    other = MemoryStore(database.engine, embedder=counting_embedder)  # its LRU is empty
    again = other.remember_many([{"text": "Cached fact two.", "tenant_id": "acme"},
                                 {"text": "Cached fact three.", "tenant_id": "acme"}])  # fmt: skip
    assert again[0] == first[1] and again.duplicates == 1 and _rows(database) == 3
    fresh = MemoryStore(database.engine, embedder=counting_embedder)
    new = fresh.remember_many([{"text": "Cached fact one.", "tenant_id": "globex"}])
    assert new.duplicates == 0 and new[0] not in first  # another tenant: a memory of its own
