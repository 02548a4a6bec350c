"""A turn is embedded with the turn before it only within its own namespace: messages without
a thread told a minute apart in two namespaces are two sessions, and a thread whose turns are
stored under two namespaces is two conversations. In one batch, across batches, through
``reembed`` and when a forgotten message's neighbours are made again: one user's words never
enter the vector of another user's memory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from retrieval.memory.records import MemoryInput
from retrieval.memory.reembed import reembed
from retrieval.memory.store import MemoryStore
from tests.conftest import CountingEmbedder, PgDatabase
from tests.turn_vectors import close, mixed, own_vector, stored_vectors

MAY = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)
PRIVATE = "user: my HIV test came back positive yesterday"
WEATHER = "assistant: Tomorrow in Leeds: light rain, 12 degrees."
U1, U2 = ("users", "u1"), ("users", "u2")


def _message(
    body: str, minutes: float, namespace: tuple[str, ...], **fields: object
) -> MemoryInput:
    return MemoryInput(text=body, tenant_id="acme", kind="message", namespace=namespace,
                       created_at=MAY + timedelta(minutes=minutes), **fields)  # type: ignore[arg-type]  # fmt: skip


def test_messages_of_two_namespaces_a_minute_apart_are_two_sessions(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    # In one batch, then each in a batch of its own.
    own = own_vector(counting_embedder, WEATHER)
    together = store.remember_many([_message(PRIVATE, 0, U1), _message(WEATHER, 1, U2)])
    assert close(stored_vectors(database, together)[1], own)
    store.forget(tenant_id="acme", everything=True)
    store.remember_many([_message(PRIVATE, 0, U1)])
    second = store.remember_many([_message(WEATHER, 1, U2)])
    assert close(stored_vectors(database, second)[0], own)
    # The same two in one namespace are one session, as before.
    same = store.remember_many([_message(PRIVATE, 10, U2), _message(WEATHER, 11, U2)])
    previous = own_vector(counting_embedder, PRIVATE)
    assert close(stored_vectors(database, same)[1], mixed(own, previous))


def test_a_thread_stored_under_two_namespaces_is_two_conversations(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    opening = store.remember_many([_message(PRIVATE, 0, U1, thread_id="t", position=0)])
    reply = store.remember_many([_message(WEATHER, 1, U2, thread_id="t", position=1)])
    assert close(stored_vectors(database, reply)[0], own_vector(counting_embedder, WEATHER))
    assert close(stored_vectors(database, opening)[0], own_vector(counting_embedder, PRIVATE))
    # In one batch too.
    both = store.remember_many([_message(PRIVATE, 0, U1, thread_id="s", position=0),
                                _message(WEATHER, 1, U2, thread_id="s", position=1)])  # fmt: skip
    assert close(stored_vectors(database, both)[1], own_vector(counting_embedder, WEATHER))


def test_reembed_keeps_each_namespace_apart(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    rng = np.random.default_rng(7)
    old = MemoryStore(database.engine, embedder=counting_embedder)
    given = {"embedding_model": "old-model-v1"}
    ids = old.remember_many(
        [
            _message(PRIVATE, 0, U1, embedding=rng.normal(size=384).astype(np.float32), **given),
            _message(WEATHER, 1, U2, embedding=rng.normal(size=384).astype(np.float32), **given),
            _message(PRIVATE, 0, U1, thread_id="t", position=0,
                     embedding=rng.normal(size=384).astype(np.float32), **given),
            _message(WEATHER, 1, U2, thread_id="t", position=1,
                     embedding=rng.normal(size=384).astype(np.float32), **given),
        ]
    )  # fmt: skip
    store = MemoryStore(database.engine, embedder=counting_embedder)
    assert reembed(store).updated == 4
    stored = stored_vectors(database, ids)
    weather = own_vector(counting_embedder, WEATHER)
    assert close(stored[1], weather) and close(stored[3], weather)


def test_forgetting_a_message_makes_its_neighbours_again_within_their_namespace(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    earlier = "user: Will it rain in Leeds tomorrow?"
    first, private, weather = store.remember_many(
        [_message(earlier, 0, U2), _message(PRIVATE, 1, U1), _message(WEATHER, 2, U2)]
    )
    own = own_vector(counting_embedder, WEATHER)
    before = own_vector(counting_embedder, earlier)
    # Made with the message of its own namespace told before it, not u1's in between.
    assert close(stored_vectors(database, [weather])[0], mixed(own, before))
    store.forget(tenant_id="acme", memory_ids=[private])
    assert close(stored_vectors(database, [weather])[0], mixed(own, before))
    assert close(stored_vectors(database, [first])[0], before)
