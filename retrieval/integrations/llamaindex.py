"""A LlamaIndex retriever over the library: ``pip install 'retrieval[llamaindex]'``.

    retriever = RetrievalNodeRetriever(hybrid, tenant_id="acme", similarity_top_k=4)
    nodes = retriever.retrieve("why did the deploy fail")   # or await retriever.aretrieve(...)
    engine = RetrieverQueryEngine.from_args(retriever, llm=llm)   # answers with source nodes

Each :class:`~llama_index.core.schema.NodeWithScore` has the result's ``final_score`` (in
[0, 1]) as its score and a :class:`~llama_index.core.schema.TextNode` whose ``id_`` names the
row (``memory:12``) and whose ``metadata`` holds the source, the three scores, ``rank``, ``id``,
``kind``, ``created_at`` and ``details``. Only the date and the source are shown to the LLM
with the text; none of the metadata is embedded.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from retrieval.arguments import check_tenant
from retrieval.errors import ValidationError
from retrieval.integrations import _search
from retrieval.search.retriever import HybridRetriever

SHOWN_TO_THE_LLM = frozenset({"source", "created_at"})
COUNT = "similarity_top_k"


class RetrievalNodeRetriever(BaseRetriever):
    """LlamaIndex's ``BaseRetriever`` on a :class:`HybridRetriever`, for one tenant.

    ``similarity_top_k`` is the most nodes a call returns, as LlamaIndex's own retrievers name
    it (default: the library's ``total_limit``, 10); ``search_options`` go to every
    ``retrieve`` call (``mode``, ``task_id``, ``as_of``, ``neighbors``, ``config``, ...);
    ``aretrieve`` runs on the library's bounded thread pool. ``tenant_id`` is fixed when the
    retriever is made (assigning it is refused); the rest is read at each call.
    """

    def __init__(
        self,
        retriever: HybridRetriever,
        *,
        tenant_id: str,
        similarity_top_k: int | None = None,
        **search_options: Any,
    ) -> None:
        self._tenant_id = check_tenant(tenant_id)
        self.retriever = retriever
        self.similarity_top_k = similarity_top_k
        self.search_options = search_options
        self._async = _search.AsyncCalls()
        super().__init__()

    @property
    def tenant_id(self) -> str:
        """The tenant whose memory this retriever reads (fixed)."""
        return self._tenant_id

    @tenant_id.setter
    def tenant_id(self, _value: str) -> None:
        raise ValidationError(
            "tenant_id is fixed when the retriever is made: make one RetrievalNodeRetriever "
            "per tenant, sharing the HybridRetriever",
            field="tenant_id",
        )

    def __setattr__(self, name: str, value: Any) -> None:
        _search.check_setting(name, value, count_name=COUNT)
        super().__setattr__(name, value)

    def _options(self) -> dict[str, Any]:
        return _search.call_options(
            self.search_options, self.similarity_top_k, {}, count_name=COUNT
        )

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        rows = _search.run(self.retriever, self.tenant_id, query_bundle.query_str, self._options())
        return [_node(*row) for row in rows]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        rows = await self._async.run(
            self.retriever, self.tenant_id, query_bundle.query_str, self._options()
        )
        return [_node(*row) for row in rows]


def _node(key: str, content: str, metadata: dict[str, Any], score: float) -> NodeWithScore:
    hidden = [name for name in metadata if name not in SHOWN_TO_THE_LLM]
    node = TextNode(
        id_=key,
        text=content,
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=list(metadata),
    )
    return NodeWithScore(node=node, score=score)
