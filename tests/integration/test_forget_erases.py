"""Forgetting erases, checked the way a privacy audit would: after ``forget`` (by id, by task,
of a document, of the expired, of everything), every table of the schema is scanned for the
forgotten text, words only it held, its hashes and its vector."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import text

from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.embedding.cache import cache_key
from retrieval.memory.store import MemoryStore
from retrieval.memory.text_key import text_key
from retrieval.search.retriever import HybridRetriever
from tests.conftest import PgDatabase, as_stored
from tests.turn_vectors import close, mixed, stored_vectors

SECRET = "Quokka xylophonist Bartholomew keeps the vault combination zebrawood 7731."
WORDS = ("quokka", "xylophonist", "bartholomew", "zebrawood")
WHEN = datetime(2026, 11, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
AFTER = "Noted, I will not write it down."
# The secret told again in other whitespace: copies of it, each embedded once as told.
TOLD_OTHERWISE = (f"  {SECRET}", SECRET.replace(" ", "  "), f"{SECRET}\n")


def _fill(store: MemoryStore) -> None:
    # Other memories of the tenant, sharing common words with the secret, and another tenant's.
    store.remember_many(
        [
            {"text": f"The vault holds record {n} of the archive.", "tenant_id": "acme"}
            for n in range(12)
        ]
    )
    store.remember("Another tenant's note about a vault.", tenant_id="globex")


def _texts_in_schema(database: PgDatabase) -> list[str]:
    # Every row of every table of the schema, as PostgreSQL prints it.
    with database.engine.connect() as connection:
        tables = connection.execute(
            text(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'retrieval' AND table_type = 'BASE TABLE'"
            )
        ).scalars()
        return [
            row
            for table in tables
            for row in connection.execute(
                text(f'SELECT t::text FROM retrieval."{table}" AS t')
            ).scalars()
        ]


def _vectors_like(database: PgDatabase, vector: np.ndarray) -> int:
    # Rows of any vector column of the schema within float16 rounding of ``vector``.
    with database.engine.connect() as connection:
        columns = connection.execute(
            text(
                "SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = 'retrieval' AND udt_name IN ('vector', 'halfvec')"
            )
        ).all()
        literal = "[" + ",".join(f"{float(x):.8f}" for x in vector) + "]"
        return sum(
            connection.execute(
                text(
                    f'SELECT count(*) FROM retrieval."{table}" '
                    f"WHERE {column}::vector <-> CAST(:v AS vector) < 0.01"
                ),
                {"v": literal},
            ).scalar_one()
            for table, column in columns
        )


def _assert_erased(database: PgDatabase, store: MemoryStore, secret: str) -> None:
    rows = _texts_in_schema(database)
    model = store.embedder.model_id
    traces = [
        secret,
        *WORDS,
        text_key(secret).hex(),
        hashlib.sha256(secret.encode()).hexdigest(),
    ]
    traces += [cache_key(model, told).hex() for told in (secret, *TOLD_OTHERWISE)]
    for trace in traces:
        holding = [row[:120] for row in rows if trace.lower() in row.lower()]
        assert not holding, f"{trace!r} is still in {holding}"
    assert _vectors_like(database, store.embedder.embed([secret])[0]) == 0
    _assert_no_share_of(database, store, secret)
    for told in (secret, *TOLD_OTHERWISE):  # nor in the store's own LRU
        assert store.cache.remembered("acme", told) is None


def _assert_no_share_of(database: PgDatabase, store: MemoryStore, secret: str) -> None:
    # No stored vector of the tenant's messages holds a share of the secret's: each is its
    # own text's, or mixed with that of the live message now told before it in its session.
    with database.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT id, content, thread_id, position FROM retrieval.memories "
                "WHERE tenant_id = 'acme' AND kind = 'message' ORDER BY created_at, id"
            )
        ).all()
    secret_vector = store.embedder.embed([secret])[0]
    stored = stored_vectors(database, [row.id for row in rows])
    for row, vector in zip(rows, stored, strict=True):
        own = store.embedder.embed([row.content])[0]
        near = float(np.dot(vector, secret_vector)) - float(np.dot(as_stored(own), secret_vector))
        assert abs(near) < 0.02 or any(
            close(vector, mixed(own, store.embedder.embed([earlier.content])[0]))
            for earlier in rows
            if earlier.id != row.id
        ), f"{row.content!r} leans {near:+.3f} towards the forgotten text"


def _by_id(store: MemoryStore, database: PgDatabase) -> Callable[[], object]:
    memory_id = store.remember(SECRET, tenant_id="acme", kind="episteme")
    return lambda: store.forget(tenant_id="acme", memory_ids=[memory_id])


def _copies(store: MemoryStore, database: PgDatabase) -> Callable[[], object]:
    memory_id = store.remember(SECRET, tenant_id="acme")
    for told in TOLD_OTHERWISE:  # one by one, and in a batch with a new memory
        assert store.remember(told, tenant_id="acme") == memory_id
    batch = [{"text": told, "tenant_id": "acme"} for told in TOLD_OTHERWISE[:1]]
    batch.append({"text": "The vault holds a new record.", "tenant_id": "acme"})
    assert store.remember_many(batch)[0] == memory_id
    return lambda: store.forget(tenant_id="acme", memory_ids=[memory_id])


def _a_message(store: MemoryStore, database: PgDatabase) -> Callable[[], object]:
    # A message without a thread, and the next one of its session, which takes its share.
    secret = store.remember(SECRET, tenant_id="acme", kind="message", created_at=WHEN)
    store.remember(AFTER, tenant_id="acme", kind="message", created_at=WHEN + MINUTE)
    return lambda: store.forget(tenant_id="acme", memory_ids=[secret])


def _an_expired_message(store: MemoryStore, database: PgDatabase) -> Callable[[], object]:
    # Told while it was live, the next message took its share; then it expired.
    store.remember(
        SECRET, tenant_id="acme", kind="message", created_at=WHEN, expires_at=WHEN + 2 * MINUTE
    )
    store.remember(AFTER, tenant_id="acme", kind="message", created_at=WHEN + MINUTE)
    return lambda: store.forget(tenant_id="acme", expired=True)


def _by_task(store: MemoryStore, database: PgDatabase) -> Callable[[], object]:
    decision = store.record_decision(
        tenant_id="acme", task_id="vault", action_type="note", content=SECRET, status="done"
    )
    store.record_tool_call(
        tenant_id="acme",
        decision_id=decision,
        tool_name="vault_open",
        params={"note": SECRET},
        result=SECRET,
    )
    return lambda: store.forget(tenant_id="acme", task_id="vault")


def _a_document(store: MemoryStore, database: PgDatabase) -> Callable[[], object]:
    documents = DocumentStore(store)
    documents.add(
        DocumentInput(
            tenant_id="acme",
            doc_id="vault.md",
            chunks=[ChunkInput(SECRET), ChunkInput("The vault is opened on Mondays.")],
        )
    )
    documents.add(
        DocumentInput(
            tenant_id="acme", doc_id="other.md", chunks=[ChunkInput("The archive opens at nine.")]
        )
    )
    return lambda: documents.forget(tenant_id="acme", doc_id="vault.md")


def _expired(store: MemoryStore, database: PgDatabase) -> Callable[[], object]:
    store.remember(SECRET, tenant_id="acme", created_at=WHEN, expires_at=WHEN + timedelta(days=1))
    return lambda: store.forget(tenant_id="acme", expired=True)


def _everything(store: MemoryStore, database: PgDatabase) -> Callable[[], object]:
    store.remember(SECRET, tenant_id="acme")
    return lambda: store.forget(tenant_id="acme", everything=True)


@pytest.mark.parametrize(
    "stored",
    [_by_id, _copies, _a_message, _an_expired_message, _by_task, _a_document, _expired,
     _everything],
)  # fmt: skip
def test_forget_leaves_no_trace_of_the_text(
    store: MemoryStore,
    database: PgDatabase,
    stored: Callable[[MemoryStore, PgDatabase], Callable[[], object]],
) -> None:
    _fill(store)
    forget = stored(store, database)
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        retriever.retrieve("vault combination", tenant_id="acme")  # a read: counts, caches
    rows = _texts_in_schema(database)
    assert any("xylophonist" in row.lower() for row in rows)  # the scan sees it before
    forget()
    _assert_erased(database, store, SECRET)


def test_a_cache_entry_a_live_memory_needs_stays(store: MemoryStore, database: PgDatabase) -> None:
    kept = store.remember(SECRET, tenant_id="acme", kind="episteme")
    gone = store.remember(SECRET, tenant_id="acme", kind="fact")
    store.forget(tenant_id="acme", memory_ids=[gone])
    with database.engine.connect() as connection:
        entries = connection.execute(
            text("SELECT count(*) FROM retrieval.embedding_cache WHERE key = :k"),
            {"k": cache_key(store.embedder.model_id, SECRET)},
        ).scalar_one()
    assert entries == 1 and store.get_memory(kept, tenant_id="acme") is not None


def test_the_turn_after_a_forgotten_turn_loses_its_share(
    store: MemoryStore, database: PgDatabase
) -> None:
    turns = store.remember_many(
        [
            {"text": text_, "tenant_id": "acme", "kind": "message", "thread_id": "chat",
             "position": n}
            for n, text_ in enumerate(
                [SECRET, "Noted, I will not write it down.", "Lunch at noon?"]
            )
        ]
    )  # fmt: skip
    own = store.embedder.embed(["Noted, I will not write it down."])[0]
    before = store.get_memory(turns[1], tenant_id="acme")
    assert before is not None and float(np.dot(before.embedding, own)) < 0.999  # mixed
    store.forget(tenant_id="acme", memory_ids=[turns[0]])
    after = store.get_memory(turns[1], tenant_id="acme")
    assert after is not None
    np.testing.assert_allclose(after.embedding, as_stored(own), atol=1e-6)  # its own vector
    last = store.get_memory(turns[2], tenant_id="acme")
    assert last is not None and float(np.dot(last.embedding, own)) < 0.999  # untouched
    _assert_erased(database, store, SECRET)


def test_messages_after_a_forgotten_one_are_made_again_with_the_one_now_before_them(
    store: MemoryStore, database: PgDatabase
) -> None:
    # In the order told: the secret, an answer written after a later message (out of order:
    # both took the secret's share), then that later message.
    secret = store.remember(SECRET, tenant_id="acme", kind="message", created_at=WHEN)
    later = store.remember(
        "Lunch at noon?", tenant_id="acme", kind="message", created_at=WHEN + 2 * MINUTE
    )
    answer = store.remember(AFTER, tenant_id="acme", kind="message", created_at=WHEN + MINUTE)
    own = {body: store.embedder.embed([body])[0] for body in (SECRET, AFTER, "Lunch at noon?")}
    assert close(stored_vectors(database, [answer])[0], mixed(own[AFTER], own[SECRET]))
    assert close(stored_vectors(database, [later])[0], mixed(own["Lunch at noon?"], own[SECRET]))
    store.forget(tenant_id="acme", memory_ids=[secret])
    answer_vector, later_vector = stored_vectors(database, [answer, later])
    assert close(answer_vector, own[AFTER])  # the first of its session now
    assert close(later_vector, mixed(own["Lunch at noon?"], own[AFTER]))
    _assert_erased(database, store, SECRET)


def test_a_new_message_takes_no_share_of_one_that_has_expired(
    store: MemoryStore, database: PgDatabase
) -> None:
    now = datetime.now(UTC)
    store.remember(
        SECRET, tenant_id="acme", kind="message", created_at=now - 5 * MINUTE,
        expires_at=now - MINUTE,
    )  # fmt: skip
    answer = store.remember(AFTER, tenant_id="acme", kind="message")
    store.remember(SECRET, tenant_id="acme", kind="message", thread_id="t", position=0,
                   created_at=now - 5 * MINUTE, expires_at=now - MINUTE)  # fmt: skip
    reply = store.remember(AFTER, tenant_id="acme", kind="message", thread_id="t", position=1)
    own = store.embedder.embed([AFTER])[0]
    assert close(stored_vectors(database, [answer])[0], own)
    assert close(stored_vectors(database, [reply])[0], own)
    store.forget(tenant_id="acme", expired=True)
    _assert_erased(database, store, SECRET)
