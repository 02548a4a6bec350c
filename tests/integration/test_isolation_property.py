"""Isolation as a property: random tenants (whitespace, case, Unicode look-alikes and forms)
through every read, write and forget call; no call ever sees or removes another tenant's row,
as the tables' owner and as an application role bound by row-level security.

Each example runs a random sequence of calls against a model of which rows each tenant holds,
and checks after each call that the database still holds exactly the model's rows.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from retrieval.arguments import tenant_problem
from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.errors import ValidationError
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever
from tests.conftest import CountingEmbedder, PgDatabase

# Look-alikes of one tenant: equal to the eye, or after stripping, folding or normalizing.
# Each valid one is a tenant of its own; the others must be refused by every call.
LOOK_ALIKES = [
    "beta",
    "Beta",
    "BETA",
    "beta ",
    " beta",
    "beta\t",
    "beta\n",
    "\u2028beta\u2029",
    "beta\u00a0",
    "b\u00e9ta",  # é composed
    unicodedata.normalize("NFD", "b\u00e9ta"),  # e + combining accent
    "\u03b2eta",  # Greek beta
    "be\u200bta",  # zero-width space inside
    "beta\x00",
    "be\x07ta",
    "stra\u00dfe",
    "strasse",
    "",
]
TENANTS = st.one_of(
    st.sampled_from(LOOK_ALIKES),
    st.text(alphabet=st.sampled_from("ab \t\u00e9\u0301\u00a0\u200b\x00"), max_size=4),
)
TEXTS = [
    "The deploy key lives in the vault.",
    "Ann prefers tea in the morning.",
    "Checkout times out when the payment API is slow.",
    "The on-call rotation changes every Monday.",
]
QUERIES = ["Where is the deploy key?", "What does Ann drink?", "Why does checkout time out?"]

OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("remember"), TENANTS, st.sampled_from(TEXTS)),
        st.tuples(st.just("remember_many"), TENANTS, st.sampled_from(TEXTS)),
        st.tuples(st.just("decide"), TENANTS, st.sampled_from(TEXTS)),
        st.tuples(st.just("document"), TENANTS, st.sampled_from(TEXTS)),
        st.tuples(st.just("retrieve"), TENANTS, st.sampled_from(QUERIES)),
        st.tuples(st.just("get"), TENANTS, st.just("")),
        st.tuples(st.just("timeline"), TENANTS, st.just("")),
        st.tuples(st.just("bm25"), TENANTS, st.sampled_from(QUERIES)),
        st.tuples(st.just("forget_ids"), TENANTS, st.just("")),
        st.tuples(st.just("forget_everything"), TENANTS, st.just("")),
    ),
    min_size=1,
    max_size=14,
)


@dataclass
class Model:
    """Which rows each tenant holds, as the calls so far should have left them."""

    memories: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    decisions: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    documents: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def all_memory_ids(self) -> list[int]:
        return sorted(i for ids in self.memories.values() for i in ids)


Rows = tuple[set[tuple[str, int]], set[tuple[str, int]], set[tuple[str, str]]]


def _stored(database: PgDatabase) -> Rows:
    with database.engine.connect() as connection:
        return (
            {(t, i) for t, i in connection.execute(text(_ROWS.format("id", "memories")))},
            {(t, i) for t, i in connection.execute(text(_ROWS.format("id", "decisions")))},
            {(t, d) for t, d in connection.execute(text(_ROWS.format("doc_id", "documents")))},
        )


_ROWS = "SELECT tenant_id, {} FROM retrieval.{}"


def _expected(model: Model) -> Rows:
    return (
        {(t, i) for t, ids in model.memories.items() for i in ids},
        {(t, i) for t, ids in model.decisions.items() for i in ids},
        {(t, d) for t, ids in model.documents.items() for d in ids},
    )


def _run(
    operation: str,
    tenant: str,
    argument: str,
    model: Model,
    store: MemoryStore,
    retriever: HybridRetriever,
    documents: DocumentStore,
) -> None:
    if operation == "remember":
        model.memories[tenant].add(store.remember(argument, tenant_id=tenant))
    elif operation == "remember_many":
        ids = store.remember_many(
            [
                {"text": argument, "tenant_id": tenant},
                {"text": argument + " Again.", "tenant_id": tenant},
            ]
        )
        model.memories[tenant].update(ids)
    elif operation == "decide":
        decision = store.record_decision(
            tenant_id=tenant, task_id="t1", action_type="plan", content=argument, status="done"
        )
        model.decisions[tenant].add(decision)
        store.record_tool_call(
            tenant_id=tenant, decision_id=decision, tool_name="search", params={}, result=None
        )
    elif operation == "document":
        doc_id = f"doc-{len(model.documents[tenant])}"
        documents.add(DocumentInput(tenant_id=tenant, doc_id=doc_id, chunks=[ChunkInput(argument)]))
        model.documents[tenant].add(doc_id)
    elif operation == "retrieve":
        response = retriever.retrieve(argument, tenant_id=tenant, neighbors=1)
        for result in response.results:
            if result.source == "semantic":
                assert result.metadata["id"] in model.memories[tenant], result
            if result.source == "episodic" and result.metadata.get("item") == "decision":
                assert result.metadata["id"] in model.decisions[tenant], result
    elif operation == "get":
        found = store.get_memories(model.all_memory_ids(), tenant_id=tenant)
        assert {m.id for m in found} == model.memories[tenant]
        assert all(m.tenant_id == tenant for m in found)
    elif operation == "timeline":
        events = retriever.timeline(tenant, limit=500)
        assert {e.id for e in events if e.item == "memory"} == model.memories[tenant]
        assert {e.id for e in events if e.item == "decision"} == model.decisions[tenant]
    elif operation == "bm25":
        hits = documents.bm25(argument, tenant_id=tenant)
        own = _chunk_ids(store, tenant)
        assert {chunk_id for chunk_id, _ in hits} <= own
    elif operation == "forget_ids":
        every = model.all_memory_ids() or [1]
        forgotten = store.forget(tenant_id=tenant, memory_ids=every)
        assert set(forgotten.memory_ids) == model.memories[tenant]
        model.memories[tenant] = set()
    elif operation == "forget_everything":
        forgotten = store.forget(tenant_id=tenant, everything=True)
        assert set(forgotten.memory_ids) == model.memories[tenant]
        assert set(forgotten.decision_ids) == model.decisions[tenant]
        model.memories[tenant] = set()
        model.decisions[tenant] = set()
        model.documents[tenant] = set()


def _chunk_ids(store: MemoryStore, tenant: str) -> set[int]:
    with store.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT id FROM retrieval.document_chunks WHERE tenant_id = :t"), {"t": tenant}
        )
        return {int(row[0]) for row in rows}


@pytest.mark.parametrize("role", ["owner", "application"])
def test_no_call_ever_crosses_tenants(
    database: PgDatabase,
    store: MemoryStore,
    counting_embedder: CountingEmbedder,
    request: pytest.FixtureRequest,
    role: str,
) -> None:
    # The owner is not bound by row-level security (the WHERE clauses alone isolate); the
    # application's role is bound by it too.
    if role == "application":
        store = MemoryStore(request.getfixturevalue("app_engine"), embedder=counting_embedder)
    retriever = HybridRetriever.from_store(store, background_writes=False)
    documents = DocumentStore(store)

    @settings(
        max_examples=150,
        deadline=None,
        derandomize=True,  # the same examples on every run: CI is reproducible
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(OPERATIONS)
    def calls_keep_to_their_tenant(operations: list[tuple[str, str, str]]) -> None:
        with database.engine.begin() as connection:
            connection.execute(
                text(
                    "TRUNCATE retrieval.memories, retrieval.decisions, retrieval.tool_calls, "
                    "retrieval.documents, retrieval.document_chunks, retrieval.memory_entities "
                    "CASCADE"
                )
            )
        model = Model()
        for operation, tenant, argument in operations:
            valid = tenant_problem(tenant) is None
            before = _stored(database)
            if valid:
                _run(operation, tenant, argument, model, store, retriever, documents)
            else:
                with pytest.raises(ValidationError, match="tenant_id"):
                    _run(operation, tenant, argument, model, store, retriever, documents)
            after = _stored(database)
            assert after == _expected(model), (operation, tenant)
            if not valid:
                assert after == before

    calls_keep_to_their_tenant()
    retriever.close()
