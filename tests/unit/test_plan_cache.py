"""When a call's statement runs on a generic plan (retrieval.search.plan.plan_cache): only where
the generic plan's estimate of a tenant is the tenant, never where a value it cannot see
chooses an index, and the plan stage names the choice in the statement's settings."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from retrieval.embedding.calibration import UNCALIBRATED
from retrieval.search.config import RetrievalConfig
from retrieval.search.knowledge import MEMORIES, MEMORY_GENERIC, MEMORY_TABLE, TenantSizes
from retrieval.search.knowledge import TenantView as View
from retrieval.search.plan.plan_cache import (
    CUSTOM,
    GENERIC,
    PLAN_CACHE_MODE,
    generic_plan_fits,
)
from retrieval.search.plan.read_plan import plan_read
from retrieval.search.prepare.call import prepare_call

AS_OF = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
# One tenant holding the whole table: the generic plan prices it as it is.
ALONE = View(size_stale=False, memories=100_000, table_rows=100_000, generic_memories=100_000)
# Among 92 tenants of 100,000 rows a generic plan prices any tenant at about 1,087 memories.
SMALL = replace(ALONE, memories=100, generic_memories=1_087)  # read exactly, as 1,087 would be
LARGE = replace(ALONE, memories=10_000, generic_memories=1_087)  # the graph, priced at 1%


def _fits(tenant: View, *, exact: bool, scoped: bool = False) -> bool:
    return generic_plan_fits(tenant, exact=exact, scoped=scoped, factor=4.0, pool=40)


def test_a_generic_plan_where_its_estimate_of_the_tenant_holds() -> None:
    assert _fits(ALONE, exact=False)
    assert _fits(replace(ALONE, memories=60_000), exact=False)  # within a factor of 2
    assert _fits(SMALL, exact=True)  # both small for the table: the btree either way
    # Read exactly, the estimate just past the line of an exact read but within 2x (a
    # conversation's tenant of 419 among three, priced at 484).
    assert _fits(View(size_stale=False, memories=419, table_rows=1_451, generic_memories=484),
                 exact=True)  # fmt: skip


def test_a_custom_plan_where_the_generic_plan_would_misjudge_the_tenant() -> None:
    assert not _fits(LARGE, exact=False)  # priced at 1%, it would sort the tenant's rows
    assert not _fits(replace(ALONE, memories=40_000), exact=False)  # 2.5x under the estimate
    # A small tenant in a table whose generic estimate is large: the generic plan could scan.
    assert not _fits(replace(SMALL, generic_memories=50_000), exact=True)


def test_never_where_a_value_it_cannot_see_decides_or_nothing_is_known() -> None:
    assert not _fits(ALONE, exact=False, scoped=True)  # a filter, a namespace or keys
    assert not _fits(replace(ALONE, distributed=True), exact=False)  # Citus refuses one
    assert not _fits(replace(ALONE, bound=True), exact=False)  # statistics hidden from it
    assert not _fits(replace(ALONE, memories=None), exact=False)  # size not seen yet
    assert not _fits(replace(ALONE, generic_memories=0), exact=False)  # no statistics yet


def test_the_estimate_is_learnt_with_the_sizes() -> None:
    sizes = TenantSizes()
    assert sizes.generic_memories == 0
    sizes.learn("acme", {MEMORIES: 100, MEMORY_TABLE: 100_000, MEMORY_GENERIC: 1_087})
    assert (sizes.memories("acme"), sizes.table_rows, sizes.generic_memories) == (
        100,
        100_000,
        1_087,
    )
    sizes.learn("acme", {MEMORIES: 120})  # a statement without the table's rows keeps them
    assert sizes.generic_memories == 1_087


def test_each_tenant_is_judged_by_the_table_that_held_it() -> None:
    # On Citus each tenant's statement counts its own shard: an isolated tenant's shard holds
    # it alone, and what it counted is no other tenant's table.
    sizes = TenantSizes()
    sizes.learn("big", {MEMORIES: 40_000, MEMORY_TABLE: 40_000, MEMORY_GENERIC: 40_000})
    sizes.learn("small", {MEMORIES: 300, MEMORY_TABLE: 30_000, MEMORY_GENERIC: 250})
    assert sizes.table_of("big") == (40_000, 40_000)
    assert sizes.table_of("small") == (30_000, 250)
    assert sizes.table_of("new") == (30_000, 250)  # not seen yet: the last table seen
    sizes.learn("big", {MEMORIES: 40_100})  # a statement without the table's rows keeps its own
    assert sizes.table_of("big") == (40_000, 40_000)


def _mode(tenant: View, **options: object) -> str:
    call = prepare_call(
        "why did the orders migration time out?",
        tenant_id="acme",
        config=None,
        default=RetrievalConfig(),
        as_of=AS_OF,
        **options,  # type: ignore[arg-type]
    )
    return plan_read(call, tenant, UNCALIBRATED).settings[PLAN_CACHE_MODE]


def test_the_plan_names_its_choice_in_the_statements_settings() -> None:
    assert _mode(ALONE) == GENERIC
    assert _mode(LARGE) == CUSTOM
    assert _mode(View()) == CUSTOM  # a tenant not seen yet
    assert _mode(ALONE, filter={"project": "orders"}) == CUSTOM
    assert _mode(ALONE, namespace=("alice",)) == CUSTOM
    assert _mode(ALONE, mode="knowledge_lookup") == CUSTOM  # the mode's kinds
    assert _mode(ALONE, mode="session_recovery") == CUSTOM
