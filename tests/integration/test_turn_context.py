"""A conversation turn embedded by the store is stored with its previous turn's vector mixed
in (normalize(own + w * previous), w = WriteConfig.turn_context): in one batch, across
batches, per tenant, through `reembed`; anything else keeps its own vector."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.errors import ConfigurationError
from retrieval.memory.config import DEFAULT_TURN_CONTEXT, WriteConfig
from retrieval.memory.records import MemoryInput
from retrieval.memory.reembed import reembed
from retrieval.memory.store import MemoryStore
from tests.conftest import CountingEmbedder, PgDatabase
from tests.turn_vectors import close, mixed, own_vector, stored_vectors

TURNS = [
    "Did you raise the lock timeout before the migration?",
    "Ten seconds, and it went through.",
    "Good. Then the index build can run tonight.",
]


def _turn(
    body: str,
    position: int | None,
    *,
    tenant: str = "acme",
    thread: str | None = "t1",
    **fields: object,
) -> MemoryInput:
    fields.setdefault("kind", "message")
    return MemoryInput(text=body, tenant_id=tenant, thread_id=thread, position=position,
                       **fields)  # type: ignore[arg-type]  # fmt: skip


def test_each_turn_of_a_batch_carries_its_previous_turns_own_vector(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    ids = store.remember_many(_turn(body, position) for position, body in enumerate(TURNS))
    own = [own_vector(counting_embedder, body) for body in TURNS]
    stored = stored_vectors(database, ids)
    assert close(stored[0], own[0])  # the first turn has no context
    assert close(stored[1], mixed(own[1], own[0]))
    assert close(stored[2], mixed(own[2], own[1]))  # the previous turn's own vector, not mixed
    assert not close(stored[1], own[1])
    assert sorted(counting_embedder.embedded) == sorted(TURNS)  # each text embedded once
    stats = store.cache_stats
    assert (stats.texts, stats.embedded, stats.hits) == (3, 3, 0)  # context lookups not counted


def test_a_turn_written_later_takes_its_stored_previous_turn(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    store.remember_many([_turn(TURNS[0], 0)])
    (later,) = store.remember_many([_turn(TURNS[1], 1)])
    assert counting_embedder.embedded == [TURNS[0], TURNS[1]]  # the first from the cache
    own = [own_vector(counting_embedder, body) for body in TURNS[:2]]
    assert close(stored_vectors(database, [later])[0], mixed(own[1], own[0]))
    # The same texts again (all cached, the path that joins the cache table in SQL for plain
    # memories) still mix their context.
    ids = store.remember_many(
        _turn(body, position, thread="t2") for position, body in enumerate(TURNS[:2])
    )
    assert counting_embedder.embedded == [TURNS[0], TURNS[1]]
    stored = stored_vectors(database, ids)
    assert close(stored[0], own[0]) and close(stored[1], mixed(own[1], own[0]))
    assert store.cache_stats.hits == 2


def test_memories_outside_a_thread_or_with_a_given_vector_keep_theirown_vector(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    given = np.zeros(384, dtype=np.float32)
    given[5] = 1.0
    ids = store.remember_many(
        [
            _turn(TURNS[0], 0),
            _turn(TURNS[1], 1, embedding=given),  # the caller's vector is kept as given
            _turn(TURNS[2], 4),  # no turn at position 3: nothing to mix
            _turn(TURNS[1], None, thread=None, kind="fact"),  # not a turn: a fact
            _turn(TURNS[2], 1, tenant="globex"),  # globex has no turn 0 in t1: acme's is not used
        ]
    )
    stored = stored_vectors(database, ids)
    assert close(stored[1], given)
    assert close(stored[2], own_vector(counting_embedder, TURNS[2]))
    assert close(stored[3], own_vector(counting_embedder, TURNS[1]))
    assert close(stored[4], own_vector(counting_embedder, TURNS[2]))


def test_a_turn_after_a_given_vector_mixes_the_text_of_that_turn(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    given = np.zeros(384, dtype=np.float32)
    given[5] = 1.0
    store.remember_many([_turn(TURNS[0], 0, embedding=given)])
    (later,) = store.remember_many([_turn(TURNS[1], 1)])
    own = [own_vector(counting_embedder, body) for body in TURNS[:2]]
    assert close(stored_vectors(database, [later])[0], mixed(own[1], own[0]))
    stats = store.cache_stats  # the context text was embedded but is not counted as one
    assert (stats.texts, stats.embedded, stats.hits) == (1, 1, 0)


def test_turn_context_zero_turns_it_off(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    store = MemoryStore(
        database.engine, embedder=counting_embedder, config=WriteConfig(turn_context=0.0)
    )
    ids = store.remember_many(_turn(body, position) for position, body in enumerate(TURNS))
    for vector, body in zip(stored_vectors(database, ids), TURNS, strict=True):
        assert close(vector, own_vector(counting_embedder, body))


def test_turn_context_comes_from_the_environment_and_is_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert WriteConfig().turn_context == DEFAULT_TURN_CONTEXT == 0.3
    monkeypatch.setenv("RETRIEVAL_TURN_CONTEXT", "0.5")
    assert WriteConfig.from_env().turn_context == 0.5
    for bad in (-0.1, 1.5, True, "0.3"):
        with pytest.raises(ConfigurationError, match="turn_context must be a number in"):
            WriteConfig(turn_context=bad)  # type: ignore[arg-type]


def test_reembed_mixes_the_previous_turn_as_a_write_does(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    rng = np.random.default_rng(3)
    old = MemoryStore(database.engine, embedder=counting_embedder)
    ids = old.remember_many(
        _turn(body, position, embedding=rng.normal(size=384).astype(np.float32),
              embedding_model="old-model-v1")
        for position, body in enumerate(TURNS)
    )  # fmt: skip
    store = MemoryStore(database.engine, embedder=counting_embedder)
    summary = reembed(store, batch_size=2)  # the third turn's context is in the first batch
    assert summary.updated == 3 and summary.embedded == 3
    own = [own_vector(counting_embedder, body) for body in TURNS]
    stored = stored_vectors(database, ids)
    assert close(stored[0], own[0])
    assert close(stored[1], mixed(own[1], own[0]))
    assert close(stored[2], mixed(own[2], own[1]))
