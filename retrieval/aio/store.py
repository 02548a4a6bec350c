"""``AsyncMemoryStore``: the memory store's methods as coroutines."""

from __future__ import annotations

from typing import Any

from retrieval.aio.threads import ThreadPool, threaded
from retrieval.db.engine import Database
from retrieval.memory.store import MemoryStore

DEFAULT_WRITE_THREADS = 4  # two cores: more writers at once only queue on the model and the disk


class AsyncMemoryStore:
    """A :class:`~retrieval.memory.store.MemoryStore` for asyncio code (an MCP server, FastAPI,
    LangGraph): the same methods, arguments, errors and results, each a coroutine.

    ``await store.remember(text, tenant_id=...)``; each call runs the sync store's method on a
    pool of at most ``max_threads`` threads, so the event loop never waits on PostgreSQL or the
    embedding model. ``store.sync`` is the wrapped store. Close it (or ``async with``) to stop
    the threads.
    """

    def __init__(self, store: MemoryStore, *, max_threads: int = DEFAULT_WRITE_THREADS) -> None:
        self.sync = store
        self.threads = ThreadPool(max_threads, name="retrieval-store")

    @classmethod
    def from_database(
        cls, database: Database, *, max_threads: int = DEFAULT_WRITE_THREADS, **options: Any
    ) -> AsyncMemoryStore:
        """A store on a :class:`~retrieval.db.engine.Database` from :func:`retrieval.connect`
        (``options`` go to :meth:`MemoryStore.from_database`)."""
        return cls(MemoryStore.from_database(database, **options), max_threads=max_threads)

    @property
    def schema(self) -> str:
        """The PostgreSQL schema of the store's tables."""
        return self.sync.schema

    remember = threaded(MemoryStore.remember)
    remember_many = threaded(MemoryStore.remember_many)
    record_decision = threaded(MemoryStore.record_decision)
    record_decisions = threaded(MemoryStore.record_decisions)
    record_tool_call = threaded(MemoryStore.record_tool_call)
    record_tool_calls = threaded(MemoryStore.record_tool_calls)
    get_memory = threaded(MemoryStore.get_memory)
    get_memories = threaded(MemoryStore.get_memories)
    get_decision = threaded(MemoryStore.get_decision)
    get_tool_call = threaded(MemoryStore.get_tool_call)
    forget = threaded(MemoryStore.forget)
    namespaces = threaded(MemoryStore.namespaces)
    similar = threaded(MemoryStore.similar)
    history = threaded(MemoryStore.history)
    check_embedder = threaded(MemoryStore.check_embedder)

    async def close(self) -> None:
        """Wait for the calls in flight and stop the threads (the store's engine stays open)."""
        await self.threads.aclose()

    async def __aenter__(self) -> AsyncMemoryStore:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()
