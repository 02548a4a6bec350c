"""Keys: a name for a memory within its namespace (revision 0019).

A memory remembered under a key supersedes the live memory of its tenant and namespace that
holds that key: the new one is the key's current version, the old one is retired at the new
one's time and kept for its history (:mod:`retrieval.memory.supersede`). A memory under an
expired key is retired at its expiry instead (it ended then). Writers of one tenant's keys queue
on the tenant's statistics lock, which every write of superseding memories takes first; of two
concurrent writers of a key, the one that commits last holds it (its memory, told now, is
stamped after the other's).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import ValidationError
from retrieval.memory.validation import ValidMemory

# (tenant, namespace, key)
_Place = tuple[str, tuple[str, ...], str]
# PostgreSQL's time resolution.
_TICK = timedelta(microseconds=1)


def with_keyed_versions(
    connection: Connection, schema: str, memories: Sequence[ValidMemory]
) -> list[ValidMemory]:
    """``memories``, each with a key also superseding the live memory that holds its key (and
    the expired ones there retired at their expiry). The caller holds the statistics lock of
    their tenants."""
    wanted: dict[_Place, int] = {}
    for index, memory in enumerate(memories):
        if memory.key is None:
            continue
        place = (memory.tenant_id, memory.namespace, memory.key)
        if place in wanted:
            raise ValidationError(
                f"key: items {wanted[place]} and {index} of the batch both name key "
                f"{memory.key!r} of namespace {memory.namespace!r}: give each key once",
                item=index,
                field="key",
            )
        wanted[place] = index
    held: dict[_Place, list[int]] = defaultdict(list)
    latest: dict[_Place, datetime] = {}
    for tenant in sorted({tenant for tenant, _, _ in wanted}):
        keys = sorted({key for owner, _, key in wanted if owner == tenant})
        bind_tenant(connection, schema, tenant)
        rows = execute(
            connection, statement("memory.keyed_live", schema), {"tenant_id": tenant, "keys": keys}
        ).all()
        expired = [row.id for row in rows if row.expired]
        if expired:
            execute(
                connection,
                statement("memory.retire_at_expiry", schema),
                {"tenant_id": tenant, "ids": expired},
            )
        for row in rows:
            if not row.expired:
                place = (tenant, tuple(row.namespace), row.key)
                held[place].append(int(row.id))
                if row.created_at >= row.now:  # stored by a writer that began after this one
                    latest[place] = max(latest.get(place, row.created_at), row.created_at)
    result = list(memories)
    for place, index in wanted.items():
        memory = result[index]
        older = [one for one in held.get(place, []) if one not in memory.supersedes]
        if older:
            memory = memory._replace(supersedes=memory.supersedes + tuple(older))
        if memory.created_at is None and place in latest:
            # A concurrent put of the key committed first, stamped after this transaction
            # began: this one, told now, comes after it.
            memory = memory._replace(created_at=latest[place] + _TICK)
        result[index] = memory
    return result
