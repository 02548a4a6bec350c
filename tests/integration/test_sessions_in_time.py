"""Messages stored without a thread form sessions in time: while at most
``session_gap_minutes`` pass between two messages of a tenant, the store embeds each with the
one told before it (as a turn of a thread is) and the retriever lifts their neighbours; a
longer pause, another tenant, another kind or a gap of 0 breaks the session."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from retrieval.memory.config import WriteConfig
from retrieval.memory.records import MemoryInput
from retrieval.memory.reembed import reembed
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever
from tests.conftest import CountingEmbedder, PgDatabase
from tests.turn_vectors import close, mixed, own_vector, stored_vectors

MAY = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)
AS_OF = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
CHAT = [
    'Ana said, "How did the move to the new flat go?"',
    'Bo said, "Exhausting, but the kitchen is finally unpacked."',
    'Ana said, "And which neighbourhood did you end up in?"',
    'Bo said, "Riverside, two streets from the old bakery."',
    'Ana said, "Sounds lovely. Coffee there next week?"',
]
BETWEEN = 'Bo said, "Oh, and the movers were late."'


def _message(
    body: str, minutes: float | None, *, tenant: str = "acme", **fields: object
) -> MemoryInput:
    fields.setdefault("kind", "message")
    at = None if minutes is None else MAY + timedelta(minutes=minutes)
    return MemoryInput(text=body, tenant_id=tenant, created_at=at, **fields)  # type: ignore[arg-type]


# -- the store: each message embedded with the one told before it ------------------------


def test_a_message_is_embedded_with_the_one_told_before_it_in_its_session(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    ids = store.remember_many(
        [
            _message(CHAT[1], 1),  # written first, told after CHAT[0]: time decides the order
            _message(CHAT[0], 0),
            _message(CHAT[2], 20),  # 19 minutes later: the same session
            _message(CHAT[3], 140),  # two hours later: a new session
            _message(CHAT[4], 141, kind="fact"),  # not a message: its own vector
            _message(CHAT[4], 2, tenant="globex"),  # globex's first message: acme's are not its
        ]
    )
    own = {body: own_vector(counting_embedder, body) for body in CHAT}
    stored = stored_vectors(database, ids)
    assert close(stored[0], mixed(own[CHAT[1]], own[CHAT[0]]))
    assert close(stored[1], own[CHAT[0]])  # the first of its session
    assert close(stored[2], mixed(own[CHAT[2]], own[CHAT[1]]))
    assert close(stored[3], own[CHAT[3]])
    assert close(stored[4], own[CHAT[4]])
    assert close(stored[5], own[CHAT[4]])


def test_a_message_written_later_takes_the_stored_one_before_it(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    store.remember_many([_message(CHAT[0], 0), _message(CHAT[1], 1)])
    # One message a call, as an agent writes them: told now (the previous one is the latest
    # stored), or at a time of its own (the stored one told just before that time).
    (now_first,) = store.remember_many([_message(CHAT[2], None)])
    (now_second,) = store.remember_many([_message(CHAT[3], None)])
    (between,) = store.remember_many([_message(BETWEEN, 0.5)])
    own = {body: own_vector(counting_embedder, body) for body in [*CHAT, BETWEEN]}
    stored = stored_vectors(database, [now_first, now_second, between])
    assert close(stored[0], own[CHAT[2]])  # months after May: a session of its own
    assert close(stored[1], mixed(own[CHAT[3]], own[CHAT[2]]))
    assert close(stored[2], mixed(own[BETWEEN], own[CHAT[0]]))


def test_a_session_gap_of_zero_keeps_each_message_its_own_vector(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    store = MemoryStore(
        database.engine, embedder=counting_embedder, config=WriteConfig(session_gap_minutes=0.0)
    )
    ids = store.remember_many(_message(body, 0) for body in CHAT)
    for vector, body in zip(stored_vectors(database, ids), CHAT, strict=True):
        assert close(vector, own_vector(counting_embedder, body))


def test_reembed_mixes_the_message_before_as_a_write_does(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    rng = np.random.default_rng(5)
    old = MemoryStore(database.engine, embedder=counting_embedder)
    ids = old.remember_many(
        _message(body, minute, embedding=rng.normal(size=384).astype(np.float32),
                 embedding_model="old-model-v1")
        for minute, body in enumerate(CHAT[:3])
    )  # fmt: skip
    store = MemoryStore(database.engine, embedder=counting_embedder)
    assert reembed(store, batch_size=2).updated == 3  # the third's previous is in the first batch
    own = [own_vector(counting_embedder, body) for body in CHAT[:3]]
    stored = stored_vectors(database, ids)
    assert close(stored[0], own[0])
    assert close(stored[1], mixed(own[1], own[0]))
    assert close(stored[2], mixed(own[2], own[1]))


# -- the retriever: a message's session lifts its neighbours -------------------------------


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    config = RetrievalConfig(record_access=False)
    with HybridRetriever.from_store(store, config=config, background_writes=False) as retriever:
        yield retriever


QUESTION = "Which neighbourhood did Bo end up in after the move?"


def test_the_answer_told_after_a_matching_question_is_lifted_without_a_thread(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    ids = store.remember_many(_message(body, minute) for minute, body in enumerate(CHAT))
    response = retriever.retrieve(QUESTION, tenant_id="acme", as_of=AS_OF, limit=3)
    lifted = {
        r.metadata["id"]: r.metadata["lifted_by"] for r in response if "lifted_by" in r.metadata
    }
    assert ids[3] in lifted, [r.content for r in response]  # "Riverside, ...": the answer
    assert lifted[ids[3]]["offset"] in (1, -1, 2, -2)
    assert lifted[ids[3]]["id"] in ids
    assert response.diagnostics.statements == 1  # the turns read in the call's one statement
    off = retriever.retrieve(
        QUESTION, tenant_id="acme", as_of=AS_OF, limit=3,
        config=replace(retriever.config, session_gap_minutes=0.0),
    )  # fmt: skip
    assert all("lifted_by" not in r.metadata for r in off)
    assert off.diagnostics.statements == 1


def test_a_pause_longer_than_the_gap_ends_the_session(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # The answer told two hours after the question: the question's session has ended.
    minutes = [0, 1, 2, 122, 123]
    ids = store.remember_many(_message(body, at) for at, body in zip(minutes, CHAT, strict=True))
    response = retriever.retrieve(QUESTION, tenant_id="acme", as_of=AS_OF, limit=10)
    for result in response:
        by = result.metadata.get("lifted_by")
        if by is not None:  # neighbours only within a session
            sides = {ids.index(result.metadata["id"]) < 3, ids.index(by["id"]) < 3}
            assert len(sides) == 1, (result.content, by)
    wide = retriever.retrieve(
        QUESTION, tenant_id="acme", as_of=AS_OF, limit=10,
        config=replace(retriever.config, session_gap_minutes=180.0),
    )  # fmt: skip
    assert any(
        ids.index(r.metadata["lifted_by"]["id"]) < 3 <= ids.index(r.metadata["id"])
        or ids.index(r.metadata["id"]) < 3 <= ids.index(r.metadata["lifted_by"]["id"])
        for r in wide
        if "lifted_by" in r.metadata
    ), [(r.content, r.metadata.get("lifted_by")) for r in wide]


def test_another_tenants_messages_and_other_kinds_are_never_neighbours(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    acme = store.remember_many(_message(body, minute) for minute, body in enumerate(CHAT[:3]))
    others = store.remember_many(
        [
            _message(CHAT[3], 3, tenant="globex"),
            _message(CHAT[4], 3.5, tenant="globex"),
            _message(CHAT[3], 3, kind="fact"),
        ]
    )
    response = retriever.retrieve(QUESTION, tenant_id="acme", as_of=AS_OF, limit=10)
    assert not {r.metadata["id"] for r in response} & set(others[:2])
    lifted = [r for r in response if "lifted_by" in r.metadata]
    assert all(r.metadata["id"] in acme for r in lifted)
