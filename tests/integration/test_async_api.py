"""The async API on the real PostgreSQL: the same results, errors and rows as the sync core."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from retrieval.aio import AsyncHybridRetriever, AsyncMemoryStore
from retrieval.errors import ValidationError
from retrieval.memory.store import MemoryStore
from retrieval.search.results import RetrievalResponse

AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
TOPICS = [
    "The deploy failed because the database migration timed out",
    "Alice prefers dark mode in her code editor",
    "The staging cluster runs PostgreSQL 18 with pgvector",
    "Bob owns the billing service and its invoices",
    "The nightly backup copies the data directory to object storage",
    "Carol asked for weekly reports on the search latency",
    "The API gateway retries a failed request three times",
    "Our tests start an embedded PostgreSQL when no Docker engine answers",
]
QUERIES = [
    "why did the deploy fail",
    "editor theme preference",
    "which database version runs in staging",
    "who is responsible for billing",
    "where do backups go",
    "latency reports",
    "how many retries",
    "tests without docker",
    "pgvector",
    "invoices",
]


def _key(response: RetrievalResponse) -> list[tuple[object, ...]]:
    return [
        (r.source, r.metadata.get("id"), r.final_score, r.relevance_score, r.recency_score)
        for r in response
    ]


def test_fifty_concurrent_async_retrieves_give_the_sequential_results(
    store: MemoryStore,
) -> None:
    async def scenario() -> None:
        async with AsyncMemoryStore(store) as writer:
            ids = await writer.remember_many(
                [
                    {
                        "text": text,
                        "tenant_id": "acme",
                        "created_at": AS_OF - timedelta(days=day),
                    }
                    for day, text in enumerate(TOPICS)
                ]
            )
            assert len(ids) == len(TOPICS)
            async with AsyncHybridRetriever.from_store(
                writer, background_writes=False
            ) as retriever:
                calls = [QUERIES[i % len(QUERIES)] for i in range(50)]
                sequential = [
                    await retriever.retrieve(query, tenant_id="acme", as_of=AS_OF)
                    for query in calls
                ]
                concurrent = await asyncio.gather(
                    *(retriever.retrieve(query, tenant_id="acme", as_of=AS_OF) for query in calls)
                )
                assert [_key(r) for r in concurrent] == [_key(r) for r in sequential]
                assert all(len(r) > 0 for r in sequential)
                # The sync retriever, called directly, agrees too.
                direct = retriever.sync.retrieve(calls[0], tenant_id="acme", as_of=AS_OF)
                assert _key(direct) == _key(sequential[0])

    asyncio.run(scenario())


def test_the_event_loop_keeps_running_while_a_call_waits(store: MemoryStore) -> None:
    async def scenario() -> None:
        async with (
            AsyncMemoryStore(store) as writer,
            AsyncHybridRetriever.from_store(writer, background_writes=False) as retriever,
        ):
            await writer.remember("The deploy failed on Tuesday", tenant_id="acme")
            loop_thread = threading.get_ident()
            seen: list[int] = []
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0)

            def probe() -> None:
                seen.append(threading.get_ident())

            task = asyncio.create_task(ticker())
            # A cold query is embedded by the model: tens of milliseconds the loop stays free.
            await retriever.retrieve("a query the cache has never seen", tenant_id="acme")
            await retriever.threads.run(probe)
            task.cancel()
            assert ticks > 1
            assert seen and seen[0] != loop_thread

    asyncio.run(scenario())


def test_async_writes_refuse_bad_input_as_the_sync_store_does(store: MemoryStore) -> None:
    async def scenario() -> None:
        async with AsyncMemoryStore(store) as writer:
            with pytest.raises(ValidationError, match="tenant_id"):
                await writer.remember("text", tenant_id="")
            with pytest.raises(ValidationError, match="item 1"):
                await writer.remember_many(
                    [{"text": "fine", "tenant_id": "acme"}, {"text": "", "tenant_id": "acme"}]
                )
            with store.engine.connect() as connection:
                count = connection.execute(text("SELECT count(*) FROM retrieval.memories"))
                assert count.scalar_one() == 0  # the batch with one bad item wrote nothing
            decision = await writer.record_decision(
                tenant_id="acme", task_id="t1", action_type="plan", content="c", status="ok"
            )
            call = await writer.record_tool_call(
                tenant_id="acme", decision_id=decision, tool_name="grep", params={}, result="r"
            )
            forgotten = await writer.forget(tenant_id="acme", task_id="t1")
            assert forgotten.decision_ids == (decision,)
            assert forgotten.tool_call_ids == (call,)

    asyncio.run(scenario())
