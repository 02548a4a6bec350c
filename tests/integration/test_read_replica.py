"""Reads from a streaming replica (RETRIEVAL_READ_DATABASE_URL), writes to the primary."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import text

from retrieval.db.config import DatabaseConfig
from retrieval.db.embedded import EmbeddedServer
from retrieval.db.engine import Database, connect
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.errors import ConfigurationError
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever
from tests.replica import Replica, streaming_replica, wait_for_replay

# A streaming replica of the suite's embedded server, made with its own binaries.
pytestmark = pytest.mark.embedded_server

DRONE = "The survey drone lost its radio link over the lake at dusk."
BREAD = "The sourdough starter needs feeding twice a day in summer."


@dataclass(frozen=True)
class Deployment:
    """The library connected to a primary (by URL) and its streaming replica."""

    database: Database
    primary: EmbeddedServer
    replica: Replica

    def replayed(self) -> None:
        wait_for_replay(self.primary, self.replica)


@pytest.fixture
def deployment(migrated_data_dir: Path) -> Iterator[Deployment]:
    server = connect(DatabaseConfig(data_dir=migrated_data_dir))
    assert server.embedded is not None
    with streaming_replica(server.embedded) as replica:
        database = connect(DatabaseConfig(url=server.embedded.url(), read_url=replica.url()))
        yield Deployment(database, server.embedded, replica)
        database.dispose()
    server.dispose()


def _contents(retriever: HybridRetriever, query: str, **options: object) -> set[str]:
    response = retriever.retrieve(query, tenant_id="acme", **options)  # type: ignore[arg-type]
    return {r.content for r in response}


def test_searches_read_the_replica_and_writes_go_to_the_primary(
    deployment: Deployment, embedder: SentenceTransformerEmbedder
) -> None:
    database, replica = deployment.database, deployment.replica
    assert database.embedded is None and database.read_engine is not None
    with database.read_engine.connect() as connection:
        assert connection.execute(text("SELECT pg_is_in_recovery()")).scalar_one() is True
    store = MemoryStore.from_database(database, embedder=embedder)
    drone = store.remember(DRONE, tenant_id="acme")
    deployment.replayed()

    with HybridRetriever.from_database(database, embedder=embedder) as retriever:
        assert DRONE in _contents(retriever, "drone over the lake")

        replica.pause_replay()  # the replica now lags the primary
        bread = store.remember(BREAD, tenant_id="acme")
        assert BREAD not in _contents(retriever, "feeding the sourdough starter")
        assert BREAD in _contents(retriever, "feeding the sourdough starter", read_your_writes=True)
        assert {e.content for e in retriever.timeline("acme")} == {DRONE}
        assert {e.content for e in retriever.timeline("acme", read_your_writes=True)} == {
            DRONE,
            BREAD,
        }
        replica.resume_replay()
        deployment.replayed()
        assert BREAD in _contents(retriever, "feeding the sourdough starter")
        retriever.flush()  # access counts are written to the primary, never the replica

    found = store.get_memories([drone, bread], tenant_id="acme")
    assert {m.id: m.access_count > 0 for m in found} == {drone: True, bread: True}


def test_retrieval_search_reads_the_replica_unless_told_to_read_its_writes(
    deployment: Deployment, embedder: SentenceTransformerEmbedder
) -> None:
    database, replica = deployment.database, deployment.replica
    store = MemoryStore.from_database(database, embedder=embedder)
    replica.pause_replay()
    store.remember(DRONE, tenant_id="acme")
    env = {
        **os.environ,
        "RETRIEVAL_DATABASE_URL": database.engine.url.render_as_string(hide_password=False),
        "RETRIEVAL_READ_DATABASE_URL": replica.url(),
    }

    def search(*extra: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "retrieval", "search", "drone over the lake",
             "--tenant", "acme", "--json", *extra],
            env=env, capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
        return done.stdout

    assert DRONE not in search()
    assert DRONE in search("--read-your-writes")
    replica.resume_replay()


def test_a_replica_url_needs_the_primary_s() -> None:
    with pytest.raises(ConfigurationError, match="RETRIEVAL_DATABASE_URL"):
        DatabaseConfig(read_url="postgresql://replica/db")
    with pytest.raises(ConfigurationError, match="RETRIEVAL_READ_DATABASE_URL"):
        DatabaseConfig(url="postgresql://primary/db", read_url=" ")
