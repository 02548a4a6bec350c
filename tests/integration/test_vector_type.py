"""halfvec storage (RETRIEVAL_VECTOR_TYPE): chosen at migration, written, read, searched, undone."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import text

from retrieval.db import migrate
from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import stored_vector_type
from retrieval.db.migrate import MigrationSettings
from retrieval.db.vector_index import build_vector_index, drop_vector_index
from retrieval.db.versions import ServerVersions
from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.errors import ConfigurationError, ExtensionError
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever
from tests.conftest import PgDatabase

HALF = MigrationSettings(schema="retrieval", embedding_dim=384, vector_type="halfvec")
VECTOR = MigrationSettings(schema="retrieval", embedding_dim=384, vector_type="vector")
AS_OF = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)

COLUMNS = text(
    "SELECT c.relname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
    "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = 'retrieval' AND a.attname = 'embedding' AND c.relkind = 'r'"
)
GRAPHS = text(
    "SELECT c.relname, o.opcname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
    "JOIN pg_opclass o ON o.oid = i.indclass[0] JOIN pg_am am ON am.oid = c.relam "
    "WHERE am.amname = 'hnsw'"
)


def _columns(db: PgDatabase) -> dict[str, str]:
    with db.engine.connect() as connection:
        return {name: kind for name, kind in connection.execute(COLUMNS).all()}


def _graphs(db: PgDatabase) -> dict[str, str]:
    with db.engine.connect() as connection:
        return {name: ops for name, ops in connection.execute(GRAPHS).all()}


def test_the_vector_type_is_a_setting_with_two_values() -> None:
    assert DatabaseConfig.from_env({"RETRIEVAL_VECTOR_TYPE": "halfvec"}).vector_type == "halfvec"
    assert DatabaseConfig.from_env({"RETRIEVAL_VECTOR_TYPE": "vector"}).vector_type == "vector"
    with pytest.raises(ConfigurationError, match=r"RETRIEVAL_VECTOR_TYPE='half'.*vector, halfvec"):
        DatabaseConfig.from_env({"RETRIEVAL_VECTOR_TYPE": "half"})
    with pytest.raises(ConfigurationError, match="vector_type 'float'"):
        MigrationSettings(schema="retrieval", embedding_dim=384, vector_type="float")  # type: ignore[arg-type]


def test_halfvec_schema_stores_writes_reads_and_searches(
    empty_database: PgDatabase, embedder: SentenceTransformerEmbedder
) -> None:
    db = empty_database
    migrate.upgrade(db.engine, HALF)
    db.engine.dispose()  # connections made before the vector types existed lack their adapters
    assert _columns(db) == {
        "memories": "halfvec(384)",
        "document_chunks": "halfvec(384)",
        "embedding_cache": "vector(384)",  # the model's own values
    }
    assert _graphs(db) == {
        "memories_embedding_hnsw_idx": "halfvec_l2_ops",
        "document_chunks_embedding_hnsw_idx": "halfvec_l2_ops",
    }
    migrate.check(db.engine, HALF)  # schema.py describes the halfvec schema too
    assert stored_vector_type(db.engine, "retrieval") == "halfvec"

    store = MemoryStore(db.engine, embedder=embedder)
    texts = [
        "The patient's blood pressure dropped after the second dose.",
        "Quarterly revenue grew by twelve percent in Europe.",
        "The drone lost its radio link over the lake.",
    ]
    before = AS_OF - timedelta(days=1)  # as_of reads what was stored by then
    embedded = store.remember_many(
        {"text": t, "tenant_id": "acme", "created_at": before} for t in texts
    )
    given = embedder.embed(["A hand-made vector for a note on sourdough bread."])[0]
    copied = store.remember_many([MemoryInput(text="sourdough", tenant_id="acme", embedding=given)])
    memory = store.get_memory(copied[0], tenant_id="acme")
    assert memory is not None and memory.embedding.dtype == np.float32
    np.testing.assert_allclose(memory.embedding, given, atol=2e-3)  # rounded to float16
    assert len(store.get_memories(embedded, tenant_id="acme")) == 3

    DocumentStore(store).add(
        DocumentInput(
            tenant_id="acme",
            doc_id="lake.md",
            chunks=[ChunkInput("The unmanned aircraft was recovered from the lake shore.")],
        )
    )
    with HybridRetriever.from_store(store) as retriever:
        response = retriever.retrieve("drone over the lake", tenant_id="acme", as_of=AS_OF)
    assert response.results[0].content == texts[2]
    assert "lake.md" in {r.metadata.get("doc_id") for r in response}
    assert all(0.0 <= r.final_score <= 1.0 for r in response)

    with db.engine.connect() as connection:  # the graph answers the query's vector parameter
        connection.execute(text("SET enable_seqscan = off"))
        plan = "\n".join(
            connection.exec_driver_sql(
                "EXPLAIN SELECT id FROM retrieval.memories "
                "ORDER BY embedding <-> %(v)s::vector LIMIT 10",
                {"v": str(given.tolist())},
            ).scalars()
        )
    assert "memories_embedding_hnsw_idx" in plan

    drop_vector_index(db.engine, "retrieval")  # what `retrieval ingest --defer-index` does
    build_vector_index(db.engine, "retrieval")
    assert _graphs(db)["memories_embedding_hnsw_idx"] == "halfvec_l2_ops"
    migrate.check(db.engine, HALF)


def test_undoing_the_revision_converts_back_and_keeps_every_row(
    empty_database: PgDatabase, embedder: SentenceTransformerEmbedder
) -> None:
    db = empty_database
    migrate.upgrade(db.engine, HALF)
    db.engine.dispose()
    store = MemoryStore(db.engine, embedder=embedder)
    ids = store.remember_many({"text": f"note {i}", "tenant_id": "acme"} for i in range(5))

    migrate.downgrade(db.engine, HALF, "0012")
    assert _columns(db)["memories"] == "vector(384)"
    assert _graphs(db)["memories_embedding_hnsw_idx"] == "vector_l2_ops"
    migrate.upgrade(db.engine, VECTOR)  # asked for vector: the revision changes nothing
    assert _columns(db)["memories"] == "vector(384)"
    migrate.check(db.engine, VECTOR)
    db.engine.dispose()
    assert len(MemoryStore(db.engine, embedder=embedder).get_memories(ids, tenant_id="acme")) == 5


def test_asking_for_the_other_type_past_the_revision_says_how_to_convert(
    database: PgDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    stored = database.settings.vector_type
    other = VECTOR if stored == "halfvec" else HALF
    with caplog.at_level(logging.WARNING, logger="retrieval.db.migrate"):
        migrate.upgrade(database.engine, other)
    assert stored_vector_type(database.engine, "retrieval") == stored
    assert f"stores {stored}" in caplog.text and "db downgrade 0012" in caplog.text


def test_halfvec_falls_back_to_vector_on_a_pgvector_without_it(
    empty_database: PgDatabase, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # pgvector 0.6, simulated: the versions the migration reads say 0.6.2 (the server runs a
    # newer one, which would take halfvec): the schema is made with vector, and it says so.
    old = ServerVersions(postgres=150018, postgres_text="15.18", pgvector=(0, 6, 2),
                         pgvector_installed=False)  # fmt: skip
    monkeypatch.setattr(migrate, "read_versions", lambda engine: old)
    with caplog.at_level(logging.WARNING, logger="retrieval.db.migrate"):
        migrate.upgrade(empty_database.engine, HALF)
    assert stored_vector_type(empty_database.engine, "retrieval") == "vector"
    assert "pgvector 0.6.2 has no halfvec (0.7.0 or newer)" in caplog.text
    with empty_database.engine.connect() as connection:
        assert {kind for _, kind in connection.execute(COLUMNS)} == {"vector(384)"}


def test_an_old_server_is_refused_before_any_migration(
    empty_database: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = ServerVersions(postgres=150018, postgres_text="15.18", pgvector=(0, 4, 4),
                         pgvector_installed=True)  # fmt: skip
    monkeypatch.setattr(migrate, "read_versions", lambda engine: old)
    with pytest.raises(ExtensionError, match=r"has pgvector 0\.4\.4 installed; retrieval needs"):
        migrate.upgrade(empty_database.engine, VECTOR)
    assert migrate.current_revision(empty_database.engine, VECTOR) is None


def test_connect_reads_the_server_s_versions(database: PgDatabase) -> None:
    from retrieval.db.engine import connect

    connected = connect(DatabaseConfig(url=database.url))
    try:
        assert connected.versions is not None
        assert connected.versions.postgres >= 130000 and connected.versions.iterative_scan
    finally:
        connected.dispose()
