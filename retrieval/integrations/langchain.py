"""A LangChain retriever over the library: ``pip install 'retrieval[langchain]'``.

    retriever = RetrievalRetriever.of(HybridRetriever.from_store(store), tenant_id="acme")
    documents = retriever.invoke("why did the deploy fail")   # or await retriever.ainvoke(...)

Each :class:`~langchain_core.documents.Document` holds a result's text; its ``id`` names the
row (``memory:12``) and its ``metadata`` the source, ``final_score``, ``relevance_score``,
``recency_score`` (each in [0, 1]), ``rank``, ``id``, ``kind``, ``created_at`` and ``details``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field, PrivateAttr

from retrieval.integrations._search import Search
from retrieval.memory.validation import check_tenant
from retrieval.search.retriever import HybridRetriever


class RetrievalRetriever(BaseRetriever):
    """LangChain's ``BaseRetriever`` on a :class:`HybridRetriever`, for one tenant.

    ``search_options`` go to every ``retrieve`` call (``mode``, ``limit``, ``task_id``,
    ``neighbors``, ``config``, ...). The async path (``ainvoke``) runs on the library's
    bounded thread pool, never on the event loop.
    """

    retriever: HybridRetriever
    tenant_id: str
    search_options: dict[str, Any] = Field(default_factory=dict)
    _search: Search = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        """Check the tenant once, when the retriever is made."""
        check_tenant(self.tenant_id)
        self._search = Search(self.retriever, self.tenant_id, dict(self.search_options))

    @classmethod
    def of(
        cls, retriever: HybridRetriever, *, tenant_id: str, **search_options: Any
    ) -> RetrievalRetriever:
        """A retriever of ``tenant_id``'s memory; ``search_options`` go to each call."""
        check_tenant(tenant_id)  # the library's error, before pydantic would wrap it
        return cls(retriever=retriever, tenant_id=tenant_id, search_options=search_options)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [_document(*row) for row in self._search.run(query)]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [_document(*row) for row in await self._search.arun(query)]


def _document(key: str, content: str, metadata: dict[str, Any], _score: float) -> Document:
    return Document(page_content=content, metadata=metadata, id=key)
