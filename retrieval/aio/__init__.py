"""The async API: the store and the retriever for asyncio code, on bounded thread pools.

See :mod:`retrieval.aio.threads` for how a call runs, and docs/design.md for why threads
rather than psycopg's async connections.
"""

from retrieval.aio.retriever import AsyncHybridRetriever
from retrieval.aio.store import AsyncMemoryStore

__all__ = ["AsyncHybridRetriever", "AsyncMemoryStore"]
