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
    before = AS_OF - timedelta(hours=1)  # as_of reads what was stored by then
    store.remember("Alice prefers dark mode in her editor", tenant_id="acme", created_at=before)
    store.remember(
        "Other tenant: the deploy failed on a full disk", tenant_id="other", created_at=before
    )
    decision = store.record_decision(
        tenant_id="acme",
        task_id="deploy-7",
        action_type="fix",
        content="raised the migration lock timeout after the deploy failed",
        status="done",
        created_at=before,
    )
    store.record_tool_call(
        tenant_id="acme",
        decision_id=decision,
        tool_name="kubectl",
        params={"op": "rollout"},
        result="deploy rolled out",
        created_at=before,
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


def test_langchain_takes_k_in_the_constructor_and_per_call_with_the_other_options(
    retriever: HybridRetriever,
) -> None:
    lc = RetrievalRetriever(retriever=retriever, tenant_id="acme", k=2)
    assert len(lc.invoke("deploy")) == 2
    assert len(lc.invoke("deploy", k=1)) == 1
    assert len(RetrievalRetriever.of(retriever, tenant_id="acme", k=1).invoke("deploy")) == 1
    # Per-call options reach retrieve(): the task narrows the episodic source.
    episodic = lc.invoke("deploy", k=5, task_id="deploy-7 ", mode="session_recovery")
    assert any(d.metadata["source"] == "episodic" for d in episodic)
    again = asyncio.run(lc.ainvoke("deploy", k=1))
    assert len(again) == 1
    for bad, field in (({"k": 0}, "k"), ({"k": "3"}, "k"), ({"k": 5000}, "k"),
                       ({"neighbors": 99}, "neighbors"), ({"limt": 3}, "limt"),
                       ({"tenant_id": "other"}, "tenant_id")):  # fmt: skip
        with pytest.raises(ValidationError) as raised:
            lc.invoke("deploy", **bad)
        assert raised.value.field == field
    with pytest.raises(ValidationError, match="k must be an integer") as raised:
        RetrievalRetriever(retriever=retriever, tenant_id="acme", k="ten")
    assert raised.value.field == "k"


def test_the_langchain_tenant_is_fixed_and_a_copy_reads_its_own(
    retriever: HybridRetriever,
) -> None:
    lc = RetrievalRetriever.of(retriever, tenant_id="other")
    assert "Other tenant" in lc.invoke("deploy failed")[0].page_content
    with pytest.raises(ValidationError, match="tenant_id is fixed") as raised:
        lc.tenant_id = "acme"
    assert raised.value.field == "tenant_id"
    assert lc.tenant_id == "other"
    # A copy made for another tenant reads that tenant, never the first one's memory.
    copy = lc.model_copy(update={"tenant_id": "acme"})
    found = copy.invoke("deploy failed")
    assert found and all("Other tenant" not in d.page_content for d in found)
    assert all("Other tenant" in d.page_content for d in lc.invoke("deploy failed"))
    # The other fields are read at each call.
    lc.k = 1
    assert len(lc.invoke("deploy failed")) == 1
    with pytest.raises(ValidationError):
        lc.k = -1


def test_llamaindex_takes_similarity_top_k_and_its_tenant_is_fixed(
    retriever: HybridRetriever,
) -> None:
    li = RetrievalNodeRetriever(retriever, tenant_id="acme", similarity_top_k=2)
    assert len(li.retrieve("deploy")) == 2
    li.similarity_top_k = 1
    assert len(li.retrieve("deploy")) == 1
    with pytest.raises(ValidationError, match="similarity_top_k"):
        li.similarity_top_k = 0
    with pytest.raises(ValidationError, match="tenant_id is fixed"):
        li.tenant_id = "other"  # type: ignore[misc]
    assert all("Other tenant" not in n.node.get_content() for n in li.retrieve("deploy"))
    with pytest.raises(ValidationError, match="unknown search option"):
        RetrievalNodeRetriever(retriever, tenant_id="acme", top_k=3)


def test_a_llamaindex_query_engine_answers_with_the_retrieved_source_nodes(
    retriever: HybridRetriever,
) -> None:
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    li = RetrievalNodeRetriever(retriever, tenant_id="acme", similarity_top_k=3, as_of=AS_OF)
    engine = RetrieverQueryEngine.from_args(li, llm=MockLLM())
    response = engine.query("why did the deploy fail")
    sources = response.source_nodes
    assert 1 <= len(sources) <= 3
    contents = [node.node.get_content() for node in sources]
    assert "The deploy failed because the database migration timed out" in contents
    scores = [node.score for node in sources]
    assert all(score is not None and 0.0 <= score <= 1.0 for score in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert "Other tenant" not in str(response)


def test_build_context_reads_the_tenant_of_each_call(retriever: HybridRetriever) -> None:
    from retrieval import build_context

    for tenant, own in (("acme", "migration timed out"), ("other", "full disk")):
        context = build_context(retriever, "why did the deploy fail", [], tenant_id=tenant)
        contents = [result.content for result in context.response or ()]
        assert contents and any(own in content for content in contents)
        assert all(("Other tenant" in content) == (tenant == "other") for content in contents)


def test_the_frameworks_and_build_context_see_only_live_memories(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    from retrieval import build_context

    old = store.remember(
        "The deploy failed because the disk of the runner was full", tenant_id="acme"
    )
    new = store.remember(
        "The deploy failed because the runner's disk filled with old images",
        tenant_id="acme",
        supersedes=old,
    )
    gone = store.remember(
        "The deploy failed because a temporary token expired",
        tenant_id="acme",
        created_at=AS_OF - timedelta(days=2),
        expires_at=AS_OF - timedelta(days=1),
    )
    query = "why did the deploy fail"
    lc = RetrievalRetriever.of(retriever, tenant_id="acme", k=10)
    langchain = {d.metadata.get("id") for d in lc.invoke(query)}
    li = RetrievalNodeRetriever(retriever, tenant_id="acme", similarity_top_k=10)
    llama = {n.node.metadata.get("id") for n in li.retrieve(query)}
    context = build_context(retriever, query, [], tenant_id="acme", limit=10)
    built = {r.metadata.get("id") for r in context.response or () if r.source == "semantic"}
    for seen in (langchain, llama, built):
        assert new in seen and old not in seen and gone not in seen


def test_the_frameworks_filter_by_metadata_in_their_own_conventions(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    from llama_index.core.vector_stores.types import (
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
    )

    for user, text in (("u1", "u1 deployed on Monday"), ("u2", "u2 deployed on Friday")):
        store.remember(
            f"Deploy note: {text}",
            tenant_id="acme",
            metadata={"user": user, "tags": ["deploy", user]},
            created_at=AS_OF - timedelta(hours=2),
            namespace=["users", user],
        )
    # LangChain: a vector store's filter, per call or in the options of every call.
    lc = RetrievalRetriever(retriever=retriever, tenant_id="acme", k=10)
    found = lc.invoke("deploy", filter={"user": {"$eq": "u1"}}, as_of=AS_OF)
    assert [d.page_content for d in found] == ["Deploy note: u1 deployed on Monday"]
    every = RetrievalRetriever(retriever=retriever, tenant_id="acme",
                               search_options={"filter": {"user": {"$in": ["u2"]}}})  # fmt: skip
    assert [d.page_content for d in every.invoke("deploy", as_of=AS_OF)] == [
        "Deploy note: u2 deployed on Friday"
    ]
    scoped = lc.invoke("deploy", namespace=["users", "u2"], as_of=AS_OF)
    assert [d.page_content for d in scoped] == ["Deploy note: u2 deployed on Friday"]
    # LlamaIndex: MetadataFilters.
    li = RetrievalNodeRetriever(
        retriever, tenant_id="acme", as_of=AS_OF,
        filters=MetadataFilters(filters=[
            MetadataFilter(key="tags", value="deploy", operator=FilterOperator.CONTAINS),
            MetadataFilter(key="user", value="u1", operator=FilterOperator.NE),
        ]),
    )  # fmt: skip
    assert [n.node.get_content() for n in li.retrieve("deploy")] == [
        "Deploy note: u2 deployed on Friday"
    ]
    # OR and NOT join as $or and $not, inside the one statement.
    li.filters = MetadataFilters(
        filters=[MetadataFilter(key="user", value="u1"), MetadataFilter(key="user", value="u2")],
        condition=FilterCondition.OR,
    )
    either = {n.node.get_content() for n in li.retrieve("deploy")}
    li.filters = MetadataFilters(
        filters=[MetadataFilter(key="user", value="u1")], condition=FilterCondition.NOT
    )
    not_u1 = {n.node.get_content() for n in li.retrieve("deploy")}
    assert either == {"Deploy note: u1 deployed on Monday", "Deploy note: u2 deployed on Friday"}
    # NOT keeps a memory without the key too (it is not u1's).
    assert not_u1 == {
        "Deploy note: u2 deployed on Friday",
        "The deploy failed because the database migration timed out",
    }
    li.filters = MetadataFilters(
        filters=[MetadataFilter(key="user", value="u1", operator=FilterOperator.TEXT_MATCH)]
    )
    with pytest.raises(ValidationError, match="not supported"):
        li.retrieve("deploy")
