"""When the semantic source reads a tenant exactly (retrieval.search.plan.exact_read): from
the sizes its statements counted (retrieval.search.knowledge), n^2 <= factor x pool x N, asked
for again once stale."""

from __future__ import annotations

import pytest

from retrieval.search import knowledge
from retrieval.search.knowledge import MEMORIES, MEMORY_TABLE
from retrieval.search.knowledge import TenantSizes as Learnt
from retrieval.search.plan.exact_read import reads_exactly


class TenantSizes(Learnt):
    """The sizes learnt, and the plan's choice from them."""

    def read_exactly(self, tenant_id: str, factor: float, pool: int) -> bool:
        return reads_exactly(self.memories(tenant_id), self.table_rows, factor, pool)


def test_a_tenant_not_seen_yet_goes_through_the_graph_and_is_asked_for() -> None:
    sizes = TenantSizes()
    assert sizes.stale("acme")
    assert not sizes.read_exactly("acme", 4.0, 90)


def test_the_choice_follows_the_sizes_learnt() -> None:
    sizes = TenantSizes()
    sizes.learn("small", {MEMORIES: 10_000, MEMORY_TABLE: 1_000_000})
    sizes.learn("large", {MEMORIES: 100_000, MEMORY_TABLE: 1_000_000})
    # 10,000^2 = 1e8 <= 4 x 90 x 1e6 = 3.6e8; 100,000^2 = 1e10 is not.
    assert sizes.read_exactly("small", 4.0, 90)
    assert not sizes.read_exactly("large", 4.0, 90)
    assert not sizes.read_exactly("small", 0.0, 90)  # 0: always the graph
    assert not sizes.read_exactly("small", 1.0, 90)  # 1e8 > 9e7
    assert not sizes.stale("small")


def test_a_statement_without_the_size_rows_teaches_nothing() -> None:
    sizes = TenantSizes()
    sizes.learn("acme", {"documents": 3})
    assert sizes.stale("acme") and not sizes.read_exactly("acme", 4.0, 90)


def test_a_table_never_analyzed_reads_only_an_empty_tenant_exactly() -> None:
    sizes = TenantSizes()
    sizes.learn("empty", {MEMORIES: 0, MEMORY_TABLE: 0})
    sizes.learn("acme", {MEMORIES: 5, MEMORY_TABLE: 0})
    assert sizes.read_exactly("empty", 4.0, 90)
    assert not sizes.read_exactly("acme", 4.0, 90)


def test_sizes_go_stale_and_the_next_count_replaces_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(knowledge.time, "monotonic", lambda: now[0])
    sizes = TenantSizes()
    sizes.learn("acme", {MEMORIES: 1_000, MEMORY_TABLE: 100_000})
    assert sizes.read_exactly("acme", 4.0, 90) and not sizes.stale("acme")
    now[0] += knowledge.REFRESH_SECONDS + 1
    assert sizes.stale("acme")
    assert sizes.read_exactly("acme", 4.0, 90)  # stale sizes still decide until replaced
    sizes.learn("acme", {MEMORIES: 90_000, MEMORY_TABLE: 100_000})  # the tenant grew
    assert not sizes.read_exactly("acme", 4.0, 90) and not sizes.stale("acme")
