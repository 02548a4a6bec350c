"""What the inspector reads that the library's API does not: each tenant's holdings, a
memory's thread, a decision's tool calls, the size of a task (its events are the library's timeline,
:func:`retrieval.search.timeline.timeline`).

Every statement names its tenant (bound), and on a connection row-level security binds, the
tenant is named to the policies too. The statements live in ``retrieval/sql/inspector.sql``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from retrieval.db.queries import execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import translate_database_errors

# The turns before and after a memory that its page shows.
THREAD_AROUND = 3
# The tool calls a decision's page lists.
MAX_CALLS_SHOWN = 200


@dataclass
class Holdings:
    """What one tenant holds: memories by kind, decisions, tool calls, documents, last write."""

    tenant_id: str
    memories_by_kind: dict[str, int] = field(default_factory=dict)
    decisions: int = 0
    tool_calls: int = 0
    documents: int = 0
    last_write: datetime | None = None

    @property
    def memories(self) -> int:
        """All the tenant's memories."""
        return sum(self.memories_by_kind.values())


@dataclass(frozen=True)
class Turn:
    """A turn of a memory's thread."""

    id: int
    kind: str
    content: str
    position: int
    created_at: datetime


@dataclass(frozen=True)
class CallLine:
    """A tool call as a decision's page lists it."""

    id: int
    tool_name: str
    result: str | None
    created_at: datetime


class InspectorReads:
    """The inspector's statements on ``engine`` in ``schema``."""

    def __init__(self, engine: Engine, schema: str) -> None:
        self.engine = engine
        self.schema = schema

    def holdings(self, tenant_id: str | None = None) -> list[Holdings]:
        """Every tenant's holdings (or only ``tenant_id``'s), by tenant id."""
        rows = self._rows(
            tenant_id, statement("inspector.holdings", self.schema), {"tenant_id": tenant_id}
        )
        found: dict[str, Holdings] = {}
        for item, tenant, kind, count, last in rows:
            held = found.setdefault(tenant, Holdings(tenant))
            if item == "memory":
                held.memories_by_kind[kind] = count
            elif item == "decision":
                held.decisions = count
            elif item == "tool_call":
                held.tool_calls = count
            else:
                held.documents = count
            if held.last_write is None or last > held.last_write:
                held.last_write = last
        return [found[tenant] for tenant in sorted(found)]

    def thread_turns(self, tenant_id: str, thread_id: str, position: int) -> list[Turn]:
        """The turns of ``thread_id`` within :data:`THREAD_AROUND` positions of ``position``."""
        params = {
            "tenant_id": tenant_id,
            "thread_id": thread_id,
            "position": position,
            "around": THREAD_AROUND,
        }
        return [
            Turn(*row)
            for row in self._rows(
                tenant_id, statement("inspector.thread_turns", self.schema), params
            )
        ]

    def task_size(self, tenant_id: str, task_id: str) -> tuple[int, int]:
        """How many decisions ``task_id`` has, and how many tool calls carry them out."""
        params = {"tenant_id": tenant_id, "task_id": task_id}
        decisions, calls = self._rows(
            tenant_id, statement("inspector.task_size", self.schema), params
        )[0]
        return int(decisions), int(calls)

    def decision_tool_calls(self, tenant_id: str, decision_id: int) -> list[CallLine]:
        """The tool calls of ``decision_id``, oldest first (at most :data:`MAX_CALLS_SHOWN`)."""
        params = {"tenant_id": tenant_id, "decision_id": decision_id, "limit": MAX_CALLS_SHOWN}
        query = statement("inspector.decision_tool_calls", self.schema)
        return [CallLine(*row) for row in self._rows(tenant_id, query, params)]

    def _rows(self, tenant_id: str | None, query: str, params: dict[str, Any]) -> list[Any]:
        with translate_database_errors(str(self.engine.url)), self.engine.connect() as connection:
            if tenant_id is not None:
                bind_tenant(connection, self.schema, tenant_id)
            return list(execute(connection, query, params).all())
