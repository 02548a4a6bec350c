"""build_context on a real server that stops mid-run: the agent's turn goes on."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from retrieval.aio import AsyncHybridRetriever
from retrieval.aio.agent_context import abuild_context
from retrieval.db.embedded import restart_if_down, start_embedded
from retrieval.db.embedded_watchdog import postmaster_pid
from retrieval.db.engine import make_engine
from retrieval.embedding.cache import EmbeddingCache
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.errors import ValidationError
from retrieval.memory.store import MemoryStore
from retrieval.search.agent_context import ContextConfig, build_context
from retrieval.search.retriever import HybridRetriever

WORKING_STATE = [
    {"role": "user", "content": "The deploy failed again, can you look?"},
    {"role": "assistant", "content": "Looking at the deploy logs now."},
]


@pytest.fixture
def data_dir(migrated_data_dir: Path) -> Path:
    return migrated_data_dir


def _stop(data_dir: Path) -> None:
    pid = postmaster_pid(data_dir)
    assert pid is not None
    os.kill(pid, signal.SIGINT)  # PostgreSQL's fast shutdown
    deadline = time.monotonic() + 30
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not psutil.pid_exists(pid)


@pytest.mark.embedded_server
def test_the_turn_goes_on_with_its_working_state_when_the_server_stops(
    data_dir: Path, embedder: SentenceTransformerEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    server = start_embedded(data_dir)
    # A plain engine: the library's embedded connect would start the server again.
    engine = make_engine(server.url())
    store = MemoryStore(engine, embedder=embedder)
    store.remember("The deploy failed because the migration timed out", tenant_id="acme")
    retriever = HybridRetriever.from_store(store, background_writes=False, wait_seconds=2)
    try:
        context = build_context(
            retriever, "why did the deploy fail", WORKING_STATE, tenant_id="acme"
        )
        assert context.metrics.status == "retrieved"
        assert context.metrics.results_per_source.get("semantic") == 1
        assert context.metrics.mean_final_score is not None
        assert 0.0 <= context.metrics.mean_final_score <= 1.0
        assert context.messages[-2:] == WORKING_STATE
        assert "migration timed out" in str(context.messages[0]["content"])

        _stop(data_dir)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="retrieval.search.agent_context"):
            failed = build_context(
                retriever, "why did the deploy fail again", WORKING_STATE, tenant_id="acme"
            )
        assert failed.messages == WORKING_STATE
        assert failed.response is None
        assert failed.metrics.status == "failed"
        assert failed.metrics.error is not None
        assert failed.metrics.error.startswith("DatabaseUnavailableError")
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert "working state alone" in warnings[0].getMessage()

        async def through_async() -> None:
            async with AsyncHybridRetriever(retriever) as asynchronous:
                again = await abuild_context(
                    asynchronous, "deploy", WORKING_STATE, tenant_id="acme"
                )
                assert again.metrics.status == "failed"
                assert again.messages == WORKING_STATE

        asyncio.run(through_async())

        # The server comes back: the next turn retrieves again, with the same retriever.
        assert restart_if_down(data_dir)
        recovered = build_context(
            retriever, "why did the deploy fail", WORKING_STATE, tenant_id="acme"
        )
        assert recovered.metrics.status == "retrieved"
        assert recovered.metrics.results_per_source.get("semantic") == 1
    finally:
        retriever.close()
        engine.dispose()


def test_the_switch_off_returns_the_working_state_without_touching_anything(
    embedder: SentenceTransformerEmbedder,
) -> None:
    # An engine on a port nothing listens on: any touch of the database would fail.
    engine = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    retriever = HybridRetriever(
        engine, cache=EmbeddingCache(embedder, "retrieval"), background_writes=False
    )
    off = ContextConfig.from_env({"RETRIEVAL_ENABLED": "false"})
    assert off.enabled is False
    context = build_context(retriever, "anything", WORKING_STATE, tenant_id="acme", config=off)
    assert context.messages == WORKING_STATE
    assert context.messages[0] is WORKING_STATE[0]
    assert context.metrics.status == "disabled"
    assert context.response is None
    assert retriever.cache.stats.misses == 0  # the model was not asked either
    # Read from the environment at each call when no config is given.
    os.environ["RETRIEVAL_ENABLED"] = "false"
    try:
        assert build_context(retriever, "x", [], tenant_id="acme").metrics.status == "disabled"
    finally:
        del os.environ["RETRIEVAL_ENABLED"]
    # A bad argument is the caller's bug, not an outage: it raises.
    with pytest.raises(ValidationError):
        build_context(retriever, "x", WORKING_STATE, tenant_id="", config=ContextConfig())
    retriever.close()
    engine.dispose()
