"""A memory's versions: the chain of corrections it belongs to, in the order they held.

A correction (``supersedes``) links the memories it retires to itself (``superseded_by``); a
memory's history is every memory reachable over those links, either way, so that a correction
of two memories at once (a merge) shows both. Each version is valid from its ``created_at``
until it was retired (or expired).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.memory.get_and_forget import Lookup
from retrieval.memory.records import Memory, MemoryVersion

# The most versions one history returns (a chain longer than this is cut, oldest kept).
MAX_VERSIONS = 10_000


def memory_history(
    connection: Connection, schema: str, lookup: Lookup, tenant_id: str, memory_id: int
) -> list[MemoryVersion]:
    """The versions of ``memory_id`` (none if the tenant has no such memory)."""
    bind_tenant(connection, schema, tenant_id)
    links = statement("memory.version_links", schema)
    seen: set[int] = set()
    frontier = {memory_id}
    while frontier and len(seen) < MAX_VERSIONS:
        seen |= frontier
        rows = execute(connection, links, {"tenant_id": tenant_id, "ids": sorted(frontier)})
        found = {one for row in rows for one in (row.id, row.superseded_by) if one is not None}
        frontier = found - seen
    memories = lookup.memories(connection, tenant_id, sorted(seen)[:MAX_VERSIONS])
    if memory_id not in {memory.id for memory in memories}:
        return []
    took_over = _took_over(memories)
    memories.sort(key=lambda memory: (took_over[memory.id], memory.id))
    return [_version(memory) for memory in memories]


def _took_over(memories: list[Memory]) -> dict[int, datetime]:
    """When each version became the valid one: its ``created_at``, or, for a memory that
    superseded others later (an older memory told again as a correction), the time it retired
    them."""
    took_over = {memory.id: memory.created_at for memory in memories}
    for memory in memories:
        newer = memory.superseded_by
        if newer in took_over and memory.retired_at is not None:
            took_over[newer] = max(took_over[newer], memory.retired_at)
    return took_over


def _version(memory: Memory) -> MemoryVersion:
    ends = [end for end in (memory.retired_at, memory.expires_at) if end is not None]
    return MemoryVersion(
        memory=memory, valid_from=memory.created_at, valid_until=min(ends) if ends else None
    )
