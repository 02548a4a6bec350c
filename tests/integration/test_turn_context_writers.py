"""A conversation continued by another writer: the turn before is read from the database when
this process never saw it (another process, another store, no in-process cache, an ingest that
continues a stored session, threads writing one conversation at once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
from sqlalchemy import text

from retrieval.cli.commands import main
from retrieval.memory.config import WriteConfig
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from tests.conftest import CountingEmbedder, PgDatabase, as_stored
from tests.threads import run_together

FIRST, SECOND = "Did you raise the lock timeout?", "Ten seconds, and it went through."
Vector = npt.NDArray[np.float32]


def _turn(body: str, position: int, thread: str = "c") -> MemoryInput:
    return MemoryInput(text=body, tenant_id="t", kind="message", thread_id=thread,
                       position=position)  # fmt: skip


def _vectors(database: PgDatabase, thread: str = "c") -> dict[int, Vector]:
    with database.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT position, embedding FROM retrieval.memories "
                "WHERE tenant_id = 't' AND thread_id = :thread"
            ),
            {"thread": thread},
        ).all()
    return {position: np.asarray(vector.to_numpy(), dtype=np.float32) for position, vector in rows}


def _mixed(embedder: CountingEmbedder, own: str, previous: str) -> Vector:
    vectors = embedder.inner.embed([own, previous])
    mixed = vectors[0] + np.float32(WriteConfig().turn_context) * vectors[1]
    return as_stored(mixed / np.linalg.norm(mixed))


def _holds_context(database: PgDatabase, embedder: CountingEmbedder) -> None:
    stored = _vectors(database)
    assert sorted(stored) == [0, 1]
    assert np.allclose(stored[1], _mixed(embedder, SECOND, FIRST), atol=2e-3)


def test_a_turn_continues_what_another_process_stored(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for position, body in enumerate((FIRST, SECOND)):
        ran = subprocess.run(
            [sys.executable, "-m", "retrieval", "--database-url", database.url, "remember", body,
             "--tenant", "t", "--thread", "c", "--position", str(position)],
            env=env, capture_output=True, text=True, check=False, timeout=300,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert "Traceback" not in ran.stderr
    _holds_context(database, counting_embedder)


def test_a_turn_continues_what_another_store_stored(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    MemoryStore(database.engine, embedder=counting_embedder).remember_many([_turn(FIRST, 0)])
    MemoryStore(database.engine, embedder=counting_embedder).remember_many([_turn(SECOND, 1)])
    _holds_context(database, counting_embedder)
    assert counting_embedder.embedded == [FIRST, SECOND]  # the first turn's vector was read


def test_a_turn_continues_with_no_in_process_cache(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    config = WriteConfig(cache_entries=0)
    store = MemoryStore(database.engine, embedder=counting_embedder, config=config)
    store.remember_many([_turn(FIRST, 0)])
    store.remember_many([_turn(SECOND, 1)])
    _holds_context(database, counting_embedder)


def test_an_ingest_continues_a_stored_session(
    database: PgDatabase, counting_embedder: CountingEmbedder, tmp_path: Path
) -> None:
    MemoryStore(database.engine, embedder=counting_embedder).remember_many([_turn(FIRST, 0)])
    transcript = tmp_path / "c.jsonl"
    transcript.write_text(json.dumps({"speaker": "Ana", "text": SECOND, "session": "c"}) + "\n")
    url = ["--database-url", database.url]
    assert main([*url, "ingest", str(transcript), "--tenant", "t"]) == 0
    stored = _vectors(database)
    assert sorted(stored) == [0, 1]  # numbered after the stored turn
    with database.engine.connect() as connection:
        (body,) = connection.execute(
            text("SELECT content FROM retrieval.memories WHERE position = 1")
        ).one()
    assert np.allclose(stored[1], _mixed(counting_embedder, body, FIRST), atol=2e-3)


def test_eight_threads_write_one_conversation(
    database: PgDatabase, counting_embedder: CountingEmbedder
) -> None:
    turns = [f"Turn {position} of the thread about the lock timeout." for position in range(32)]

    def write(worker: int) -> None:
        store = MemoryStore(database.engine, embedder=counting_embedder)
        for position in range(worker, len(turns), 8):
            store.remember_many([_turn(turns[position], position, thread="many")])

    assert run_together(write, workers=8) == []
    stored = _vectors(database, thread="many")
    assert sorted(stored) == list(range(len(turns)))
    own = counting_embedder.inner.embed(turns)
    for position in range(1, len(turns)):
        # Each turn holds its own vector, with its predecessor's when that was stored first.
        alone = as_stored(own[position])
        mixed = _mixed(counting_embedder, turns[position], turns[position - 1])
        assert np.allclose(stored[position], alone, atol=2e-3) or np.allclose(
            stored[position], mixed, atol=2e-3
        )
