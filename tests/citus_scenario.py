"""One pass through the whole public API on a database, and what it left there.

The same calls, with the same data and the same times, run on one server and on a Citus
cluster give the same ids, scores, events and statistics: :func:`run_scenario` makes them and
returns a :class:`Fingerprint` of everything a caller sees and every statistic the writes kept.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from retrieval import AsyncHybridRetriever, AsyncMemoryStore
from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.embedding.models import Embedder
from retrieval.integrations.mem0 import Memory
from retrieval.memory.export import export_records
from retrieval.memory.file_ingest import ingest, read_file
from retrieval.memory.reembed import reembed
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever

AS_OF = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
TENANTS = ("acme", "globex", "initech")
QUERIES = (
    "Why did the deploy fail?",
    "Where does the deploy key live?",
    "what did Ann say about the migration",
    "rotate the vault credentials",
    "did the replica lag clear?",
)
MODES = ("semantic", "session_recovery", "knowledge_lookup")


@dataclass
class Fingerprint:
    """What the scenario saw and left: results, events, exports and statistics."""

    results: dict[str, list[tuple[str, int, float, float, float]]]
    events: dict[str, list[tuple[str, int, str]]]
    exports: dict[str, list[str]]
    statistics: dict[str, list[tuple[Any, ...]]]
    forgotten: list[tuple[Any, ...]]
    scoped: dict[str, list[Any]]


def _memories(tenant: str) -> list[dict[str, Any]]:
    start = AS_OF - timedelta(days=3)
    facts = [
        ("The deploy failed because the database migration timed out", "critique"),
        ("The deploy key lives in the vault, rotated monthly", "fact"),
        ("Ann prefers the blue-green deploy for the payments service", "episteme"),
        ("Rotate the vault credentials before every audit", "directive"),
        (f"{tenant} runs PostgreSQL 18 with pgvector on two nodes", "fact"),
    ]
    return [
        {"text": content, "tenant_id": tenant, "kind": kind, "importance": 0.5,
         "created_at": start + timedelta(hours=i), "entities": ["deploy"] if i % 2 else []}
        for i, (content, kind) in enumerate(facts)
    ]  # fmt: skip


def _transcript(path: Path) -> Path:
    turns = [
        ("Ann", "The migration of the orders table timed out again"),
        ("Bo", "Did you raise the lock timeout?"),
        ("Ann", "Yes, to ten seconds, and the deploy went through"),
        ("Bo", "Then rotate the vault key tomorrow"),
    ]
    lines = [
        {"id": f"turn-{i}", "speaker": who, "text": said, "session": "standup",
         "time": (AS_OF - timedelta(days=1, minutes=60 - i)).isoformat()}
        for i, (who, said) in enumerate(turns)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def write_everything(store: MemoryStore, tmp: Path) -> None:
    """Every write path: single and batched memories of several tenants, decisions and tool
    calls, a keyed transcript (run twice), documents."""
    store.remember(**_memories("acme")[0])
    store.remember_many([m for tenant in TENANTS for m in _memories(tenant)[1:]])
    _over_time(store)
    _messages_without_a_thread(store)
    for tenant in TENANTS:
        decision = store.record_decision(
            tenant_id=tenant, task_id="deploy-7", action_type="fix",
            content="raised the migration lock timeout after the deploy failed",
            status="done", created_at=AS_OF - timedelta(hours=5),
        )  # fmt: skip
        store.record_tool_calls(
            [
                {"tenant_id": tenant, "decision_id": decision, "tool_name": "kubectl",
                 "params": {"op": "rollout", "service": "payments"},
                 "result": "deploy rolled out", "created_at": AS_OF - timedelta(hours=4)},
                {"tenant_id": tenant, "decision_id": None, "tool_name": "vault",
                 "params": {"op": "rotate"}, "result": "key rotated",
                 "created_at": AS_OF - timedelta(hours=3)},
            ]
        )  # fmt: skip
    transcript = _transcript(tmp / "standup.jsonl")
    for _ in range(2):  # keyed: the second run stores nothing
        ingest(store, read_file(transcript, store, tenant_id="acme"))
    documents = DocumentStore(store)
    for tenant in TENANTS[:2]:
        documents.add(
            DocumentInput(
                tenant_id=tenant, doc_id="runbook.md", filename="runbook.md",
                chunks=[ChunkInput("Restore a backup with pg_restore into a new database"),
                        ChunkInput("Rotate the vault key after restoring the deploy secrets")],
                created_at=AS_OF - timedelta(days=2),
            )
        )  # fmt: skip


def _messages_without_a_thread(store: MemoryStore) -> None:
    """A chat stored as messages without a thread: a session inferred from time (a batch, then
    one message a call, embedded with the stored one before it)."""
    said = [
        'Ann said, "The replica lagged behind during the migration"',
        'Bo said, "Did the lag clear after the vacuum?"',
        'Ann said, "Yes, within a minute, and the deploy went on"',
    ]
    start = AS_OF - timedelta(hours=6)
    for tenant in TENANTS:
        store.remember_many(
            {"text": text, "tenant_id": tenant, "kind": "message",
             "created_at": start + timedelta(minutes=i)}
            for i, text in enumerate(said[:2])
        )  # fmt: skip
        store.remember(said[2], tenant_id=tenant, kind="message",
                       created_at=start + timedelta(minutes=2))  # fmt: skip


def _over_time(store: MemoryStore) -> None:
    """A copy told again, a correction found by similar(), a memory that expired."""
    copies = store.remember_many(_memories("globex")[:2])
    assert copies.duplicates == 1  # the second is globex's stored fact
    for tenant in TENANTS:
        old = store.similar("The deploy key lives in the vault", tenant_id=tenant, limit=1)
        corrected = store.remember(
            "The deploy key lives in the vault, rotated weekly since the audit",
            tenant_id=tenant, supersedes=old[0].memory.id, created_at=AS_OF - timedelta(hours=2),
        )  # fmt: skip
        if tenant == "initech":  # corrected again: the first version leads to the last
            store.remember(
                "The deploy key moved to the hardware security module", tenant_id=tenant,
                supersedes=corrected, created_at=AS_OF - timedelta(hours=1),
            )  # fmt: skip
        store.remember(
            "The door code of the server room is 4411", tenant_id=tenant,
            created_at=AS_OF - timedelta(days=2), expires_at=AS_OF - timedelta(hours=1),
        )  # fmt: skip


def read_everything(retriever: HybridRetriever) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every read path: each query in each mode, with neighbours, a task, a working state,
    entities; the timelines."""
    results: dict[str, Any] = {}
    for tenant in TENANTS:
        for query in QUERIES:
            for mode in MODES:
                response = retriever.retrieve(query, tenant_id=tenant, mode=mode, as_of=AS_OF)
                results[f"{tenant}|{query}|{mode}"] = _ranked(response)
            response = retriever.retrieve(
                query, tenant_id=tenant, as_of=AS_OF, neighbors=1, task_id="deploy-7",
                entities=["deploy"], limit=5,
                working_state=[{"role": "user", "content": "the deploy is failing again"}],
            )  # fmt: skip
            results[f"{tenant}|{query}|all options"] = _ranked(response)
    events = {
        tenant: [(e.item, e.id, e.kind) for e in retriever.timeline(tenant, limit=100)]
        for tenant in TENANTS
    }
    for tenant in TENANTS:  # the past as it stood, and every version
        then = AS_OF - timedelta(days=2, hours=12)
        events[f"{tenant}|then"] = [
            (e.item, e.id, e.kind) for e in retriever.timeline(tenant, as_of=then, limit=100)
        ]
        events[f"{tenant}|retired"] = [
            (e.item, e.id, e.kind)
            for e in retriever.timeline(tenant, include_retired=True, limit=100)
        ]
        response = retriever.retrieve("Where does the deploy key live?", tenant_id=tenant,
                                      as_of=AS_OF - timedelta(days=1))  # fmt: skip
        results[f"{tenant}|before the correction"] = _ranked(response)
    return results, events


PEOPLE = {
    "alice": [
        "Alice is allergic to peanuts",
        "Alice flies KLM to Amsterdam",
        "Alice runs the deploys",
    ],
    "bob": ["Bob moved to Denver", "Bob owns the vault rotation", "Bob prefers tea"],
}
FILTERS = {
    "one": {"city": "Denver"},
    "or": {"$or": [{"topic": "travel"}, {"topic": "ops"}]},
    "not": {"$not": {"topic": "ops"}},
    "contains": {"note": {"$icontains": "VAULT"}},
    "any value": {"topic": "*"},
}


def read_scoped(store: MemoryStore) -> dict[str, list[Any]]:
    """Scopes below the tenant (namespaces, and Mem0's user ids through its interface) and
    the logical and text filters, on every read and erase they narrow: what a caller sees, by
    text (ids and times are each server's own)."""
    seen: dict[str, list[Any]] = {}
    topics = {"peanuts": "food", "KLM": "travel", "deploys": "ops", "Denver": "travel",
              "vault": "ops", "tea": "food"}  # fmt: skip
    for person, facts in PEOPLE.items():
        store.remember_many(
            {"text": fact, "tenant_id": "acme", "namespace": ("people", person),
             "created_at": AS_OF - timedelta(hours=8, minutes=i),
             "metadata": {"topic": next(t for w, t in topics.items() if w in fact),
                          "note": fact, "city": "Denver" if "Denver" in fact else None}}
            for i, fact in enumerate(facts)
        )  # fmt: skip
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        for name, condition in FILTERS.items():
            for namespace in (("people",), ("people", "bob")):
                response = retriever.retrieve(
                    "what do we know about them", tenant_id="acme", namespace=namespace,
                    filter=condition, as_of=AS_OF, limit=10,
                )  # fmt: skip
                seen[f"{name}|{'/'.join(namespace)}"] = sorted(r.content for r in response)
        seen["timeline bob"] = sorted(
            e.kind for e in retriever.timeline("acme", namespace=("people", "bob"), limit=100)
        )
    forgot = store.forget(tenant_id="acme", namespace=("people", "bob"))
    seen["forgot bob"] = [len(forgot.memory_ids)]
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        response = retriever.retrieve("Bob", tenant_id="acme", namespace=("people",), as_of=AS_OF)
        seen["after forgetting bob"] = sorted(r.content for r in response)
    with Memory(store, tenant_id="globex") as memory:
        for person, facts in PEOPLE.items():
            memory.add([{"role": "user", "content": fact} for fact in facts], user_id=person)
        memory.add("Carol reviews the deploys", agent_id="reviewer")
        for name, filters in {
            "alice": {"user_id": "alice"},
            "alice or bob": {"OR": [{"user_id": "alice"}, {"user_id": "bob"}]},
            "not alice": {"NOT": [{"user_id": "alice"}]},
            "any user": {"user_id": "*"},
            "contains": {"AND": [{"user_id": "bob"}, {"role": {"contains": "us"}}]},
        }.items():
            found = memory.search("who handles the deploys and the vault", filters=filters)
            seen[f"mem0 search {name}"] = sorted(r["memory"] for r in found["results"])
        seen["mem0 all bob"] = sorted(r["memory"] for r in memory.get_all(user_id="bob")["results"])
        first = memory.get_all(user_id="alice")["results"][0]
        memory.update(first["id"], "Alice flies Air France to Amsterdam")
        seen["mem0 history"] = [
            (h["event"], h["old_memory"], h["new_memory"]) for h in memory.history(first["id"])
        ]
        memory.delete_all(user_id="bob")
        seen["mem0 all after"] = sorted(
            r["memory"] for r in memory.get_all(filters={"user_id": "*"})["results"]
        )
    return seen


async def _read_async(store: MemoryStore) -> list[tuple[str, int, float, float, float]]:
    async with (
        AsyncMemoryStore(store) as writer,
        AsyncHybridRetriever.from_store(writer, background_writes=False) as reader,
    ):
        await writer.remember(
            "Async writes reach the same shards", tenant_id="globex", created_at=AS_OF
        )
        return _ranked(await reader.retrieve("async shards", tenant_id="globex", as_of=AS_OF))


def _ranked(response: Any) -> list[tuple[str, int, float, float, float]]:
    return [
        (r.source, int(r.metadata.get("id", -1)), r.final_score, r.relevance_score, r.recency_score)
        for r in response
    ]


STATISTICS = {
    "memory_term_stats": "SELECT tenant_id, term, document_frequency FROM {s}.memory_term_stats",
    "memory_corpus": "SELECT tenant_id, text_search_config, memories, total_terms, "
    "sampled_memories FROM {s}.memory_corpus",
    "episodic_vocabulary": "SELECT tenant_id, token, rows FROM {s}.episodic_vocabulary",
    "episodic_postings": "SELECT p.tenant_id, v.token, p.created_at, p.item, p.row_id "
    "FROM {s}.episodic_postings AS p JOIN {s}.episodic_vocabulary AS v "
    "ON v.tenant_id = p.tenant_id AND v.id = p.token_id",
    "document_term_stats": "SELECT * FROM {s}.document_term_stats",
    "document_corpus": "SELECT * FROM {s}.document_corpus",
    "memories": "SELECT tenant_id, id, content, thread_id, position, access_count, seen_count, "
    "last_seen_at, expires_at, retired_at, superseded_by FROM {s}.memories",
}


def _corrected(store: MemoryStore, tenant: str) -> int:
    # The correction of the deploy key's memory (found by its words: ids differ by server).
    found = store.similar(
        "The deploy key lives in the vault, rotated weekly since the audit",
        tenant_id=tenant,
        limit=1,
    )
    return found[0].memory.id


def statistics(engine: Engine, schema: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every statistic the writes keep, sorted (as the owner: every tenant)."""
    with engine.connect() as connection:
        return {
            name: sorted(tuple(row) for row in connection.execute(text(query.format(s=schema))))
            for name, query in STATISTICS.items()
        }


def run_scenario(
    engine: Engine,
    schema: str,
    embedder: Embedder,
    tmp: Path,
    *,
    admin: Engine | None = None,
) -> Fingerprint:
    """The whole API on ``schema`` of ``engine``, from an empty migrated schema; the
    statistics are read across tenants through ``admin`` (default: ``engine``)."""
    store = MemoryStore(engine, schema=schema, embedder=embedder)
    write_everything(store, tmp)
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        results, events = read_everything(retriever)
        retriever.flush()
    results["async"] = asyncio.run(_read_async(store))
    exports = {
        tenant: [json.dumps(line, sort_keys=True, default=str)
                 for line in export_records(store, tenant)]
        for tenant in TENANTS
    }  # fmt: skip
    # Re-embedding one tenant's memories marked as another model's.
    with engine.begin() as connection:
        connection.execute(
            text(
                f"UPDATE {schema}.memories SET embedding_model = 'old' WHERE tenant_id = 'initech'"
            )
        )
    reembed(store, tenant_id="initech")
    forgotten = [
        tuple(store.forget(tenant_id="acme", task_id="deploy-7").decision_ids),
        tuple(store.forget(tenant_id="globex", memory_ids=[7, 8]).memory_ids),
        tuple(store.forget(tenant_id="initech", everything=True).memory_ids),
        (DocumentStore(store).forget(tenant_id="acme", doc_id="runbook.md"),),
        tuple(store.forget(tenant_id="globex", expired=True).memory_ids),
        tuple(
            (v.memory.id, v.valid_from, v.valid_until)
            for v in store.history(_corrected(store, "acme"), tenant_id="acme")
        ),
    ]
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        after, _ = read_everything(retriever)
    results.update({f"after forget|{key}": value for key, value in after.items()})
    kept = statistics(admin or engine, schema)
    scoped = read_scoped(store)  # Mem0's interface writes at the time of the call: after
    return Fingerprint(results, events, exports, kept, forgotten, scoped)
