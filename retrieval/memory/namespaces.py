"""A tenant's namespaces: the scopes below it that its memories lie in (revision 0018).

A memory's namespace is a path of names (``("users", "u1", "preferences")``; ``()``, the
tenant's top, by default). A namespace holds the memories whose path begins with it: reading,
listing and forgetting by namespace take the namespaces below it too. Tenancy stays the
boundary: every statement here names the tenant (row-level security and Citus as everywhere).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from retrieval import arguments
from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import ValidationError

# The most namespaces one call lists, and the furthest page.
MAX_LISTED = 1000
MAX_OFFSET = 10**9
MAX_DEPTH = arguments.MAX_NAMESPACE_DEPTH
# The condition "the memory m lies in %(namespace)s or below it", as the search reads it.
IN_NAMESPACE = statement("read_metadata.namespace", alias="m").strip()


def namespace_ids(
    connection: Connection, schema: str, tenant_id: str, namespace: tuple[str, ...]
) -> list[int]:
    """The ids of the tenant's memories (live or retired) in ``namespace`` or below it."""
    bind_tenant(connection, schema, tenant_id)
    query = statement("memory.namespace_ids", schema, in_namespace=IN_NAMESPACE)
    rows = execute(connection, query, {"tenant_id": tenant_id, "namespace": list(namespace)})
    return [int(row_id) for row_id in rows.scalars()]


def list_namespaces(
    connection: Connection,
    schema: str,
    tenant_id: str,
    *,
    prefix: Sequence[str] = (),
    suffix: Sequence[str] = (),
    max_depth: int | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[tuple[str, ...]]:
    """The tenant's namespaces that hold live memories (see :meth:`MemoryStore.namespaces
    <retrieval.memory.store.MemoryStore.namespaces>`)."""
    checked_prefix = arguments.namespace("prefix", prefix)
    checked_suffix = arguments.namespace("suffix", suffix)
    if max_depth is not None:
        max_depth = arguments.count("max_depth", max_depth, maximum=MAX_DEPTH)
    params = {
        "tenant_id": tenant_id,
        "prefix": list(checked_prefix),
        "suffix": list(checked_suffix),
        "max_depth": max_depth,
        "limit": arguments.count("limit", limit, maximum=MAX_LISTED),
        "offset": arguments.count("offset", offset, minimum=0, maximum=MAX_OFFSET),
    }
    bind_tenant(connection, schema, tenant_id)
    rows = execute(connection, statement("memory.namespaces", schema), params)
    return [tuple(names) for names in rows.scalars()]


def forgotten_namespace(value: object) -> tuple[str, ...]:
    """The namespace ``forget`` is given, checked: not the tenant's top (``everything``
    forgets that)."""
    namespace = arguments.namespace("namespace", value)
    if value is not None and not namespace:
        raise ValidationError(
            "namespace=() names the tenant's top, every memory: give a namespace with at "
            "least one name, or everything=True",
            field="namespace",
        )
    return namespace
