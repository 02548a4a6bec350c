from __future__ import annotations

import numpy as np
import pytest
from pgvector import Vector
from sqlalchemy import text

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import (
    check_embedding_dim,
    connect,
    make_engine,
    stored_embedding_dim,
)
from retrieval.errors import (
    DatabaseError,
    DatabaseUnavailableError,
    DimensionMismatchError,
    SchemaError,
)
from retrieval.memory.store import MemoryStore
from tests.conftest import PgDatabase


def test_connect_to_a_url_gives_an_engine_with_pgvector_types(database: PgDatabase) -> None:
    db = connect(DatabaseConfig(url=database.url))
    try:
        assert db.embedded is None
        assert db.engine.url.drivername == "postgresql+psycopg"
        with db.engine.connect() as connection:
            value = connection.execute(text("SELECT '[1,2,3]'::vector")).scalar()
            stored = connection.execute(
                text("SELECT CAST(:v AS vector) <-> '[0,0,0]'::vector"),
                {"v": np.array([3.0, 4.0, 0.0], dtype=np.float32)},
            ).scalar()
        assert isinstance(value, Vector)  # loaded by pgvector's adapter, not left as text
        assert value.to_list() == [1.0, 2.0, 3.0]
        assert stored == pytest.approx(5.0)
    finally:
        db.dispose()


def test_an_unreachable_server_names_the_url_with_the_password_masked() -> None:
    url = "postgresql://agent:hunter2@127.0.0.1:1/memory"
    with pytest.raises(DatabaseUnavailableError) as raised:
        connect(DatabaseConfig(url=url))
    message = str(raised.value)
    assert "hunter2" not in message
    assert "postgresql+psycopg://agent:***@127.0.0.1:1/memory" in message
    assert "RETRIEVAL_DATABASE_URL" in message
    assert "running" in message


def test_a_missing_database_is_reported_as_unavailable(database: PgDatabase) -> None:
    url = database.server.url("no_such_database_here")
    with pytest.raises(DatabaseUnavailableError, match="no_such_database_here"):
        connect(DatabaseConfig(url=url))


def test_the_stored_dimension_is_read_back(database: PgDatabase) -> None:
    assert stored_embedding_dim(database.engine, "retrieval") == 384


def test_a_model_of_another_dimension_is_refused_naming_both(database: PgDatabase) -> None:
    check_embedding_dim(database.engine, "retrieval", "all-MiniLM-L6-v2", 384)
    with pytest.raises(DimensionMismatchError) as raised:
        check_embedding_dim(database.engine, "retrieval", "all-mpnet-base-v2", 768)
    message = str(raised.value)
    assert "'all-mpnet-base-v2'" in message
    assert "768" in message
    assert "vector(384)" in message
    assert "RETRIEVAL_EMBEDDING_DIM=768" in message


def test_an_unmigrated_schema_says_to_run_the_migration(empty_database: PgDatabase) -> None:
    with pytest.raises(SchemaError, match="retrieval db upgrade"):
        stored_embedding_dim(empty_database.engine, "retrieval")


def test_a_pool_with_no_connection_free_in_time_is_a_clear_error(database: PgDatabase) -> None:
    engine = make_engine(database.url, pool_size=1, max_overflow=0, pool_timeout=0.1)
    store = MemoryStore(engine, schema=database.settings.schema)
    try:
        held = pytest.raises(DatabaseError, match=r"no pooled connection .* came free in time")
        with engine.connect(), held:  # the pool's only connection, held
            store.forget(tenant_id="acme", memory_ids=[1])
        assert store.forget(tenant_id="acme", memory_ids=[1]).memory_ids == ()  # free again
    finally:
        engine.dispose()
