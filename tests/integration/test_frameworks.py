"""The LangChain and LlamaIndex retrievers, through the frameworks' own interfaces."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore

from retrieval.errors import ValidationError
from retrieval.integrations.langchain import RetrievalRetriever
from retrieval.integrations.llamaindex import RetrievalNodeRetriever
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever

AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    store.remember(
        "The deploy failed because the database migration timed out",
        tenant_id="acme",
        kind="critique",
        created_at=AS_OF - timedelta(days=1),
    )
    store.remember("Alice prefers dark mode in her editor", tenant_id="acme")
    store.remember("Other tenant: the deploy failed on a full disk", tenant_id="other")
    decision = store.record_decision(
        tenant_id="acme",
        task_id="deploy-7",
        action_type="fix",
        content="raised the migration lock timeout after the deploy failed",
        status="done",
    )
    store.record_tool_call(
        tenant_id="acme",
        decision_id=decision,
        tool_name="kubectl",
        params={"op": "rollout"},
        result="deploy rolled out",
    )
    with HybridRetriever.from_store(store, background_writes=False) as hybrid:
        yield hybrid


def _check_scores(metadata: dict[str, object]) -> None:
    for name in ("final_score", "relevance_score", "recency_score"):
        value = metadata[name]
        assert isinstance(value, float) and 0.0 <= value <= 1.0


def test_langchain_invoke_returns_documents_with_source_scores_ids_and_dates(
    retriever: HybridRetriever,
) -> None:
    lc = RetrievalRetriever.of(retriever, tenant_id="acme", as_of=AS_OF)
    documents = lc.invoke("why did the deploy fail")
    assert documents and all(isinstance(d, Document) for d in documents)
    assert [d.metadata["rank"] for d in documents] == list(range(1, len(documents) + 1))
    finals = [d.metadata["final_score"] for d in documents]
    assert finals == sorted(finals, reverse=True)
    best = next(d for d in documents if d.metadata["source"] == "semantic")
    assert best.page_content == "The deploy failed because the database migration timed out"
    assert best.metadata["kind"] == "critique"
    assert best.id == f"memory:{best.metadata['id']}"
    assert best.metadata["created_at"].startswith("2026-11-24")
    _check_scores(best.metadata)
    assert "Other tenant" not in " ".join(d.page_content for d in documents)
    sources = {d.metadata["source"] for d in documents}
    assert "episodic" in sources  # the decision or the tool call, by its keywords
    # The async path gives the same documents.
    again = asyncio.run(lc.ainvoke("why did the deploy fail"))
    assert [(d.id, d.metadata["final_score"]) for d in again] == [
        (d.id, d.metadata["final_score"]) for d in documents
    ]
    # Options reach retrieve(): one result only.
    assert len(RetrievalRetriever.of(retriever, tenant_id="acme", limit=1).invoke("deploy")) == 1
    with pytest.raises(ValidationError, match="tenant_id"):
        RetrievalRetriever.of(retriever, tenant_id="")


def test_llamaindex_retrieve_returns_nodes_scored_by_the_final_score(
    retriever: HybridRetriever,
) -> None:
    li = RetrievalNodeRetriever(retriever, tenant_id="acme", as_of=AS_OF)
    nodes = li.retrieve("why did the deploy fail")
    assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
    best = next(n for n in nodes if n.node.metadata["source"] == "semantic")
    assert best.node.get_content() == "The deploy failed because the database migration timed out"
    assert best.score == best.node.metadata["final_score"]
    assert best.node.node_id == f"memory:{best.node.metadata['id']}"
    _check_scores(best.node.metadata)
    scores = [n.score for n in nodes]
    assert scores == sorted(scores, reverse=True)
    shown = best.node.get_content(metadata_mode="llm")  # type: ignore[arg-type]
    assert "created_at" in shown and "relevance_score" not in shown
    again = asyncio.run(li.aretrieve("why did the deploy fail"))
    assert [(n.node.node_id, n.score) for n in again] == [(n.node.node_id, n.score) for n in nodes]
    assert "Other tenant" not in " ".join(n.node.get_content() for n in nodes)
