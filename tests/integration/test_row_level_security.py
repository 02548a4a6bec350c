"""Row-level security: an application role sees and changes only the tenant its call names,
even with a statement that forgot its tenant filter; every call of the library works as it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import ProgrammingError

from retrieval.cli.commands import main
from retrieval.db import migrate
from retrieval.db.row_security import (
    bind_tenant,
    grant_application_role,
    row_security_active,
)
from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.errors import ConfigurationError, ValidationError
from retrieval.memory.file_ingest import ingest, read_file
from retrieval.memory.reembed import pending
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever
from tests.conftest import CountingEmbedder, PgDatabase

WHEN = datetime(2026, 11, 20, tzinfo=UTC)


def _seed(store: MemoryStore) -> dict[str, int]:
    return {
        tenant: store.remember(f"The {tenant} deploy key lives in the vault.", tenant_id=tenant)
        for tenant in ("alpha", "beta")
    }


def test_a_statement_without_a_tenant_filter_sees_only_the_named_tenant(
    database: PgDatabase, store: MemoryStore, app_engine: Engine
) -> None:
    _seed(store)
    with app_engine.begin() as connection:
        assert row_security_active(connection, "retrieval")
        everything = "SELECT tenant_id FROM retrieval.memories"
        assert connection.execute(text(everything)).all() == []  # no tenant named: nothing
        bind_tenant(connection, "retrieval", "alpha")
        assert connection.execute(text(everything)).scalars().all() == ["alpha"]
        # An UPDATE and a DELETE that forgot the filter touch the named tenant only.
        updated = connection.execute(text("UPDATE retrieval.memories SET importance = 1"))
        assert updated.rowcount == 1
        deleted = connection.execute(text("DELETE FROM retrieval.decisions"))
        assert deleted.rowcount == 0
    with pytest.raises(Exception, match="row-level security"), app_engine.begin() as connection:
        bind_tenant(connection, "retrieval", "alpha")
        connection.execute(
            text(
                "INSERT INTO retrieval.decisions (tenant_id, action_type, content, status) "
                "VALUES ('beta', 'a', 'written into another tenant', 's')"
            )
        )
    with database.engine.connect() as connection:  # the owner sees both, unchanged for beta
        rows = connection.execute(
            text("SELECT tenant_id, importance FROM retrieval.memories ORDER BY tenant_id")
        ).all()
    assert rows == [("alpha", 1.0), ("beta", None)]
    with store.engine.connect() as connection:
        assert not row_security_active(connection, "retrieval")  # the owner is not bound


def test_every_call_works_as_the_application_role_and_keeps_to_its_tenant(
    database: PgDatabase,
    store: MemoryStore,
    app_engine: Engine,
    counting_embedder: CountingEmbedder,
    tmp_path: Path,
) -> None:
    owner_ids = _seed(store)
    app = MemoryStore(app_engine, embedder=counting_embedder)
    # Writes: through the model, with vectors (COPY is refused under RLS: staged), mixed
    # tenants in one batch, entity links, threads, decisions and tool calls.
    first = app.remember("Ann prefers tea.", tenant_id="alpha", entities=["ann"], created_at=WHEN)
    vectors = np.random.default_rng(1).standard_normal((3, 384)).astype(np.float32)
    batch = app.remember_many(
        [
            {"text": "alpha vector one", "tenant_id": "alpha", "embedding": vectors[0]},
            {"text": "beta vector", "tenant_id": "beta", "embedding": vectors[1]},
            {"text": "alpha vector two", "tenant_id": "alpha", "embedding": vectors[2]},
        ]
    )
    mixed = app.remember_many(
        [
            {"text": "Bob: the deploy key rotates monthly.", "tenant_id": "alpha",
             "thread_id": "s1", "position": 0},
            {"text": "Cy: checkout times out.", "tenant_id": "beta"},
            {"text": "Ann prefers tea.", "tenant_id": "beta"},  # the cache, per tenant
        ]
    )  # fmt: skip
    decision = app.record_decision(
        tenant_id="alpha", task_id="t1", action_type="plan", content="Rotate the key", status="ok"
    )
    app.record_tool_call(
        tenant_id="alpha", decision_id=decision, tool_name="vault", params={}, result=None
    )
    with pytest.raises(Exception, match="decision"):  # beta cannot name alpha's decision
        app.record_tool_call(
            tenant_id="beta", decision_id=decision, tool_name="vault", params={}, result=None
        )

    # Reads by id, timeline, forget: each sees its tenant.
    assert [m.id for m in app.get_memories([owner_ids["alpha"], owner_ids["beta"]],
                                           tenant_id="alpha")] == [owner_ids["alpha"]]  # fmt: skip
    assert app.get_memory(first, tenant_id="beta") is None
    assert app.get_memory(first, tenant_id="alpha") is not None
    retriever = HybridRetriever.from_store(
        app, config=RetrievalConfig(record_access=True), background_writes=False
    )
    events = retriever.timeline("alpha", limit=100)
    assert {e.item for e in events} == {"memory", "decision", "tool_call"}
    assert all("beta" not in e.content for e in events)

    # Retrieve: all sources, neighbours, access counts written back under the policies.
    response = retriever.retrieve("Where is the deploy key?", tenant_id="alpha", neighbors=1)
    ids = {r.metadata["id"] for r in response.results if r.source == "semantic"}
    assert owner_ids["alpha"] in ids and owner_ids["beta"] not in ids
    with database.engine.connect() as connection:
        counted = connection.execute(
            text("SELECT tenant_id, sum(access_count) FROM retrieval.memories GROUP BY 1")
        ).all()
    assert dict(counted)["alpha"] >= 1 and dict(counted)["beta"] == 0
    owner_retriever = HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False))
    as_owner = owner_retriever.retrieve("Where is the deploy key?", tenant_id="alpha")
    as_app = retriever.retrieve("Where is the deploy key?", tenant_id="alpha")
    assert [r.metadata.get("id") for r in as_app.results] == [
        r.metadata.get("id") for r in as_owner.results
    ]
    # A read beside a search (an integration's), on the search's connections: the policies
    # keep it to the tenant its values name, though the statement names none.
    unfiltered = "SELECT id FROM retrieval.memories WHERE id = ANY(%(ids)s::bigint[])"
    both = [owner_ids["alpha"], owner_ids["beta"]]
    seen = retriever.read_rows(unfiltered, {"tenant_id": "alpha", "ids": both})
    assert [row[0] for row in seen] == [owner_ids["alpha"]]

    # Documents: add, BM25, dense, forget.
    documents = DocumentStore(app)
    runbook = [ChunkInput("Checkout times out when payments lag.")]
    documents.add(DocumentInput(tenant_id="beta", doc_id="runbook", chunks=runbook))
    assert documents.bm25("checkout times out", tenant_id="alpha") == []
    assert documents.bm25("checkout times out", tenant_id="beta") != []
    assert documents.dense("checkout", tenant_id="beta") != []
    assert documents.forget(tenant_id="beta", doc_id="runbook")

    # A file of two tenants, threads numbered after the stored turns.
    path = tmp_path / "history.jsonl"
    path.write_text(
        '{"speaker": "Bob", "text": "It rotates on Mondays.", "tenant_id": "alpha", '
        '"session": "s1"}\n{"text": "beta from a file", "tenant_id": "beta"}\n'
    )
    ingest(app, read_file(path, app))
    with database.engine.connect() as connection:
        position = connection.execute(
            text("SELECT position FROM retrieval.memories WHERE content LIKE 'Bob: It rotates%'")
        ).scalar_one()
    assert position == 1
    assert pending(app, tenant_id="alpha") == 0

    # Over time, as the bound role: a copy, a correction, similar(), history(), an expiry,
    # the past as it stood, forgetting the expired with their cached vectors.
    assert app.remember("Ann prefers tea.", tenant_id="alpha") == first
    near = app.similar("Ann likes tea", tenant_id="alpha")
    assert [one.memory.id for one in near] == [first]
    assert app.similar("Ann likes tea", tenant_id="gamma") == []
    fixed = app.remember("Ann prefers coffee now.", tenant_id="alpha", supersedes=first)
    assert [v.memory.id for v in app.history(fixed, tenant_id="alpha")] == [first, fixed]
    assert app.history(fixed, tenant_id="beta") == []
    with pytest.raises(ValidationError, match="has no memory"):
        app.remember("x", tenant_id="beta", supersedes=fixed)  # alpha's, not beta's
    app.remember("A code that expired.", tenant_id="alpha", created_at=WHEN,
                 expires_at=WHEN + timedelta(hours=1))  # fmt: skip
    back_then = retriever.retrieve("What does Ann drink?", tenant_id="alpha", as_of=WHEN)
    assert first in {r.metadata["id"] for r in back_then.results if r.source == "semantic"}
    now = retriever.retrieve("What does Ann drink?", tenant_id="alpha")
    assert first not in {r.metadata["id"] for r in now.results if r.source == "semantic"}
    assert len(app.forget(tenant_id="alpha", expired=True).memory_ids) == 1

    beta_ids, alpha_ids = _ids_of(database, "beta"), _ids_of(database, "alpha")
    assert {owner_ids["beta"], batch[1], mixed[1], mixed[2]} < beta_ids
    forgotten = app.forget(tenant_id="beta", everything=True)
    assert set(forgotten.memory_ids) == beta_ids
    assert _ids_of(database, "beta") == set()
    assert _ids_of(database, "alpha") == alpha_ids
    retriever.close()
    owner_retriever.close()


def _ids_of(database: PgDatabase, tenant: str) -> set[int]:
    with database.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT id FROM retrieval.memories WHERE tenant_id = :t"), {"t": tenant}
        )
        return {int(r[0]) for r in rows}


def test_grant_refuses_a_role_that_row_level_security_would_not_bind(
    database: PgDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    with (
        database.engine.begin() as connection,
        pytest.raises(ConfigurationError, match="superuser"),
    ):
        grant_application_role(connection, "retrieval", "postgres")
    assert main(["--database-url", database.url, "db", "grant", "no_such_role"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_the_application_role_cannot_move_the_schemas_revision(
    database: PgDatabase, app_engine: Engine, app_role: str
) -> None:
    for statement in (
        "UPDATE retrieval.alembic_version SET version_num = '0001'",
        "DELETE FROM retrieval.alembic_version",
        "INSERT INTO retrieval.alembic_version VALUES ('9999')",
    ):
        with pytest.raises(ProgrammingError, match="permission denied"), app_engine.begin() as c:
            c.execute(text(statement))
    # A grant of an earlier version (every table of the schema) is taken back by a new one.
    with database.engine.begin() as connection:
        connection.execute(text(f'GRANT ALL ON retrieval.alembic_version TO "{app_role}"'))
        grant_application_role(connection, "retrieval", app_role)
    with pytest.raises(ProgrammingError, match="permission denied"), app_engine.begin() as c:
        c.execute(text("DELETE FROM retrieval.alembic_version"))
    with database.engine.connect() as connection:
        revision = connection.execute(text("SELECT version_num FROM retrieval.alembic_version"))
        assert revision.scalar_one() == migrate.head_revision()


def test_the_application_role_cannot_truncate_or_lift_the_policies(
    database: PgDatabase, app_engine: Engine
) -> None:
    for statement in (
        "TRUNCATE retrieval.memories",
        "ALTER TABLE retrieval.memories DISABLE ROW LEVEL SECURITY",
        "DROP POLICY tenant_isolation ON retrieval.memories",
    ):
        with pytest.raises(ProgrammingError), app_engine.begin() as connection:
            connection.execute(text(statement))


def test_the_owners_index_lookups_return_only_the_named_tenant(
    store: MemoryStore, app_engine: Engine
) -> None:
    ids = _seed(store)
    match = text(
        "SELECT m.id FROM retrieval.memories_matching(:tenant, to_tsquery('english', 'vault'), 10)"
        " AS m"
    )
    with app_engine.begin() as connection:
        bind_tenant(connection, "retrieval", "alpha")
        assert connection.execute(match, {"tenant": "alpha"}).scalars().all() == [ids["alpha"]]
        assert connection.execute(match, {"tenant": "beta"}).scalars().all() == []
    with app_engine.begin() as connection:  # no tenant named: nothing
        assert connection.execute(match, {"tenant": "alpha"}).scalars().all() == []
