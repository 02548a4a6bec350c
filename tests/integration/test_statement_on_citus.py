"""On a Citus cluster the read statement is planned twice a call (its coordinator, then the
worker), so it is written with every CTE materialized, each planned apart: the same rows as the
statement one server reads. Here a retriever is told its database is a coordinator (what
``ReadConnections.distributed`` reads from the catalog), on the embedded server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import pytest

from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever
from tests.acme_memories import AS_OF, remember_acme

QUESTIONS = (
    "Which database do we run the billing service on?",
    "Why did the nightly deploy fail?",
    "Where did Bo move to?",
    "When is the project deadline?",
    "Which orchestrator does the staging cluster run?",
)
_INLINED = re.compile(r"^\w+ AS \(", re.MULTILINE)
_MATERIALIZED = re.compile(r"^\w+ AS MATERIALIZED \(", re.MULTILINE)


@pytest.fixture
def retrievers(store: MemoryStore) -> Iterator[tuple[HybridRetriever, HybridRetriever]]:
    config = RetrievalConfig(record_access=False)
    with (
        HybridRetriever.from_store(store, config=config, background_writes=False) as one,
        HybridRetriever.from_store(store, config=config, background_writes=False) as cluster,
    ):
        cluster._reads.distributed = lambda: True  # type: ignore[method-assign]
        yield one, cluster


def test_a_read_on_citus_materializes_every_cte_and_finds_what_one_server_finds(
    store: MemoryStore, retrievers: tuple[HybridRetriever, HybridRetriever]
) -> None:
    remember_acme(store)
    # A correction, found through the fact it replaced.
    told = AS_OF - timedelta(days=2)
    fact = store.remember("The staging cluster runs Kubernetes 1.29.", tenant_id="acme",
                          created_at=told)  # fmt: skip
    correction = store.remember("We moved staging to Nomad.", tenant_id="acme",
                                created_at=told + timedelta(hours=1), supersedes=fact)  # fmt: skip
    one, cluster = retrievers
    sent: list[str] = []
    execute = cluster._reads.execute

    def spy(query: str, params: dict[str, object], **options: object) -> object:
        sent.append(query)
        return execute(query, params, **options)  # type: ignore[arg-type]

    cluster._reads.execute = spy  # type: ignore[method-assign]
    for question in QUESTIONS:
        for _ in range(2):  # a first call, and one after the tenant's presence is known
            here = one.retrieve(question, tenant_id="acme", as_of=AS_OF)
            there = cluster.retrieve(question, tenant_id="acme", as_of=AS_OF)
            assert [(r.source, r.content, r.final_score) for r in there] == [
                (r.source, r.content, r.final_score) for r in here
            ]
            assert here.results
    found = cluster.retrieve(QUESTIONS[-1], tenant_id="acme", as_of=AS_OF).results[0]
    assert (found.metadata["id"], found.metadata["found_through"]) == (correction, fact)
    # The read statements (not the short one reading the turns around given hits after them).
    reads = [query for query in sent if query.startswith("WITH semantic")]
    assert reads
    for query in reads:
        assert not _INLINED.search(query)
        assert len(_MATERIALIZED.findall(query)) >= 10
