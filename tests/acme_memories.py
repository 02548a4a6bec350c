"""acme's memories of every kind a read statement reads, told three days before :data:`AS_OF`:
short facts an hour apart (one updating another), a thread's two turns, a decision and its
tool call. The tests that run the read statement as a cluster would (over the shards, through
the read function, routed) store them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore

AS_OF = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def remember_acme(store: MemoryStore) -> None:
    """Store acme's memories, decision and tool call in ``store``."""
    told = AS_OF - timedelta(days=3)
    store.remember_many(
        MemoryInput(text=text, tenant_id="acme", created_at=told + timedelta(hours=n))
        for n, text in enumerate(
            (
                "The billing service runs on PostgreSQL 16.",
                "The project deadline is March 1.",
                "The project deadline slipped to April 15.",
                "The search service stores its index in Elasticsearch.",
            )
        )
    )
    store.remember_many(
        MemoryInput(text=text, tenant_id="acme", kind="message", thread_id="chat", position=n,
                    created_at=told + timedelta(minutes=n))
        for n, text in enumerate(
            ("Ana: How did the move go?", "Bo: Exhausting, but we are in Riverside now.")
        )
    )  # fmt: skip
    decision = store.record_decision(
        tenant_id="acme", task_id="deploy", action_type="investigate",
        content="Quarantine the flaky payment test; the nightly deploy failed on it",
        status="done", created_at=told,
    )  # fmt: skip
    store.record_tool_call(
        tenant_id="acme", decision_id=decision, tool_name="ci.logs",
        params={"job": "nightly deploy"}, result="failed: test_payment flaky", created_at=told,
    )  # fmt: skip
