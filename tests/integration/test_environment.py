"""Every entry point made without a config reads the environment's, as the CLI does: a
``RETRIEVAL_*`` variable set for a team's PostgreSQL is honoured by ``connect()``, the stores,
the retrievers, the async API and the README's own example."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest
from sqlalchemy import text

from retrieval import AsyncHybridRetriever, AsyncMemoryStore, connect
from retrieval.db.embedded_watchdog import postmaster_pid
from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.documents.store import DocumentStore
from retrieval.errors import ConfigurationError, ValidationError
from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever
from tests.conftest import CountingEmbedder, PgDatabase

ROOT = Path(__file__).resolve().parents[2]


def _readme_example() -> str:
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme.split("## Write and retrieve", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_connect_reads_the_database_url_from_the_environment(
    database: PgDatabase, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RETRIEVAL_DATABASE_URL", database.url)
    monkeypatch.setenv("RETRIEVAL_DATA_DIR", str(tmp_path / "never"))
    db = connect()
    try:
        assert db.embedded is None
        with db.engine.connect() as connection:
            assert connection.execute(text("SELECT current_database()")).scalar() == database.name
        assert db.config.url == database.url
    finally:
        db.dispose()
    assert not (tmp_path / "never").exists()


@pytest.mark.embedded_server
def test_connect_reads_the_data_dir_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent = Path(tempfile.mkdtemp(prefix="rtv-env-"))
    monkeypatch.setenv("RETRIEVAL_DATA_DIR", str(parent / "pg"))
    try:
        db = connect()
        assert db.embedded is not None
        assert db.embedded.data_dir == parent / "pg"
        db.dispose()
    finally:
        pid = postmaster_pid(parent / "pg")
        if pid is not None and psutil.pid_exists(pid):
            os.kill(pid, signal.SIGINT)
        shutil.rmtree(parent, ignore_errors=True)


def test_a_bad_variable_is_named_when_connect_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETRIEVAL_CONNECT_TIMEOUT", "soon")
    with pytest.raises(ConfigurationError, match="RETRIEVAL_CONNECT_TIMEOUT='soon'"):
        connect()


@pytest.fixture
def team_database(empty_database: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> PgDatabase:
    """A database migrated in schema ``team_memory``, named with the store's and the read
    settings only by the environment."""
    upgrade(empty_database.engine, MigrationSettings(schema="team_memory", embedding_dim=384))
    monkeypatch.setenv("RETRIEVAL_DATABASE_URL", empty_database.url)
    monkeypatch.setenv("RETRIEVAL_SCHEMA", "team_memory")
    monkeypatch.setenv("RETRIEVAL_MAX_TEXT_CHARS", "40")
    monkeypatch.setenv("RETRIEVAL_SEMANTIC_LIMIT", "3")
    return empty_database


def test_the_stores_and_retrievers_read_their_settings_from_the_environment(
    team_database: PgDatabase, monkeypatch: pytest.MonkeyPatch, counting_embedder: CountingEmbedder
) -> None:
    monkeypatch.setenv("RETRIEVAL_TEXT_SEARCH_CONFIG", "simple")
    monkeypatch.setenv("RETRIEVAL_EMBEDDER_BACKEND", "torch")
    engine = team_database.engine

    store = MemoryStore(engine, embedder=counting_embedder)
    assert store.schema == "team_memory"
    assert store.config.max_text_chars == 40
    with pytest.raises(ValidationError, match="40"):
        store.remember("x" * 41, tenant_id="acme")
    store.remember("The staging database is PostgreSQL 18.", tenant_id="acme")

    retriever = HybridRetriever(engine, background_writes=False)
    try:
        assert retriever.schema == "team_memory"
        assert retriever.config.semantic.limit == 3
        assert retriever.embedder.backend == "torch"  # RETRIEVAL_EMBEDDER_BACKEND, not loaded
    finally:
        retriever.close()
    assert DocumentStore(store).text_search_config == "simple"

    database = connect()
    try:
        from_database = MemoryStore.from_database(database, embedder=counting_embedder)
        assert from_database.schema == "team_memory"
        assert from_database.config.max_text_chars == 40
        with HybridRetriever.from_store(from_database, background_writes=False) as shared:
            found = shared.retrieve("which postgres runs staging", tenant_id="acme")
            assert shared.config.semantic.limit == 3
        assert [result.content for result in found] == ["The staging database is PostgreSQL 18."]
    finally:
        database.dispose()


def test_the_async_api_reads_its_settings_from_the_environment(
    team_database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:

    async def run() -> None:
        database = connect()
        async with (
            AsyncMemoryStore.from_database(database, embedder=counting_embedder) as store,
            AsyncHybridRetriever.from_store(store, background_writes=False) as retriever,
        ):
            assert store.schema == "team_memory"
            assert store.sync.config.max_text_chars == 40
            assert retriever.config.semantic.limit == 3
            await store.remember("Deploys happen on Tuesdays.", tenant_id="acme")
            found = await retriever.retrieve("when do we deploy", tenant_id="acme")
            assert [result.content for result in found] == ["Deploys happen on Tuesdays."]
        database.dispose()

    asyncio.run(run())


@pytest.mark.slow
def test_the_readme_example_writes_to_the_database_the_environment_names(
    database: PgDatabase, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "RETRIEVAL_DATABASE_URL": database.url,
        "RETRIEVAL_DATA_DIR": str(tmp_path / "embedded"),
        "HF_HUB_OFFLINE": "1",
    }
    ran = subprocess.run(
        [sys.executable, "-c", _readme_example()],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    assert "Never run schema migrations" in ran.stdout
    with database.engine.connect() as connection:
        stored = connection.execute(
            text("SELECT tenant_id, kind FROM retrieval.memories WHERE content LIKE 'Never run%'")
        ).all()
    assert [tuple(row) for row in stored] == [("acme", "directive")]
    assert not (tmp_path / "embedded").exists()  # no embedded server was started
