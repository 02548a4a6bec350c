"""Whether a call's statement runs on a generic plan, planned once per connection, or on a
custom plan, planned for its own values on every call.

The read statement is long (every source a chain of CTEs), and planning it for each call's
values costs about a quarter of its time at a tenant of 100,000 memories. After a few calls
psycopg prepares it, and PostgreSQL can then run it on a plan made once, without the values:
the generic plan. That plan prices ``tenant_id = $1`` at the rows the table's statistics give
a tenant it does not know (its rows over its distinct tenants, at most the commonest tenant's
share: the ``memory_generic`` presence row). Where the tenant's real size is not that, the
generic plan can choose the wrong road: at a tenant of 10% among 92, priced at 1%, it read the
tenant's rows through their btree and sorted them instead of walking the HNSW graph, four to
five times slower (docs/decisions/0039).

So the generic plan runs only where its picture of the tenant holds: the estimate is within a
factor :data:`GENERIC_ESTIMATE_FACTOR` of the tenant's memories, or the tenant is read exactly
and a tenant of the estimate's size would be too (both small for the table, where the btree is
the road). It never runs where a value the plan cannot see chooses an index: a metadata
filter, a namespace, keys, or a mode's kinds (a rare kind is read through its btree, a common
one through the graph); nor for a statement Citus routes (it refuses a generic plan of it; a
read on the tenant's shards runs one there, docs/decisions/0069), nor for a role bound by
row-level security (the statistics are hidden from it), nor before the tenant's size is known.
Every other call is planned for its values, as before, its statement written with every CTE
materialized, which plans in less (docs/decisions/0062). Measured in docs/decisions/0039.
"""

from __future__ import annotations

from retrieval.db.read_pool import PLAN_CACHE_MODE  # the session setting that chooses
from retrieval.search.knowledge import TenantView
from retrieval.search.plan.exact_read import reads_exactly

__all__ = ["CUSTOM", "GENERIC", "PLAN_CACHE_MODE", "generic_plan_fits", "plan_cache_mode"]

GENERIC = "force_generic_plan"
CUSTOM = "force_custom_plan"
GENERIC_ESTIMATE_FACTOR = 2.0  # the generic plan's tenant within this factor of the real one


def generic_plan_fits(
    tenant: TenantView, *, exact: bool, scoped: bool, factor: float, pool: int
) -> bool:
    """Whether the statement of a call for ``tenant`` may run on a generic plan: its size within
    :data:`GENERIC_ESTIMATE_FACTOR` of the generic plan's estimate, or the tenant read exactly
    (``exact``) as a tenant of the estimate's size would be; never for a ``scoped`` call (a
    filter, a namespace, keys or a mode's kinds choose its index), for a statement Citus routes
    (it keeps no generic plan of it), under row-level security, or while the tenant's size or
    the estimate is unknown. On the worker that holds a tenant's shards (the schema's read
    function) both are the shard's."""
    memories, estimate = tenant.memories, tenant.generic_memories
    if scoped or tenant.routed or tenant.bound or memories is None or estimate <= 0:
        return False
    low, high = sorted((max(memories, 1), estimate))
    if high <= GENERIC_ESTIMATE_FACTOR * low:
        return True
    return exact and reads_exactly(estimate, tenant.table_rows, factor, pool)


def plan_cache_mode(generic: bool) -> str:
    """The ``plan_cache_mode`` value of a statement on a generic plan or a custom one."""
    return GENERIC if generic else CUSTOM
