"""What a framework retriever holds: the library's retrievers and one call's options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from retrieval.aio import AsyncHybridRetriever
from retrieval.integrations.records import record_key, result_record
from retrieval.search.results import RetrievalResponse
from retrieval.search.retriever import HybridRetriever


@dataclass
class Search:
    """A tenant's search: the sync retriever, an async one over it (made on first use), and
    the options of every call (``mode``, ``limit``, ``task_id``, ``neighbors``, ...)."""

    retriever: HybridRetriever
    tenant_id: str
    options: dict[str, Any] = field(default_factory=dict)
    _async: AsyncHybridRetriever | None = None

    def run(self, query: str) -> list[tuple[str, str, dict[str, Any], float]]:
        """The results of ``query``: (key, text, metadata, final score) each, best first."""
        return _rows(self.retriever.retrieve(query, tenant_id=self.tenant_id, **self.options))

    async def arun(self, query: str) -> list[tuple[str, str, dict[str, Any], float]]:
        """:meth:`run` on the async retriever: the event loop never blocks."""
        if self._async is None:
            self._async = AsyncHybridRetriever(self.retriever)
        response = await self._async.retrieve(query, tenant_id=self.tenant_id, **self.options)
        return _rows(response)


def _rows(response: RetrievalResponse) -> list[tuple[str, str, dict[str, Any], float]]:
    rows = []
    for rank, result in enumerate(response, start=1):
        record = result_record(result, rank)
        content = record.pop("content")
        rows.append((record_key(record), content, record, result.final_score))
    return rows
