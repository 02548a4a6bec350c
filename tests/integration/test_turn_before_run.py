"""A message that continues its speaker's run is embedded with the turn before the run: the
nearest earlier turn of its thread said by someone else (or a turn of no known speaker); a
message without a thread, the message of another told before the run in its session. Its
share is WriteConfig.run_turn_context (the first message of a run, like any turn, takes
turn_context of the turn just before it). In one batch, across batches, through `reembed`;
forgetting a turn makes the run after it again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from retrieval.errors import ConfigurationError
from retrieval.memory.config import DEFAULT_RUN_TURN_CONTEXT, DEFAULT_TURN_CONTEXT, WriteConfig
from retrieval.memory.records import MemoryInput
from retrieval.memory.reembed import reembed
from retrieval.memory.store import MemoryStore
from retrieval.memory.turn_context import RUN_REACH, Before, Said, turn_before_run
from tests.conftest import CountingEmbedder, PgDatabase
from tests.turn_vectors import close, mixed, own_vector, stored_vectors

CHAT = [
    "Ana: Did the migration finish last night?",
    "Bo: It did.",
    "Bo: Ten seconds in the end.",
    "Bo: I raised the lock timeout first.",
    "Ana: Great, then the index build can run tonight.",
]
RUN = DEFAULT_RUN_TURN_CONTEXT  # the share of the turn before the run in a run's later messages


def _turn(body: str, position: int, *, thread: str = "chat", **fields: object) -> MemoryInput:
    fields.setdefault("kind", "message")
    return MemoryInput(text=body, tenant_id="acme", thread_id=thread, position=position,
                       **fields)  # type: ignore[arg-type]  # fmt: skip


def _own(embedder: CountingEmbedder, bodies: list[str]) -> list[np.typing.NDArray[np.float32]]:
    return [own_vector(embedder, body) for body in bodies]


def test_each_message_of_a_run_takes_the_turn_before_the_run(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    ids = store.remember_many(_turn(body, n) for n, body in enumerate(CHAT))
    own = _own(counting_embedder, CHAT)
    stored = stored_vectors(database, ids)
    assert close(stored[0], own[0])
    assert close(stored[1], mixed(own[1], own[0]))  # Bo's first message answers Ana's question
    for n in (2, 3):  # Bo's next two continue his run: each with Ana's question, a larger share
        assert close(stored[n], mixed(own[n], own[0], RUN))
    assert close(stored[4], mixed(own[4], own[3]))  # Ana's reply: Bo's last message


def test_a_speaker_named_in_full_has_runs_too(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    chat = [body.replace("Ana:", "Ana Silva:").replace("Bo:", "Bo Chen:") for body in CHAT]
    ids = store.remember_many(_turn(body, n) for n, body in enumerate(chat))
    own = _own(counting_embedder, chat)
    stored = stored_vectors(database, ids)
    assert close(stored[1], mixed(own[1], own[0]))
    for n in (2, 3):  # Bo Chen's run takes Ana Silva's question
        assert close(stored[n], mixed(own[n], own[0], RUN))


def test_a_run_is_followed_back_through_stored_turns(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    store.remember_many([_turn(CHAT[0], 0), _turn(CHAT[1], 1)])
    (second,) = store.remember_many([_turn(CHAT[2], 2)])  # the run's start is stored
    (third,) = store.remember_many([_turn(CHAT[3], 3)])  # two of the run are stored
    own = _own(counting_embedder, CHAT)
    stored = stored_vectors(database, [second, third])
    assert close(stored[0], mixed(own[2], own[0], RUN))
    assert close(stored[1], mixed(own[3], own[0], RUN))


def test_turns_of_no_known_speaker_take_the_turn_just_before(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    bodies = [CHAT[0], CHAT[1], "Bo: Ten seconds in the end.", "It went through."]
    ids = store.remember_many(
        [
            _turn(bodies[0], 0),
            _turn(bodies[1], 1),
            # A turn of the thread whatever its kind: Bo's, continuing his run.
            _turn(bodies[2], 2, kind="event"),
            _turn(bodies[3], 3),  # a message that names no one: the turn before it
        ]
    )
    own = _own(counting_embedder, bodies)
    stored = stored_vectors(database, ids)
    assert close(stored[2], mixed(own[2], own[0], RUN))
    assert close(stored[3], mixed(own[3], own[2]))


def test_a_run_that_opens_its_thread_or_follows_a_missing_turn_has_no_context(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    opening = store.remember_many(_turn(body, n, thread="t1") for n, body in enumerate(CHAT[1:3]))
    gap = store.remember_many([_turn(CHAT[0], 0, thread="t2"), _turn(CHAT[2], 2, thread="t2"),
                               _turn(CHAT[3], 3, thread="t2")])  # fmt: skip
    own = _own(counting_embedder, CHAT)
    first, second = stored_vectors(database, opening)
    assert close(first, own[1]) and close(second, own[2])
    _, after_gap, run = stored_vectors(database, gap)
    assert close(after_gap, own[2]) and close(run, own[3])  # position 1 was never written


def test_a_run_longer_than_the_reach_has_no_context() -> None:
    turns = {("acme", "chat", 0): Said("Ana: Hello?", "Ana")}
    turns |= {("acme", "chat", n): Said(f"Bo: line {n}", "Bo") for n in range(1, RUN_REACH + 3)}
    within = ("acme", "chat", RUN_REACH)
    assert turn_before_run(within, "Bo", turns.get) == (Before("Ana: Hello?", run=True), None)
    assert turn_before_run(("acme", "chat", 1), "Bo", turns.get) == (Before("Ana: Hello?"), None)
    beyond = ("acme", "chat", RUN_REACH + 1)
    assert turn_before_run(beyond, "Bo", turns.get) == (None, None)
    del turns[("acme", "chat", 3)]  # the walk stops where a turn is not known
    assert turn_before_run(within, "Bo", turns.get) == (None, ("acme", "chat", 3))
    just_before = Before(f"Bo: line {RUN_REACH - 1}")
    assert turn_before_run(within, None, turns.get) == (just_before, None)


def test_reembed_takes_the_turn_before_the_run_as_a_write_does(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    rng = np.random.default_rng(5)
    old = MemoryStore(database.engine, embedder=counting_embedder)
    ids = old.remember_many(
        _turn(body, n, embedding=rng.normal(size=384).astype(np.float32),
              embedding_model="old-model-v1")
        for n, body in enumerate(CHAT)
    )  # fmt: skip
    store = MemoryStore(database.engine, embedder=counting_embedder)
    assert reembed(store, batch_size=2).updated == len(CHAT)  # runs span the batches
    own = _own(counting_embedder, CHAT)
    stored = stored_vectors(database, ids)
    shares = {1: DEFAULT_TURN_CONTEXT, 2: RUN, 3: RUN}
    assert [close(stored[n], mixed(own[n], own[0], w)) for n, w in shares.items()] == [True] * 3
    assert close(stored[4], mixed(own[4], own[3]))


def test_forgetting_the_turn_before_a_run_gives_the_whole_run_its_own_vectors(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    ids = store.remember_many(_turn(body, n) for n, body in enumerate(CHAT))
    store.forget(tenant_id="acme", memory_ids=[ids[0]])
    own = _own(counting_embedder, CHAT)
    stored = stored_vectors(database, ids[1:])
    assert [close(vector, own[n]) for n, vector in enumerate(stored[:3], start=1)] == [True] * 3
    assert close(stored[3], mixed(own[4], own[3]))  # Ana's reply holds no share of the question


def test_forgetting_a_message_within_a_run_leaves_the_turns_before_it(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    ids = store.remember_many(_turn(body, n) for n, body in enumerate(CHAT))
    store.forget(tenant_id="acme", memory_ids=[ids[2]])
    own = _own(counting_embedder, CHAT)
    first, rest, reply = stored_vectors(database, [ids[1], ids[3], ids[4]])
    assert close(first, mixed(own[1], own[0]))  # before the forgotten one: as it was
    assert close(rest, own[3])  # after it: as a write would make it now (a missing turn)
    assert close(reply, mixed(own[4], own[3]))


# -- messages without a thread: runs within a session inferred from time --------------------

MAY = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)
TOLD = [0, 1, 20, 38, 50]  # minutes: Bo's last message 38 after Ana's question, 18 after his


def _told(body: str, minutes: float) -> MemoryInput:
    return MemoryInput(text=body, tenant_id="acme", kind="message",
                       created_at=MAY + timedelta(minutes=minutes))  # fmt: skip


def test_a_message_without_a_thread_takes_the_one_told_before_its_run(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    together = store.remember_many(_told(body, at) for body, at in zip(CHAT, TOLD, strict=True))
    own = _own(counting_embedder, CHAT)
    stored = stored_vectors(database, together)
    # Bo's last message is 38 minutes after Ana's question, each of his within 30 of the last.
    shares = {1: DEFAULT_TURN_CONTEXT, 2: RUN, 3: RUN}
    assert [close(stored[n], mixed(own[n], own[0], w)) for n, w in shares.items()] == [True] * 3
    assert close(stored[4], mixed(own[4], own[3]))
    # One message a call, as an agent writes them: the run followed back through stored ones.
    store.forget(tenant_id="acme", everything=True)
    alone = [store.remember_many([_told(body, at)])[0] for body, at in zip(CHAT, TOLD, strict=True)]
    assert [close(a, b) for a, b in zip(stored_vectors(database, alone), stored, strict=True)] == [
        True
    ] * len(CHAT)


def test_a_run_ends_at_a_pause_longer_than_the_gap(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    ids = store.remember_many(
        _told(body, at) for body, at in zip(CHAT[:3], [0, 1, 40], strict=True)
    )
    own = _own(counting_embedder, CHAT)
    stored = stored_vectors(database, ids)
    assert close(stored[1], mixed(own[1], own[0]))
    assert close(stored[2], own[2])  # 39 minutes after Bo's first: a session of its own


def test_forgetting_the_message_before_a_run_makes_the_whole_run_again(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    ids = store.remember_many(_told(body, at) for body, at in zip(CHAT, TOLD, strict=True))
    store.forget(tenant_id="acme", memory_ids=[ids[0]])
    own = _own(counting_embedder, CHAT)
    stored = stored_vectors(database, ids[1:])
    # Bo's messages have no one before them now, the last one too (beyond the gap of the
    # forgotten question, within his run); Ana's reply still takes Bo's last message.
    assert [close(vector, own[n]) for n, vector in enumerate(stored[:3], start=1)] == [True] * 3
    assert close(stored[3], mixed(own[4], own[3]))


def test_forgetting_a_message_between_gives_the_run_after_it_its_share_again(
    database: PgDatabase, store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    bodies = [CHAT[0], "Cy: I was asleep.", CHAT[1], CHAT[2]]
    ids = store.remember_many(
        _told(body, at) for body, at in zip(bodies, [0, 1, 2, 3], strict=True)
    )
    store.forget(tenant_id="acme", memory_ids=[ids[1]])
    own = _own(counting_embedder, bodies)
    first, second = stored_vectors(database, ids[2:])
    assert close(first, mixed(own[2], own[0]))  # Bo's first message now answers Ana's question
    assert close(second, mixed(own[3], own[0], RUN))  # his second continues his run


# -- the run's share is a setting of its own ----------------------------------------------------


def test_the_run_share_is_set_apart_from_the_turn_share(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    own = _own(counting_embedder, CHAT)
    for turn_share, run_share in ((0.0, 0.5), (0.3, 0.3), (0.0, 0.0)):
        config = WriteConfig(turn_context=turn_share, run_turn_context=run_share)
        store = MemoryStore(database.engine, embedder=counting_embedder, config=config)
        store.forget(tenant_id="acme", everything=True)
        stored = stored_vectors(
            database, store.remember_many(_turn(b, n) for n, b in enumerate(CHAT))
        )
        turn, run = turn_share, run_share
        expected = [own[0], mixed(own[1], own[0], turn), mixed(own[2], own[0], run),
                    mixed(own[3], own[0], run), mixed(own[4], own[3], turn)]  # fmt: skip
        assert [close(a, b) for a, b in zip(stored, expected, strict=True)] == [True] * len(CHAT)


def test_the_run_share_comes_from_the_environment_and_is_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert WriteConfig().run_turn_context == DEFAULT_RUN_TURN_CONTEXT == 0.5
    monkeypatch.setenv("RETRIEVAL_RUN_TURN_CONTEXT", "0.3")
    assert WriteConfig.from_env().run_turn_context == 0.3
    for bad in (-0.1, 1.5, True, "0.5"):
        with pytest.raises(ConfigurationError, match="run_turn_context must be a number in"):
            WriteConfig(run_turn_context=bad)  # type: ignore[arg-type]
