"""``forget`` racing the writes that lock a tenant's stored memories never deadlocks.

Every writer of memories takes the tenant's statistics lock (retrieval.db.statistics_lock)
before it locks a stored row (a memory superseded, an expired copy retired, a live copy
refreshed), the order ``forget`` takes them in. Each round starts both calls together; a
call may lose the race with a clear ``ValidationError`` (the memory it names is gone), never
with a database error.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial

from retrieval.errors import ValidationError
from retrieval.memory.store import MemoryStore
from tests.threads import run_together

ROUNDS = 8


def _race(first: Callable[[], object], second: Callable[[], object]) -> list[BaseException]:
    calls = (first, second)

    def work(worker: int) -> None:
        try:
            calls[worker]()
        except ValidationError as error:  # the other call removed what this one names
            assert "has no memory" in error.reason, error.reason

    return run_together(work)


def test_forget_racing_a_correction_of_the_same_memory(store: MemoryStore) -> None:
    store.embedder.embed(["warm the model up"])
    for round_ in range(ROUNDS):
        tenant = f"race-{round_}"
        store.remember_many([{"text": f"Filler note {n}.", "tenant_id": tenant} for n in range(3)])
        old = store.remember(f"Erin is on call in week {round_}.", tenant_id=tenant)
        errors = _race(
            partial(store.forget, tenant_id=tenant, memory_ids=[old]),
            partial(
                store.remember,
                f"Bob is on call in week {round_}.",
                tenant_id=tenant,
                supersedes=old,
            ),
        )
        assert errors == []
        assert store.get_memory(old, tenant_id=tenant) is None


def test_forget_of_the_expired_racing_copies_of_expired_texts(store: MemoryStore) -> None:
    store.embedder.embed(["warm the model up"])
    start = datetime.now(UTC) - timedelta(days=2)
    for round_ in range(ROUNDS):
        tenant = f"race-{round_}"
        texts = [f"Temporary door code {n} for round {round_}." for n in range(4)]
        store.remember_many(
            [
                {"text": text, "tenant_id": tenant, "created_at": start,
                 "expires_at": start + timedelta(days=1)}
                for text in texts
            ]
        )  # fmt: skip
        errors = _race(
            partial(store.forget, tenant_id=tenant, expired=True),
            partial(store.remember_many, [{"text": text, "tenant_id": tenant} for text in texts]),
        )
        assert errors == []
        live = store.similar(texts[0], tenant_id=tenant, threshold=0.99)
        assert [found.memory.content for found in live] == [texts[0]]


def test_forget_racing_a_copy_of_the_memory_it_removes(store: MemoryStore) -> None:
    store.embedder.embed(["warm the model up"])
    for round_ in range(ROUNDS):
        tenant = f"race-{round_}"
        text = f"The staging database is called orca-{round_}."
        store.remember_many([{"text": f"Filler note {n}.", "tenant_id": tenant} for n in range(3)])
        kept = store.remember(text, tenant_id=tenant)
        errors = _race(
            partial(store.forget, tenant_id=tenant, memory_ids=[kept]),
            partial(store.remember, text, tenant_id=tenant),
        )
        assert errors == []
