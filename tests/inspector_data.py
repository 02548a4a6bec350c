"""The inspector's tests' memory: two tenants, a conversation, decisions of a task, a stored
``<script>``, on two days."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from retrieval.memory.store import MemoryStore

SCRIPT = '<script>document.title = "pwned"; window.pwned = true;</script> remember this'
DAY_ONE = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
DAY_TWO = datetime(2026, 11, 21, 15, 30, tzinfo=UTC)


@dataclass(frozen=True)
class Stored:
    """The ids of what :func:`fill` stored."""

    turns: list[int]
    facts: list[int]
    script: int
    decisions: list[int]
    tool_calls: list[int]
    other_tenant: list[int]


def fill(store: MemoryStore) -> Stored:
    """Store the tests' memory of tenants ``acme`` and ``globex``."""
    turns = [
        store.remember(
            text,
            tenant_id="acme",
            kind="message",
            thread_id="standup",
            position=position,
            created_at=DAY_ONE.replace(minute=position),
        )
        for position, text in enumerate(
            [
                "Alice: the invoice search is slow again this morning",
                "Bob: the title filter scans the whole documents table",
                "Alice: should we add a trigram index on documents.title?",
                "Bob: yes, a GIN trigram index makes ILIKE fast",
                "Alice: I will add it after lunch",
            ]
        )
    ]
    facts = [
        store.remember(
            "The invoice search uses an ILIKE filter on documents.title",
            tenant_id="acme",
            kind="episteme",
            entities=["invoices", "search"],
            metadata={"source": "code review", "ticket": 42},
            importance=0.8,
            created_at=DAY_TWO,
        ),
        store.remember(
            "Deploys happen on Tuesdays after the standup",
            tenant_id="acme",
            kind="directive",
            created_at=DAY_TWO.replace(hour=16),
        ),
    ]
    script = store.remember(SCRIPT, tenant_id="acme", kind="fact", created_at=DAY_TWO)
    decisions = [
        store.record_decision(
            tenant_id="acme",
            task_id="speed-up-search",
            action_type="fix",
            content="add a trigram index on documents.title for the invoice search",
            status="done",
        ),
        store.record_decision(
            tenant_id="acme",
            task_id="speed-up-search",
            action_type="check",
            content="measure the invoice search p95 after the index",
            status="done",
        ),
    ]
    tool_calls = [
        store.record_tool_call(
            tenant_id="acme",
            decision_id=decisions[0],
            tool_name="run_sql",
            params={"sql": "CREATE INDEX ON documents USING gin (title gin_trgm_ops)"},
            result="CREATE INDEX",
        )
    ]
    other = [
        store.remember(
            "Globex keeps its invoices in a separate search cluster",
            tenant_id="globex",
            kind="fact",
            created_at=DAY_ONE,
        )
    ]
    return Stored(turns, facts, script, decisions, tool_calls, other)
