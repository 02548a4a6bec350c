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

SECRET = "Quokka xylophonist Bartholomew keeps the vault combination zebrawood 7731."
WORDS = ("quokka", "xylophonist", "bartholomew", "zebrawood")
WHEN = datetime(2026, 11, 1, tzinfo=UTC)
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
    for told in (secret, *TOLD_OTHERWISE):  # nor in the store's own LRU
        assert store.cache.remembered("acme", told) is None


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


@pytest.mark.parametrize("stored", [_by_id, _copies, _by_task, _a_document, _expired, _everything])
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
