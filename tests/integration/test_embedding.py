"""The real bundled model, and the embedding cache in PostgreSQL in front of it."""

from __future__ import annotations

import hashlib
import threading

import numpy as np
import pytest
from sqlalchemy import event, text

from retrieval.db import migrate
from retrieval.db.migrate import MigrationSettings
from retrieval.embedding.cache import cache_key
from retrieval.embedding.models import (
    DEFAULT_MODEL_ID,
    Embedder,
    SentenceTransformerEmbedder,
)
from retrieval.errors import DimensionMismatchError
from retrieval.memory.store import MemoryStore
from tests.conftest import CountingEmbedder, PgDatabase, as_stored


def test_the_default_model_gives_unit_float32_vectors(
    embedder: SentenceTransformerEmbedder,
) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == DEFAULT_MODEL_ID
    vectors = embedder.embed(["first text", "second text"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_a_paraphrase_is_nearer_than_an_unrelated_text(
    embedder: SentenceTransformerEmbedder,
) -> None:
    anchor, paraphrase, unrelated = embedder.embed(
        [
            "The deployment failed because the database migration timed out.",
            "Our release broke since the schema migration took too long and was cancelled.",
            "Grandma's apple pie recipe needs cinnamon and two cups of flour.",
        ]
    )
    near = float(np.linalg.norm(anchor - paraphrase))
    far = float(np.linalg.norm(anchor - unrelated))
    assert near < far
    # The seed's inverse distance (docs/design.md, Calibration): 1/(1+L2) about 0.6 for a
    # paraphrase, 0.42 unrelated.
    assert 1 / (1 + near) > 0.5 > 1 / (1 + far)


def test_repeated_text_hits_the_cache_and_is_embedded_once(
    database: PgDatabase, counting_embedder: CountingEmbedder, store: MemoryStore
) -> None:
    store.remember_many(
        [
            {"text": "alpha fact", "tenant_id": "t1"},
            {"text": "alpha fact", "tenant_id": "t1", "kind": "event"},  # not a copy: a kind apart
            {"text": "beta fact", "tenant_id": "t1"},
        ]
    )
    assert counting_embedder.embedded == ["alpha fact", "beta fact"]
    assert (store.cache_stats.texts, store.cache_stats.embedded, store.cache_stats.hits) == (
        3,
        2,
        1,
    )

    store.remember("alpha fact", tenant_id="t1")
    assert store.cache_stats.memory_hits == 1
    assert counting_embedder.embedded == ["alpha fact", "beta fact"]

    # A new process (a new store, empty LRU) finds the vector in PostgreSQL.
    fresh = MemoryStore(database.engine, embedder=counting_embedder)
    fresh.remember("beta fact", tenant_id="t1")
    assert fresh.cache_stats.database_hits == 1
    assert fresh.cache_stats.embedded == 0
    assert counting_embedder.embedded == ["alpha fact", "beta fact"]


def test_cache_keys_are_sha256_of_model_and_text_never_the_text(
    database: PgDatabase, store: MemoryStore
) -> None:
    secret = "patient 4711 has condition X"
    store.remember(secret, tenant_id="t1")
    with database.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT key, model_id, embedding_cache::text FROM retrieval.embedding_cache")
        ).all()
    assert len(rows) == 1
    key, model_id, whole_row = rows[0]
    expected = hashlib.sha256(f"{DEFAULT_MODEL_ID}\x00{secret}".encode()).digest()
    assert bytes(key) == expected == cache_key(DEFAULT_MODEL_ID, secret)
    assert len(bytes(key)) == 32
    assert model_id == DEFAULT_MODEL_ID
    assert "4711" not in whole_row and "patient" not in whole_row


def test_the_cache_is_per_tenant(store: MemoryStore, counting_embedder: CountingEmbedder) -> None:
    store.remember("shared words", tenant_id="t1")
    store.remember("shared words", tenant_id="t2")
    # t2 learns nothing from t1's cache: it pays its own model call.
    assert counting_embedder.embedded == ["shared words", "shared words"]


def test_the_lru_is_bounded(database: PgDatabase, counting_embedder: CountingEmbedder) -> None:
    from retrieval.memory.config import WriteConfig

    small = MemoryStore(
        database.engine, embedder=counting_embedder, config=WriteConfig(cache_entries=2)
    )
    small.remember_many([{"text": f"text {i}", "tenant_id": "t"} for i in range(5)])
    assert len(small.cache._lru) == 2


def test_concurrent_writers_of_the_same_texts_are_safe(
    database: PgDatabase, embedder: SentenceTransformerEmbedder
) -> None:
    texts = [f"concurrent memory {i}" for i in range(20)]
    errors: list[BaseException] = []

    def write() -> None:
        try:
            writer = MemoryStore(database.engine, embedder=embedder)
            writer.remember_many([{"text": t, "tenant_id": "t"} for t in texts])
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=write) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with database.engine.connect() as connection:
        cached = connection.execute(text("SELECT count(*) FROM retrieval.embedding_cache")).scalar()
        memories = connection.execute(text("SELECT count(*) FROM retrieval.memories")).scalar()
    assert cached == 20
    assert memories == 20  # copies collapse: one row per text, told three times
    with database.engine.connect() as connection:
        seen = connection.execute(text("SELECT sum(seen_count) FROM retrieval.memories")).scalar()
    assert seen == 60


def test_a_model_of_another_dimension_is_refused_before_writing(
    empty_database: PgDatabase, embedder: SentenceTransformerEmbedder
) -> None:
    migrate.upgrade(empty_database.engine, MigrationSettings(schema="wide", embedding_dim=768))
    wide = MemoryStore(empty_database.engine, schema="wide", embedder=embedder)
    with pytest.raises(DimensionMismatchError) as raised:
        wide.remember("anything", tenant_id="t")
    assert "384" in str(raised.value) and "vector(768)" in str(raised.value)
    with empty_database.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM wide.memories")).scalar() == 0


def _stored_vectors(database: PgDatabase, ids: list[int]) -> dict[int, np.ndarray]:
    with database.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT id, embedding FROM retrieval.memories WHERE id = ANY(:ids)"),
            {"ids": ids},
        ).all()
    return {row.id: row.embedding.to_numpy() for row in rows}


def test_a_mixed_batch_takes_each_vector_from_where_it_is(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    # Cached in the table (read by a new store: written inside PostgreSQL), in the LRU,
    # given by the caller, and new: every row gets its own vector, in order.
    MemoryStore(database.engine, embedder=counting_embedder).remember_many(
        [{"text": t, "tenant_id": "t1"} for t in ("in the table", "also in the table")]
    )
    store = MemoryStore(database.engine, embedder=counting_embedder)
    store.remember("in the lru", tenant_id="t1")
    given = counting_embedder.inner.embed(["given by the caller"])[0]
    counting_embedder.embedded.clear()
    texts = ["in the table", "given by the caller", "in the lru", "new text", "also in the table"]
    ids = store.remember_many(
        [
            {"text": t, "tenant_id": "t1", **({"embedding": given} if "given" in t else {})}
            for t in texts
        ]
    )
    assert counting_embedder.embedded == ["new text"]
    assert store.cache_stats.database_hits == 2
    stored = _stored_vectors(database, ids)
    expected = counting_embedder.inner.embed(texts)
    for memory_id, vector in zip(ids, expected, strict=True):
        assert np.allclose(stored[memory_id], as_stored(vector), atol=1e-6)
    by_id = {m.id: m.content for m in store.get_memories(ids, tenant_id="t1")}
    assert [by_id[memory_id] for memory_id in ids] == texts


def test_cached_vectors_that_vanish_mid_batch_fail_the_whole_batch(
    database: PgDatabase, store: MemoryStore
) -> None:
    from datetime import UTC, datetime

    from retrieval.errors import DatabaseError
    from retrieval.memory.cached_memories import insert_cached_memories

    store.remember("kept", tenant_id="t1")
    with database.engine.connect() as connection:
        before = connection.execute(text("SELECT count(*) FROM retrieval.memories")).scalar()
    now = datetime.now(UTC)
    key = cache_key(store.cache.embedder.model_id, "kept")
    gone = cache_key(store.cache.embedder.model_id, "forgotten meanwhile")
    # MEMORY_FIELDS (the last six: no expiry, no namespace, no key, a distinct copy, told
    # once) and the cache key
    fields = ("fact", b"\x01{}", None, now, "m", None, None, None, [], None, True, 1, None)
    rows = [
        ("t1", 9_001, "kept", *fields, key),
        ("t1", 9_002, "forgotten meanwhile", *fields, gone),
    ]
    with (
        pytest.raises(DatabaseError, match="1 of 2 cached embeddings disappeared"),
        database.engine.begin() as connection,
    ):
        insert_cached_memories(connection, "retrieval", rows, len(rows))
    with database.engine.connect() as connection:
        after = connection.execute(text("SELECT count(*) FROM retrieval.memories")).scalar()
    assert after == before


def test_a_question_is_embedded_without_a_round_trip_to_the_table(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    # A read never stores its question, so the table could only answer one written exactly as
    # a text stored; asking it cost a connection and a round trip before every new question.
    told = "Our Berlin office opens at 9am."
    MemoryStore(database.engine, embedder=counting_embedder).remember(told, tenant_id="t1")
    fresh = MemoryStore(database.engine, embedder=counting_embedder)  # a new process: empty LRU
    fresh.cache.prepare_model()  # the model's first call checks its dimensions, once
    checkouts: list[object] = []

    def checked_out(*_: object) -> None:
        checkouts.append(1)

    event.listen(database.engine, "checkout", checked_out)
    try:
        question = fresh.cache.question("t1", told)
        again = fresh.cache.question("t1", told)
    finally:
        event.remove(database.engine, "checkout", checked_out)
    assert checkouts == []
    assert counting_embedder.embedded == [told, told]  # stored, then asked: the model twice
    assert np.array_equal(question, again)  # the second time from the in-process LRU
    assert fresh.cache_stats.memory_hits == 1 and fresh.cache_stats.database_hits == 0
    stored = counting_embedder.embed([told])[0]
    assert np.allclose(question, stored, atol=1e-6)  # MiniLM: one side, the same vector
