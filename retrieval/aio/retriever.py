"""``AsyncHybridRetriever``: the hybrid retriever's calls as coroutines."""

from __future__ import annotations

import asyncio
from typing import Any

from retrieval.aio.store import AsyncMemoryStore
from retrieval.aio.threads import ThreadPool, threaded
from retrieval.db.engine import Database
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever


class AsyncHybridRetriever:
    """A :class:`~retrieval.search.retriever.HybridRetriever` for asyncio code: the same
    ``retrieve`` and ``timeline`` (arguments, errors, results), each a coroutine.

    Each call runs the sync retriever on a pool of as many threads as the retriever may open
    connections (``max_connections``, default 10), so calls beyond that queue in the pool
    rather than in the connection pool, and the event loop never waits. ``retriever.sync`` is
    the wrapped retriever. Close it (or ``async with``) to release threads and connections.
    """

    def __init__(self, retriever: HybridRetriever) -> None:
        self.sync = retriever
        self.threads = ThreadPool(retriever.max_connections, name="retrieval-read")

    @classmethod
    def from_store(
        cls,
        store: AsyncMemoryStore | MemoryStore,
        *,
        config: RetrievalConfig | None = None,
        **options: Any,
    ) -> AsyncHybridRetriever:
        """A retriever over ``store``'s database sharing its embedder and embedding cache
        (``options`` go to :class:`~retrieval.search.retriever.HybridRetriever`)."""
        sync = store.sync if isinstance(store, AsyncMemoryStore) else store
        return cls(HybridRetriever.from_store(sync, config=config, **options))

    @classmethod
    def from_database(cls, database: Database, **options: Any) -> AsyncHybridRetriever:
        """A retriever on a :class:`~retrieval.db.engine.Database` from
        :func:`retrieval.connect` (``options`` go to
        :meth:`HybridRetriever.from_database`)."""
        return cls(HybridRetriever.from_database(database, **options))

    @property
    def config(self) -> RetrievalConfig:
        """The retriever's default config."""
        return self.sync.config

    retrieve = threaded(HybridRetriever.retrieve)
    timeline = threaded(HybridRetriever.timeline)
    flush = threaded(HybridRetriever.flush)

    async def close(self) -> None:
        """Finish the calls in flight, write pending access counts, close the connections."""
        await self.threads.aclose()
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncHybridRetriever:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()
