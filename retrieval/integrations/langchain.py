"""A LangChain retriever over the library: ``pip install 'retrieval[langchain]'``.

    retriever = RetrievalRetriever.of(HybridRetriever.from_store(store), tenant_id="acme", k=4)
    documents = retriever.invoke("why did the deploy fail")   # or await retriever.ainvoke(...)
    documents = retriever.invoke("why did the deploy fail", k=1, mode="knowledge_lookup")

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

from retrieval.arguments import check_tenant
from retrieval.errors import ValidationError
from retrieval.integrations import _search
from retrieval.search.retriever import HybridRetriever

COUNT = "k"
# Keyword arguments LangChain's own invoke() reads and passes on; not search options.
_LANGCHAIN_KWARGS = frozenset({"verbose"})


class RetrievalRetriever(BaseRetriever):
    """LangChain's ``BaseRetriever`` on a :class:`HybridRetriever`, for one tenant.

    ``k`` is the most documents a call returns (default: the library's ``total_limit``, 10);
    ``search_options`` go to every ``retrieve`` call (``mode``, ``task_id``, ``as_of``,
    ``neighbors``, ``entities``, ``fusion``, ``config``, ...). A call may give ``k`` and any
    of those options as keyword arguments (``invoke(query, k=1, mode="knowledge_lookup")``);
    a bad value is the library's :class:`~retrieval.errors.ValidationError` naming it.

    ``tenant_id`` is fixed when the retriever is made (assigning it is refused): make one
    retriever per tenant, over one shared :class:`HybridRetriever`. The async path
    (``ainvoke``) runs on the library's bounded thread pool, never on the event loop.
    """

    retriever: HybridRetriever
    tenant_id: str
    k: int | None = None
    search_options: dict[str, Any] = Field(default_factory=dict)
    _async: _search.AsyncCalls = PrivateAttr(default_factory=_search.AsyncCalls)

    def __init__(self, **data: Any) -> None:
        # The library's errors, before pydantic would wrap them in its own.
        check_tenant(data.get("tenant_id"))
        _search.check_setting(COUNT, data.get(COUNT), count_name=COUNT)
        _search.check_setting("search_options", data.get("search_options") or {}, count_name=COUNT)
        super().__init__(**data)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "tenant_id":
            raise ValidationError(
                "tenant_id is fixed when the retriever is made: make one RetrievalRetriever "
                "per tenant (RetrievalRetriever.of(hybrid, tenant_id=...)), sharing the "
                "HybridRetriever",
                field="tenant_id",
            )
        _search.check_setting(name, value, count_name=COUNT)
        super().__setattr__(name, value)

    @classmethod
    def of(
        cls,
        retriever: HybridRetriever,
        *,
        tenant_id: str,
        k: int | None = None,
        **search_options: Any,
    ) -> RetrievalRetriever:
        """A retriever of ``tenant_id``'s memory returning ``k`` documents; ``search_options``
        go to each call."""
        return cls(retriever=retriever, tenant_id=tenant_id, k=k, search_options=search_options)

    def _options(self, given: dict[str, Any]) -> dict[str, Any]:
        given = {name: value for name, value in given.items() if name not in _LANGCHAIN_KWARGS}
        return _search.call_options(self.search_options, self.k, given, count_name=COUNT)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        options = self._options(kwargs)
        rows = _search.run(self.retriever, self.tenant_id, query, options)
        return [_document(*row) for row in rows]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        options = self._options(kwargs)
        rows = await self._async.run(self.retriever, self.tenant_id, query, options)
        return [_document(*row) for row in rows]


def _document(key: str, content: str, metadata: dict[str, Any], _score: float) -> Document:
    return Document(page_content=content, metadata=metadata, id=key)
