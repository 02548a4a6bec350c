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
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from retrieval.arguments import check_tenant
from retrieval.errors import ValidationError
from retrieval.integrations import _search
from retrieval.search.retriever import HybridRetriever

SHOWN_TO_THE_LLM = frozenset({"source", "created_at"})
COUNT = "similarity_top_k"
# LlamaIndex's filter operators as the library's (CONTAINS: a list at the key holds the value).
_OPERATORS = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
}


class RetrievalNodeRetriever(BaseRetriever):
    """LlamaIndex's ``BaseRetriever`` on a :class:`HybridRetriever`, for one tenant.

    ``similarity_top_k`` is the most nodes a call returns, as LlamaIndex's own retrievers name
    it (default: the library's ``total_limit``, 10); ``filters`` (LlamaIndex's
    ``MetadataFilters``, their conditions joined by AND) keep the memories and chunks whose
    metadata meets them (:func:`library_filter`); ``search_options`` go to every
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
        filters: MetadataFilters | None = None,
        **search_options: Any,
    ) -> None:
        self._tenant_id = check_tenant(tenant_id)
        self.retriever = retriever
        self.similarity_top_k = similarity_top_k
        self.filters = filters
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
        options = _search.call_options(
            self.search_options, self.similarity_top_k, {}, count_name=COUNT
        )
        if self.filters is not None:
            options["filter"] = library_filter(self.filters)
        return options

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


def library_filter(filters: MetadataFilters) -> dict[str, Any]:
    """LlamaIndex's ``MetadataFilters`` as the library's metadata filter: each filter's key with
    its operator (``==``, ``!=``, ``>``, ``>=``, ``<``, ``<=``, ``in``, ``nin``; ``contains``: a
    list at the key holds the value; ``is_empty``: no value at the key), joined as its
    ``condition`` says (AND, OR, or NOT of their AND: ``$and``, ``$or``, ``$not``), nested
    filters as nested groups. An operator the library has not is a
    :class:`~retrieval.errors.ValidationError`."""
    parts = [
        library_filter(item) if isinstance(item, MetadataFilters) else {item.key: _condition(item)}
        for item in filters.filters
    ]
    if filters.condition == FilterCondition.OR:
        return {"$or": parts}
    if filters.condition == FilterCondition.NOT:
        return {"$not": {"$and": parts}}
    found: dict[str, Any] = {}
    for part in parts:
        for key, condition in part.items():
            if key.startswith("$"):
                found.setdefault("$and", []).append({key: condition})
            else:
                _add(found, key, condition)
    return found


def _condition(item: MetadataFilter) -> dict[str, Any]:
    operator = item.operator
    if operator == FilterOperator.CONTAINS:
        return {"$all": [item.value]}
    if operator == FilterOperator.IS_EMPTY:
        return {"$exists": False}
    if operator not in _OPERATORS:
        raise ValidationError(
            f"filter operator {operator.value!r} on {item.key!r} is not supported: use ==, !=, "
            ">, >=, <, <=, in, nin, contains or is_empty",
            field="filters",
        )
    return {_OPERATORS[operator]: item.value}


def _add(found: dict[str, Any], key: str, condition: dict[str, Any]) -> None:
    # Several conditions on one key go in one object of operators; one operator twice is refused.
    held = found.setdefault(key, {})
    for operator, value in condition.items():
        if operator in held:
            raise ValidationError(
                f"filters give {key!r} the operator {operator} twice", field="filters"
            )
        held[operator] = value
