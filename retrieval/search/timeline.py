"""The timeline: what happened in a tenant's memory in a window of time, newest first.

Memories (by their kind), decisions (kind ``decision``) and tool calls (kind ``tool_call``) in
one statement, each branch on its ``(tenant_id, created_at DESC)`` index. The API
(:meth:`HybridRetriever.timeline`), the CLI, the MCP tool and the inspector's pages all read it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine

from retrieval import arguments
from retrieval.arguments import aware_datetime, check_tenant
from retrieval.db.queries import blocks, execute, statement
from retrieval.db.row_security import bind_tenant
from retrieval.errors import ValidationError, translate_database_errors
from retrieval.memory.json_text import whole_value_text
from retrieval.memory.kinds import describe_kinds, nearest_kind
from retrieval.memory.namespaces import IN_NAMESPACE
from retrieval.search.statement.common import live_sql

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
    # A memory's thread and its place in it; a decision's task (a tool call's, through its
    # decision).
    thread_id: str | None = None
    position: int | None = None
    task_id: str | None = None

    @property
    def superseded_by(self) -> int | None:
        """The memory that retired this one by a correction, if any."""
        found = self.details.get("superseded_by") if self.item == "memory" else None
        return None if found is None else int(found)

    def retired(self, moment: datetime) -> bool:
        """Whether this memory had been retired by ``moment`` (a correction dated later leaves
        it live until then)."""
        retired_at = self.details.get("retired_at") if self.item == "memory" else None
        return retired_at is not None and datetime.fromisoformat(str(retired_at)) <= moment

    def expired(self, moment: datetime) -> bool:
        """Whether this memory's life had ended by ``moment``."""
        expires_at = self.details.get("expires_at") if self.item == "memory" else None
        return expires_at is not None and datetime.fromisoformat(str(expires_at)) <= moment

    @property
    def summary(self) -> str:
        """The event as one reads it in a list: a decision led by its action type and status;
        an item of a key-value store whose text is its whole value (no field held text) as its
        key and its fields, an empty one said so, not as JSON."""
        if self.item == "decision":
            return f"{self.details['action_type']} ({self.details['status']}): {self.content}"
        key, value = self.details.get("key"), self.details.get("metadata")
        if key is not None and isinstance(value, dict) and value:
            if self.content != whole_value_text(value):
                return self.content
            fields = "; ".join(
                f"{name}: {'(empty)' if held in ('', None) else held}"
                for name, held in value.items()
            )
            return f"{key}: {fields}"
        return self.content

    @property
    def namespace(self) -> tuple[str, ...]:
        """A memory's namespace (``()``: the tenant's top, or not a memory)."""
        return tuple(self.details.get("namespace") or ())

    @property
    def key(self) -> str | None:
        """A memory's key, if it has one."""
        found = self.details.get("key")
        return None if found is None else str(found)


@dataclass(frozen=True)
class TimelineCursor:
    """Where a page of the timeline ended: its last event's time, item and id."""

    created_at: datetime
    item: str
    id: int

    @classmethod
    def after(cls, event: TimelineEvent) -> TimelineCursor:
        """The cursor just after ``event``: the next page starts there."""
        return cls(event.created_at, event.item, event.id)


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
    thread_id: str | None = None,
    task_id: str | None = None,
    after: TimelineCursor | None = None,
    as_of: datetime | None = None,
    include_retired: bool = False,
    namespace: Sequence[str] | None = None,
) -> list[TimelineEvent]:
    """Events of ``tenant_id`` with ``since <= created_at < until``, newest first (then by
    item, then newest id).

    ``kinds`` filters: memory kinds, ``decision`` and ``tool_call``; with ``memory_kinds``
    (the kinds a store accepts) any other is a :class:`ValidationError` that lists them.
    ``thread_id`` keeps a thread's memories, ``task_id`` a task's decisions and their tool
    calls; ``after`` (the cursor of a page's last event) the events after it.

    Memories are those live at ``as_of`` (default now): neither retired by a correction nor
    expired then; with ``as_of``, only what was stored by then, decisions and tool calls too
    (the timeline as it stood). ``include_retired`` shows retired and expired memories as well
    (``details`` says when each was retired or expires, and each memory's namespace and key).
    ``namespace`` keeps the memories in it and below it (decisions and tool calls lie in none:
    a timeline that names one shows memories alone)."""
    aware_datetime("as_of", as_of)
    include_retired = arguments.flag("include_retired", include_retired)
    aware_datetime("since", since)
    aware_datetime("until", until)
    if since is not None and until is not None and since >= until:
        raise ValidationError(f"since ({since}) must be before until ({until})", field="since")
    limit = arguments.count("limit", limit, maximum=arguments.MAX_TIMELINE_EVENTS)
    if kinds is not None:
        kinds = arguments.names("kinds", kinds)
        if memory_kinds is not None:
            _check_kinds(kinds, memory_kinds)
    thread_id = arguments.optional_name("thread_id", thread_id)
    task_id = arguments.optional_name("task_id", task_id)
    scope = arguments.namespace("namespace", namespace)
    check_tenant(tenant_id)
    params = {
        "tenant_id": tenant_id,
        "since": since,
        "until": until,
        "after_at": after.created_at if after else None,
        "after_item": after.item if after else None,
        "after_id": after.id if after else None,
        "kinds": list(kinds) if kinds is not None else None,
        "thread_id": thread_id,
        "task_id": task_id,
        "limit": limit,
        "as_of": as_of or datetime.now(UTC),
        "known_at": as_of,
        "include_retired": include_retired,
        "namespace": list(scope) if scope else None,
    }
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        bind_tenant(connection, schema, tenant_id)
        rows = execute(connection, _statement(schema), params).all()
    return [TimelineEvent(*row) for row in rows]


def _statement(schema: str) -> str:
    """The timeline's statement for ``schema``, each branch with its window."""
    window = blocks("search")["timeline_window"].strip()
    return statement(
        "search.timeline",
        schema,
        memory_window=window.format(t="m", item="memory", kind="m.kind"),
        decision_window=window.format(t="d", item="decision", kind="'decision'"),
        tool_call_window=window.format(t="t", item="tool_call", kind="'tool_call'"),
        memory_live=live_sql("m"),
        in_namespace=IN_NAMESPACE,
    )


def _check_kinds(kinds: Sequence[str], memory_kinds: Collection[str]) -> None:
    unknown = [k for k in kinds if k not in memory_kinds and k not in EPISODIC_KINDS]
    if unknown:
        known = describe_kinds(frozenset(memory_kinds))
        near = nearest_kind(unknown[0], frozenset(memory_kinds) | set(EPISODIC_KINDS))
        hint = f"did you mean {near!r}? " if near else ""
        raise ValidationError(
            f"kinds: {unknown[0]!r:.60} is not a kind: {hint}use memory kinds ({known}) or "
            f"{', '.join(EPISODIC_KINDS)}",
            field="kinds",
        )
