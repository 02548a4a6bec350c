"""A LlamaIndex retriever over the library: ``pip install 'retrieval[llamaindex]'``.

    retriever = RetrievalNodeRetriever(HybridRetriever.from_store(store), tenant_id="acme")
    nodes = retriever.retrieve("why did the deploy fail")   # or await retriever.aretrieve(...)

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

from retrieval.integrations._search import Search
from retrieval.memory.validation import check_tenant
from retrieval.search.retriever import HybridRetriever

SHOWN_TO_THE_LLM = frozenset({"source", "created_at"})


class RetrievalNodeRetriever(BaseRetriever):
    """LlamaIndex's ``BaseRetriever`` on a :class:`HybridRetriever`, for one tenant.

    ``search_options`` go to every ``retrieve`` call (``mode``, ``limit``, ``task_id``,
    ``neighbors``, ``config``, ...); ``aretrieve`` runs on the library's bounded thread pool.
    """

    def __init__(
        self, retriever: HybridRetriever, *, tenant_id: str, **search_options: Any
    ) -> None:
        check_tenant(tenant_id)
        self._search = Search(retriever, tenant_id, search_options)
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(*row) for row in self._search.run(query_bundle.query_str)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(*row) for row in await self._search.arun(query_bundle.query_str)]


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
