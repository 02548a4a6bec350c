"""The store API on the real PostgreSQL with the real model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from retrieval.db.schema import TABLES
from retrieval.errors import ValidationError
from retrieval.memory.records import MemoryInput
from retrieval.memory.reembed import pending
from retrieval.memory.store import MemoryStore
from tests.conftest import CountingEmbedder, PgDatabase, as_stored

WHEN = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)


def _counts(database: PgDatabase) -> dict[str, int]:
    with database.engine.connect() as connection:
        return {
            table: connection.execute(text(f"SELECT count(*) FROM retrieval.{table}")).scalar_one()
            for table in TABLES
        }


def test_remember_and_get_round_trip(
    store: MemoryStore, counting_embedder: CountingEmbedder
) -> None:
    memory_id = store.remember(
        "The staging database runs PostgreSQL 18.",
        tenant_id="acme",
        kind="episteme",
        metadata={"source": "runbook", "tags": ["db", "staging"]},
        importance=0.8,
        created_at=WHEN,
        entities=["staging-db", "postgres", "staging-db"],
    )
    memory = store.get_memory(memory_id, tenant_id="acme")
    assert memory is not None
    assert memory.id == memory_id
    assert memory.content == "The staging database runs PostgreSQL 18."
    assert memory.kind == "episteme"
    assert memory.metadata == {"source": "runbook", "tags": ["db", "staging"]}
    assert memory.importance == 0.8
    assert memory.created_at == WHEN
    assert memory.entities == ("postgres", "staging-db")
    assert memory.access_count == 0 and memory.last_accessed_at is None
    assert memory.embedding_model == counting_embedder.model_id
    expected = counting_embedder.inner.embed([memory.content])[0]
    assert np.allclose(memory.embedding, as_stored(expected), atol=1e-6)


def test_another_tenant_cannot_read_or_forget_it(store: MemoryStore) -> None:
    memory_id = store.remember("private note", tenant_id="acme")
    assert store.get_memory(memory_id, tenant_id="globex") is None
    forgotten = store.forget(tenant_id="globex", memory_ids=[memory_id])
    assert forgotten.memory_ids == () and forgotten.missing_memory_ids == (memory_id,)
    assert forgotten.missing == [f"memory {memory_id}"]
    assert store.get_memory(memory_id, tenant_id="acme") is not None


def test_forget_names_the_ids_it_did_not_find(store: MemoryStore) -> None:
    kept = store.remember("a note", tenant_id="acme")
    decision = store.record_decision(tenant_id="acme", task_id="T", action_type="fix",
                                     content="Restart the worker", status="done")  # fmt: skip
    forgotten = store.forget(tenant_id="acme", memory_ids=[kept, 10**9, 10**9],
                             decision_ids=[decision, 10**9 + 1], tool_call_ids=[7])  # fmt: skip
    assert forgotten.memory_ids == (kept,) and forgotten.missing_memory_ids == (10**9,)
    assert forgotten.missing_decision_ids == (10**9 + 1,)
    assert forgotten.missing_tool_call_ids == (7,)
    again = store.forget(tenant_id="acme", memory_ids=[kept])  # already forgotten
    assert again.missing == [f"memory {kept}"]


def test_remember_many_returns_ids_in_order_and_defaults_created_at(store: MemoryStore) -> None:
    before = datetime.now(UTC) - timedelta(seconds=5)
    ids = store.remember_many(
        [
            MemoryInput(text="first", tenant_id="acme"),
            {"text": "second", "tenant_id": "acme", "kind": "directive"},
            {"text": "third", "tenant_id": "globex", "embedding": [0.0] * 383 + [1.0]},
        ]
    )
    assert len(ids) == 3 and len(set(ids)) == 3
    first, second = store.get_memories(ids[:2], tenant_id="acme")
    assert (first.content, second.content, second.kind) == ("first", "second", "directive")
    assert first.created_at >= before
    third = store.get_memory(ids[2], tenant_id="globex")
    assert third is not None
    assert third.embedding[-1] == 1.0 and float(np.abs(third.embedding[:-1]).sum()) == 0.0


def test_decisions_and_tool_calls_round_trip(store: MemoryStore) -> None:
    decision_id = store.record_decision(
        tenant_id="acme",
        task_id="T-7",
        action_type="plan",
        content="Retry the migration with a longer lock timeout",
        status="accepted",
        created_at=WHEN,
    )
    call_id = store.record_tool_call(
        tenant_id="acme",
        decision_id=decision_id,
        tool_name="run_sql",
        params={"sql": "SET lock_timeout = '30s'", "retries": 3},
        result="SET",
    )
    decision = store.get_decision(decision_id, tenant_id="acme")
    call = store.get_tool_call(call_id, tenant_id="acme")
    assert decision is not None and call is not None
    assert (decision.task_id, decision.status, decision.created_at) == ("T-7", "accepted", WHEN)
    assert (call.decision_id, call.tool_name, call.result) == (decision_id, "run_sql", "SET")
    assert call.params == {"sql": "SET lock_timeout = '30s'", "retries": 3}
    assert store.get_decision(decision_id, tenant_id="globex") is None


def test_forget_by_id_task_and_tenant_returns_what_was_removed(
    database: PgDatabase, store: MemoryStore
) -> None:
    kept = store.remember("other tenant's memory", tenant_id="globex")
    m1, m2 = store.remember_many(
        [{"text": "one", "tenant_id": "acme"}, {"text": "two", "tenant_id": "acme"}]
    )
    d1, d2 = store.record_decisions(
        [
            {
                "tenant_id": "acme",
                "task_id": "T-1",
                "action_type": "a",
                "content": "x",
                "status": "s",
            },
            {
                "tenant_id": "acme",
                "task_id": "T-2",
                "action_type": "a",
                "content": "y",
                "status": "s",
            },
        ]
    )
    c1, c2, c3 = store.record_tool_calls(
        [
            {"tenant_id": "acme", "decision_id": d1, "tool_name": "search"},
            {"tenant_id": "acme", "decision_id": d2, "tool_name": "search"},
            {"tenant_id": "acme", "tool_name": "clock"},
        ]
    )

    by_id = store.forget(tenant_id="acme", memory_ids=[m1])
    assert by_id.memory_ids == (m1,) and by_id.cache_entries == 1  # its text's vector
    by_task = store.forget(tenant_id="acme", task_id="T-1")
    assert (by_task.decision_ids, by_task.tool_call_ids) == ((d1,), (c1,))
    by_call = store.forget(tenant_id="acme", tool_call_ids=[c3])
    assert by_call.tool_call_ids == (c3,)

    everything = store.forget(tenant_id="acme", everything=True)
    assert everything.memory_ids == (m2,)
    assert (everything.decision_ids, everything.tool_call_ids) == ((d2,), (c2,))
    assert everything.cache_entries == 1  # "two" ("one" went with its memory)
    assert _counts(database) == {
        "memories": 1,
        "memory_entities": 0,
        "decisions": 0,
        "tool_calls": 0,
        "embedding_cache": 1,
    }
    assert store.get_memory(kept, tenant_id="globex") is not None


def test_forget_needs_a_selector(store: MemoryStore) -> None:
    with pytest.raises(ValidationError, match="forget needs something to remove"):
        store.forget(tenant_id="acme")


def test_a_tool_call_for_a_missing_or_foreign_decision_is_refused(
    database: PgDatabase, store: MemoryStore
) -> None:
    foreign = store.record_decision(
        tenant_id="globex", task_id=None, action_type="a", content="c", status="s"
    )
    before = _counts(database)
    with pytest.raises(
        ValidationError, match=f"decision {foreign} does not exist for tenant 'acme'"
    ):
        store.record_tool_calls(
            [
                {"tenant_id": "acme", "tool_name": "ok"},
                {"tenant_id": "acme", "tool_name": "bad", "decision_id": foreign},
            ]
        )
    assert _counts(database) == before


GOOD: dict[str, Any] = {"text": "a good memory", "tenant_id": "acme"}
NAIVE = datetime(2026, 1, 1, 12, 0)

BAD_MEMORIES: list[tuple[dict[str, Any], str]] = [
    ({"text": ""}, "text: is empty or only whitespace"),
    ({"text": "   \n\t "}, "text: is empty or only whitespace"),
    ({"text": "nul\x00byte"}, "text: contains a NUL byte at position 3; PostgreSQL text cannot"),
    ({"text": "x" * 32_001}, "text: has 32,001 characters, over the limit of 32,000"),
    ({"metadata": {"when": datetime.now(UTC)}}, "metadata: is not JSON-serializable"),
    ({"metadata": {"score": float("nan")}}, "metadata: is not JSON-serializable"),
    ({"metadata": ["not", "a", "dict"]}, "metadata: must be a JSON object"),
    ({"created_at": NAIVE}, "created_at: 2026-01-01T12:00:00 has no time zone"),
    ({"importance": 1.5}, r"importance: must be in \[0, 1\], got 1.5"),
    ({"importance": -0.1}, r"importance: must be in \[0, 1\], got -0.1"),
    ({"importance": float("nan")}, r"importance: must be in \[0, 1\], got nan"),
    ({"embedding": [float("nan")] + [0.0] * 383}, "embedding: contains NaN or infinity"),
    ({"embedding": [float("inf")] + [0.0] * 383}, "embedding: contains NaN or infinity"),
    ({"embedding": [0.1] * 383}, r"embedding: has shape \(383,\), but the database stores .* 384"),
    ({"tenant_id": ""}, "tenant_id: is empty"),
    ({"entities": "single-string"}, "entities: must be a list of entity ids"),
    ({"colour": "blue"}, "unknown field"),
    # Half of a surrogate pair alone (a JSON "\ud800" escape makes one): UTF-8 cannot hold it.
    ({"text": "half \ud800 pair"}, r"text: contains an unpaired surrogate \(U\+D800\) at position"),
    ({"metadata": {"note": "\udc80"}}, r"metadata: contains an unpaired surrogate \(U\+DC80\)"),
    ({"tenant_id": "acme\udfff"}, r"tenant_id: contains an unpaired surrogate \(U\+DFFF\)"),
    ({"kind": "\ud83d"}, r"kind: contains an unpaired surrogate \(U\+D83D\) at position 0"),
    ({"entities": ["ok", "x\ud800"]}, r"entities: contains an unpaired surrogate"),
]


@pytest.mark.parametrize(("change", "message"), BAD_MEMORIES)
def test_a_batch_with_one_bad_memory_writes_nothing(
    database: PgDatabase, store: MemoryStore, change: dict[str, Any], message: str
) -> None:
    store.remember("already here", tenant_id="acme")
    before = _counts(database)
    batch = [dict(GOOD), dict(GOOD, text="another good one"), {**GOOD, **change}]
    with pytest.raises(ValidationError, match=message) as raised:
        store.remember_many(batch)
    assert raised.value.item == 2
    assert str(raised.value).startswith("item 2: ")
    assert _counts(database) == before


def test_single_writes_are_validated_too(database: PgDatabase, store: MemoryStore) -> None:
    before = _counts(database)
    with pytest.raises(ValidationError, match=r"created_at: .* has no time zone"):
        store.remember("text", tenant_id="acme", created_at=NAIVE)
    with pytest.raises(ValidationError, match="content: contains a NUL byte"):
        store.record_decision(
            tenant_id="acme", task_id="T", action_type="a", content="a\x00b", status="s"
        )
    with pytest.raises(ValidationError, match="content: contains an unpaired surrogate"):
        store.record_decision(
            tenant_id="acme", task_id="T", action_type="a", content="a\ud800b", status="s"
        )
    with pytest.raises(ValidationError, match="result: contains an unpaired surrogate"):
        store.record_tool_call(
            tenant_id="acme", decision_id=None, tool_name="t", params={}, result="\udc00"
        )
    with pytest.raises(ValidationError, match="params: is not JSON-serializable"):
        store.record_tool_call(
            tenant_id="acme", decision_id=None, tool_name="t", params={"x": object()}, result=None
        )
    with pytest.raises(ValidationError, match=r"created_at: .* has no time zone"):
        store.record_tool_call(
            tenant_id="acme", decision_id=None, tool_name="t", params={}, result=None,
            created_at=NAIVE,
        )  # fmt: skip
    assert _counts(database) == before


def test_reads_and_forgets_refuse_tenants_postgresql_cannot_hold(
    database: PgDatabase, store: MemoryStore
) -> None:
    memory_id = store.remember("kept", tenant_id="acme")
    before = _counts(database)
    for tenant, message in (
        ("", "tenant_id is empty"),
        ("ac\x00me", "tenant_id contains a NUL byte at position 2"),
        ("acme\ud800", r"tenant_id contains an unpaired surrogate \(U\+D800\) at position 4"),
    ):
        with pytest.raises(ValidationError, match=message):
            store.get_memories([memory_id], tenant_id=tenant)
        with pytest.raises(ValidationError, match=message):
            store.get_decision(1, tenant_id=tenant)
        with pytest.raises(ValidationError, match=message):
            store.forget(tenant_id=tenant, everything=True)
    with pytest.raises(ValidationError, match="task_id contains a NUL byte"):
        store.forget(tenant_id="acme", task_id="T\x00")
    # Any other string on its way to PostgreSQL: caught where driver errors are translated.
    with pytest.raises(ValidationError, match="cannot be encoded as UTF-8 for PostgreSQL"):
        pending(store, tenant_id="acme\udc80")
    assert _counts(database) == before


def test_the_text_limit_is_configurable(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    from retrieval.memory.config import WriteConfig

    strict = MemoryStore(
        database.engine, embedder=counting_embedder, config=WriteConfig(max_text_chars=10)
    )
    with pytest.raises(ValidationError, match="has 11 characters, over the limit of 10"):
        strict.remember("x" * 11, tenant_id="acme")


def test_other_time_zones_are_kept_as_instants(store: MemoryStore) -> None:
    tokyo = datetime(2026, 11, 20, 18, 30, tzinfo=timezone(timedelta(hours=9)))
    memory_id = store.remember("tokyo time", tenant_id="acme", created_at=tokyo)
    memory = store.get_memory(memory_id, tenant_id="acme")
    assert memory is not None and memory.created_at == WHEN


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"text": "bad\x00text"}, "item 2: text: contains a NUL byte"),  # found while copying
        ({"embedding": [float("nan")] * 384}, "item 2: embedding: contains NaN or infinity"),
        ({"embedding": [0.5] * 12}, r"item 2: embedding: has shape \(12,\)"),
    ],
)
def test_a_precomputed_batch_with_one_bad_row_writes_nothing(
    database: PgDatabase, store: MemoryStore, change: dict[str, Any], message: str
) -> None:
    # Every row carries its vector, so rows are checked as they stream into COPY.
    vector = np.full(384, 1 / np.sqrt(384), dtype=np.float32)
    batch = [{"text": f"row {i}", "tenant_id": "acme", "embedding": vector} for i in range(4)]
    batch[2] = {**batch[2], **change}
    before = _counts(database)
    with pytest.raises(ValidationError, match=message):
        store.remember_many(batch)
    assert _counts(database) == before
    ids = store.remember_many(batch[:2] + batch[3:])
    assert len(store.get_memories(ids, tenant_id="acme")) == 3
