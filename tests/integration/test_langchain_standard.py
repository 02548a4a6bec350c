"""LangChain's own standard suite for retrievers, run on ``RetrievalRetriever`` whole.

The suite builds the retriever from ``retriever_constructor_params``; the memories it searches
are stored by an autouse fixture under a tenant of the test's own, and forgotten after.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from retrieval.integrations.langchain import RetrievalRetriever
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever

DEPLOYS = (
    "The payments service is deployed every Tuesday after the canary passes.",
    "Deploys of the payments service need a second reviewer's approval.",
    "A failed payments deploy is rolled back with the previous container image.",
    "The payments deploy pipeline runs the database migrations before the rollout.",
    "Payments deploys are frozen during the last week of the quarter.",
)
_tenants = itertools.count()


class TestRetrievalRetrieverStandard(RetrieversIntegrationTests):
    """``RetrieversIntegrationTests`` of langchain-tests, none overridden."""

    @pytest.fixture(autouse=True)
    def _memories(self, store: MemoryStore) -> Iterator[None]:
        self.tenant = f"standard-{next(_tenants)}"
        store.remember_many([{"text": text, "tenant_id": self.tenant} for text in DEPLOYS])
        with HybridRetriever.from_store(store, background_writes=False) as hybrid:
            self.hybrid = hybrid
            yield
        store.forget(tenant_id=self.tenant, everything=True)

    @property
    def retriever_constructor(self) -> type[RetrievalRetriever]:
        return RetrievalRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"retriever": self.hybrid, "tenant_id": self.tenant}

    @property
    def retriever_query_example(self) -> str:
        return "how is the payments service deployed"
