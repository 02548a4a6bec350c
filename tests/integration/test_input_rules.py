"""One tenant rule for every read and write; timestamps that can be read back; ids; schemas."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import text

from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.errors import ConfigurationError, ValidationError
from retrieval.memory.file_ingest import read_file
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever
from retrieval.search.timeline import timeline
from tests.conftest import PgDatabase

BAD_TENANTS = [
    ("beta ", "trailing whitespace"),
    ("beta\t", "trailing whitespace"),
    (" beta", "leading or trailing whitespace"),
    ("\u2028line\u2029", "leading or trailing whitespace"),
    ("be\x07ta", r"control character \(U\+0007\)"),
    ("b" * 257, "over the limit of 256"),
    ("b" * 1_000_000, "over the limit of 256"),
    ("", "is empty"),
    (7, "must be a string"),
]
# Year 10000 and year 0 in UTC: PostgreSQL stores them, Python cannot read them back.
TOO_LATE = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-14)))
TOO_EARLY = datetime(1, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=14)))


def _rows(database: PgDatabase) -> int:
    with database.engine.connect() as connection:
        return int(
            connection.execute(
                text(
                    "SELECT (SELECT count(*) FROM retrieval.memories) "
                    "+ (SELECT count(*) FROM retrieval.decisions) "
                    "+ (SELECT count(*) FROM retrieval.documents)"
                )
            ).scalar_one()
        )


@pytest.mark.parametrize(("tenant", "message"), BAD_TENANTS)
def test_every_write_refuses_the_same_tenants(
    database: PgDatabase, store: MemoryStore, tenant: object, message: str
) -> None:
    store.remember("kept", tenant_id="beta")
    before = _rows(database)
    writes = [
        lambda: store.remember("x", tenant_id=tenant),  # type: ignore[arg-type]
        lambda: store.remember_many(
            [{"text": "x", "tenant_id": "beta"}, {"text": "y", "tenant_id": tenant}]
        ),
        lambda: store.record_decision(
            tenant_id=tenant,  # type: ignore[arg-type]
            task_id=None,
            action_type="plan",
            content="c",
            status="done",
        ),
        lambda: DocumentStore(store).add(
            DocumentInput(tenant_id=tenant, doc_id="d", chunks=[ChunkInput("t")])  # type: ignore[arg-type]
        ),
    ]
    for write in writes:
        with pytest.raises(ValidationError, match=f"tenant_id.*{message}"):
            write()
    assert _rows(database) == before


@pytest.mark.parametrize(("tenant", "message"), BAD_TENANTS[:6])
def test_every_read_and_forget_refuses_the_same_tenants(
    database: PgDatabase, store: MemoryStore, tenant: str, message: str
) -> None:
    memory = store.remember("the beta tenant's memory", tenant_id="beta")
    before = _rows(database)
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        reads = [
            lambda: retriever.retrieve("memory", tenant_id=tenant),
            lambda: store.get_memory(memory, tenant_id=tenant),
            lambda: timeline(store.engine, "retrieval", tenant),
            lambda: store.forget(tenant_id=tenant, everything=True),
            lambda: DocumentStore(store).bm25("memory", tenant_id=tenant),
        ]
        for read in reads:
            with pytest.raises(ValidationError, match=f"tenant_id.*{message}"):
                read()
        # The rule is the same both ways: "beta" finds only what "beta" wrote.
        found = retriever.retrieve("memory", tenant_id="beta")
    assert [r.metadata["id"] for r in found] == [memory]
    assert _rows(database) == before


@pytest.mark.parametrize("created_at", [TOO_LATE, TOO_EARLY])
def test_timestamps_that_cannot_be_read_back_are_refused(
    database: PgDatabase, store: MemoryStore, created_at: datetime, tmp_path: Path
) -> None:
    before = _rows(database)
    with pytest.raises(ValidationError, match="outside the years 1 to 9999 in UTC"):
        store.remember("x", tenant_id="acme", created_at=created_at)
    with pytest.raises(ValidationError, match="outside the years 1 to 9999 in UTC"):
        store.record_decision(
            tenant_id="acme",
            task_id=None,
            action_type="plan",
            content="c",
            status="done",
            created_at=created_at,
        )
    lines = tmp_path / "history.jsonl"
    lines.write_text(json.dumps({"text": "x", "created_at": created_at.isoformat()}) + "\n")
    with pytest.raises(ValidationError, match=r"line 1: created_at: .* outside the years"):
        read_file(lines, store, tenant_id="acme")
    with (
        HybridRetriever.from_store(store) as retriever,
        pytest.raises(ValidationError, match=r"as_of: .* outside the years"),
    ):
        retriever.retrieve("x", tenant_id="acme", as_of=created_at)
    assert _rows(database) == before
    # The edges that every session time zone reads back are fine (the schema's CHECKs).
    for edge in (datetime(9999, 12, 30, tzinfo=UTC), datetime(1, 1, 2, tzinfo=UTC)):
        memory = store.remember(f"at the edge, {edge.year}", tenant_id="acme", created_at=edge)
        stored = store.get_memory(memory, tenant_id="acme")
        assert stored is not None and stored.created_at == edge
    with pytest.raises(ValidationError, match="outside the years"):
        store.remember(
            "past the edge",
            tenant_id="acme",
            created_at=datetime(9999, 12, 30, 0, 0, 1, tzinfo=UTC),
        )


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ("12", "memory_ids must be a list of integer ids, got str"),
        (5, "memory_ids must be a list of integer ids, got int"),
        ([1, "2"], "memory_ids must hold integer ids, got '2'"),
        ([True], "memory_ids must hold integer ids, got True"),
        ([2**70], "outside PostgreSQL's bigint"),
    ],
)
def test_ids_are_a_list_of_integers(
    database: PgDatabase, store: MemoryStore, ids: object, message: str
) -> None:
    store.remember_many([{"text": f"m{i}", "tenant_id": "acme"} for i in range(3)])
    before = _rows(database)
    with pytest.raises(ValidationError, match=message):
        store.forget(tenant_id="acme", memory_ids=ids)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=message):
        store.get_memories(ids, tenant_id="acme")  # type: ignore[arg-type]
    assert _rows(database) == before


def test_a_schema_name_is_never_pasted_into_sql_unchecked(store: MemoryStore) -> None:
    hostile = 'x".memories; --'
    with pytest.raises(ConfigurationError, match="not a plain PostgreSQL identifier"):
        HybridRetriever(store.engine, schema=hostile, embedder=store.embedder)
    with pytest.raises(ConfigurationError, match="not a plain PostgreSQL identifier"):
        MemoryStore(store.engine, schema=hostile, embedder=store.embedder)


def test_reads_never_grow_the_database(
    database: PgDatabase, store: MemoryStore, counting_embedder: object
) -> None:
    store.remember("the only stored text", tenant_id="acme")

    def cache_rows() -> int:
        with database.engine.connect() as connection:
            query = text("SELECT count(*) FROM retrieval.embedding_cache")
            return int(connection.execute(query).scalar_one())

    before = cache_rows()
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        for index in range(30):
            retriever.retrieve(f"question number {index}", tenant_id=f"empty-{index}")
        embedded = len(store.embedder.embedded)  # type: ignore[attr-defined]
        retriever.retrieve("question number 3", tenant_id="empty-3")  # from the LRU
        assert len(store.embedder.embedded) == embedded  # type: ignore[attr-defined]
    DocumentStore(store).dense("question", tenant_id="empty-0")
    assert cache_rows() == before


def _deep(levels: int) -> dict[str, object]:
    nested: dict[str, object] = {}
    for _ in range(levels):
        nested = {"x": nested}
    return nested


def test_hostile_inputs_get_a_validation_error_not_a_traceback(
    database: PgDatabase, store: MemoryStore, tmp_path: Path
) -> None:
    before = _rows(database)
    deep = _deep(5000)
    calls = [
        (lambda: store.remember("x", tenant_id="acme", metadata=deep), "nested too deeply"),
        (lambda: store.remember_many([{"text": "x", "tenant_id": "acme", "metadata": deep}]),
         "nested too deeply"),
        (lambda: store.record_tool_call(tenant_id="acme", decision_id=None, tool_name="t",
                                        params=deep, result=None), "nested too deeply"),
        (lambda: DocumentStore(store).add(DocumentInput(tenant_id="acme", doc_id="d",
                                                        chunks=[ChunkInput("t")], metadata=deep)),
         "nested too deeply"),
        (lambda: store.remember("x", tenant_id="acme", importance=10**400), "must be in"),
        (lambda: store.remember_many(None), "takes an iterable"),  # type: ignore[arg-type]
        (lambda: store.remember_many("text"), "takes an iterable"),  # type: ignore[arg-type]
        (lambda: DocumentStore(store).bm25("x", tenant_id="acme", k1=float("nan")),
         "k1 must be a number"),
        (lambda: DocumentStore(store).add(DocumentInput(
            tenant_id="acme", doc_id="d", chunks=[ChunkInput("t")], metadata={"v": float("inf")})),
         "not JSON"),
    ]  # fmt: skip
    for call, message in calls:
        with pytest.raises(ValidationError, match=message):
            call()
    deep_line = tmp_path / "deep.jsonl"
    deep_line.write_text('{"text": "x", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(ValidationError, match="line 1: JSON nested too deeply"):
        read_file(deep_line, store, tenant_id="acme")
    wide = tmp_path / "wide.csv"
    wide.write_text("text,tenant_id\n" + "x" * 200_000 + ",acme\n")
    with pytest.raises(ValidationError, match="line 2: not valid CSV"):
        read_file(wide, store)
    assert _rows(database) == before


def test_an_unknown_revision_is_a_configuration_error(database: PgDatabase) -> None:
    from retrieval.cli.commands import main

    assert main(["--database-url", database.url, "db", "upgrade", "9999"]) == 1
    assert main(["--database-url", database.url, "db", "downgrade", "nonsense"]) == 1
