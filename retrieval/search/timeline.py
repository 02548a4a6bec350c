"""The timeline: what happened in a tenant's memory in a window of time, newest first.

Memories (by their kind), decisions (kind ``decision``) and tool calls (kind ``tool_call``) in
one statement, each branch on its ``(tenant_id, created_at DESC)`` index.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from retrieval import arguments
from retrieval.arguments import aware_datetime, check_tenant
from retrieval.db.queries import blocks, execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import ValidationError, translate_database_errors
from retrieval.memory.kinds import describe_kinds

EPISODIC_KINDS = ("decision", "tool_call")


@dataclass(frozen=True)
class TimelineEvent:
    """One thing that happened: a memory stored, a decision taken or a tool called."""

    source: str
    item: str
    id: int
    kind: str
    content: str
    created_at: datetime
    details: dict[str, Any]


def timeline(
    engine: Engine,
    schema: str,
    tenant_id: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    kinds: Sequence[str] | None = None,
    limit: int = 50,
    memory_kinds: Collection[str] | None = None,
) -> list[TimelineEvent]:
    """Events of ``tenant_id`` with ``since <= created_at < until``, newest first.

    ``kinds`` filters: memory kinds, ``decision`` and ``tool_call``; with ``memory_kinds``
    (the kinds a store accepts) any other is a :class:`ValidationError` that lists them."""
    aware_datetime("since", since)
    aware_datetime("until", until)
    if since is not None and until is not None and since >= until:
        raise ValidationError(f"since ({since}) must be before until ({until})", field="since")
    limit = arguments.count("limit", limit, maximum=arguments.MAX_TIMELINE_EVENTS)
    if kinds is not None:
        kinds = arguments.names("kinds", kinds)
        if memory_kinds is not None:
            _check_kinds(kinds, memory_kinds)
    check_tenant(tenant_id)
    window = blocks("search")["timeline_window"].strip()
    query = statement("search.timeline", schema, window=window)
    params = {
        "tenant_id": tenant_id,
        "since": since,
        "until": until,
        "kinds": list(kinds) if kinds is not None else None,
        "limit": limit,
    }
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        bind_tenant(connection, schema, tenant_id)
        rows = execute(connection, query, params).all()
    return [TimelineEvent(*row) for row in rows]


def _check_kinds(kinds: Sequence[str], memory_kinds: Collection[str]) -> None:
    unknown = [k for k in kinds if k not in memory_kinds and k not in EPISODIC_KINDS]
    if unknown:
        known = describe_kinds(frozenset(memory_kinds))
        raise ValidationError(
            f"kinds: {unknown[0]!r:.60} is not a kind: use memory kinds ({known}) or "
            f"{', '.join(EPISODIC_KINDS)}",
            field="kinds",
        )
