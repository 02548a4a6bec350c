"""The timeline: what happened in a tenant's memory in a window of time, newest first.

Memories (by their kind), decisions (kind ``decision``) and tool calls (kind ``tool_call``) in
one statement, each branch on its ``(tenant_id, created_at DESC)`` index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, text

from retrieval.db.row_security import bind_tenant
from retrieval.errors import ValidationError, translate_database_errors
from retrieval.memory.validation import aware_datetime, check_storable, check_tenant

_BRANCH_WINDOW = (
    "tenant_id = :tenant_id AND (CAST(:since AS timestamptz) IS NULL OR created_at >= :since) "
    "AND (CAST(:until AS timestamptz) IS NULL OR created_at < :until)"
)
_TIMELINE = """
(SELECT 'semantic' AS source, 'memory' AS item, id, kind, content, created_at,
        jsonb_build_object('metadata', metadata, 'importance', importance) AS details
 FROM "{schema}".memories
 WHERE {window} AND (CAST(:kinds AS text[]) IS NULL OR kind = ANY(CAST(:kinds AS text[])))
 ORDER BY created_at DESC, id DESC LIMIT :limit)
UNION ALL
(SELECT 'episodic', 'decision', id, 'decision', content, created_at,
        jsonb_build_object('task_id', task_id, 'action_type', action_type, 'status', status)
 FROM "{schema}".decisions
 WHERE {window} AND (CAST(:kinds AS text[]) IS NULL OR 'decision' = ANY(CAST(:kinds AS text[])))
 ORDER BY created_at DESC, id DESC LIMIT :limit)
UNION ALL
(SELECT 'episodic', 'tool_call', id, 'tool_call',
        tool_name || ' ' || params::text || COALESCE(' -> ' || result, ''), created_at,
        jsonb_build_object('tool_name', tool_name, 'params', params, 'result', result,
                           'decision_id', decision_id)
 FROM "{schema}".tool_calls
 WHERE {window} AND (CAST(:kinds AS text[]) IS NULL OR 'tool_call' = ANY(CAST(:kinds AS text[])))
 ORDER BY created_at DESC, id DESC LIMIT :limit)
ORDER BY created_at DESC, item, id DESC
LIMIT :limit
"""


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
) -> list[TimelineEvent]:
    """Events of ``tenant_id`` with ``since <= created_at < until``, newest first."""
    aware_datetime("since", since)
    aware_datetime("until", until)
    if since is not None and until is not None and since >= until:
        raise ValidationError(f"since ({since}) must be before until ({until})", field="since")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError(f"limit must be an integer >= 1, got {limit!r}", field="limit")
    if isinstance(kinds, str):
        raise ValidationError("kinds must be a list of kinds, not one string", field="kinds")
    check_tenant(tenant_id)
    for kind in kinds or ():
        check_storable("kinds", kind)
    statement = text(_TIMELINE.format(schema=schema, window=_BRANCH_WINDOW))
    params = {
        "tenant_id": tenant_id,
        "since": since,
        "until": until,
        "kinds": list(kinds) if kinds is not None else None,
        "limit": limit,
    }
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        bind_tenant(connection, schema, tenant_id)
        rows = connection.execute(statement, params).all()
    return [TimelineEvent(*row) for row in rows]
