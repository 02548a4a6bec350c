"""Faults: a client killed in the middle of a COPY batch, and the embedded postmaster killed
while clients write. Every committed row survives, no batch is partial, and the next client
works. Each test has an embedded server of its own (killing the suite's would stop the others).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from retrieval.db.config import DatabaseConfig
from retrieval.db.embedded_watchdog import postmaster_pid
from retrieval.db.engine import connect
from tests.processes import read_line

pytestmark = [pytest.mark.slow, pytest.mark.embedded_server]

BATCH = 400
TIMEOUT = 120.0

# Writes batches of BATCH memories (precomputed vectors: the COPY path, no model) and prints
# "ok N" once batch N committed, "failed N <error>" when it did not; keeps going either way.
WRITER = """
import sys
from pathlib import Path

import numpy as np

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.errors import RetrievalError
from retrieval.memory.store import MemoryStore

database = connect(DatabaseConfig(data_dir=Path(sys.argv[1])))
store = MemoryStore.from_database(database)
rows, first = int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(first)
print("ready", flush=True)
batch = first
while True:
    vectors = rng.standard_normal((rows, 384)).astype(np.float32)
    items = [
        {"text": f"batch {batch} row {row}", "tenant_id": "acme", "metadata": {"batch": batch},
         "embedding": vectors[row]}
        for row in range(rows)
    ]
    try:
        store.remember_many(items)
        print("ok", batch, flush=True)
    except RetrievalError as error:
        print("failed", batch, str(error).splitlines()[0], flush=True)
    batch += 1
"""


class Writer:
    """A writer process and the batches it reported."""

    def __init__(self, data_dir: Path, first_batch: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(data_dir), str(BATCH), str(first_batch)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.committed: set[int] = set()
        self.failed: set[int] = set()
        assert self.line() == "ready"

    def line(self) -> str:
        return read_line(self.process, TIMEOUT, "the writer stopped answering")

    def until_committed(self, count: int) -> None:
        """Read reports until ``count`` more batches committed."""
        goal = len(self.committed) + count
        while len(self.committed) < goal:
            status, batch, *_ = self.line().split(maxsplit=2)
            (self.committed if status == "ok" else self.failed).add(int(batch))

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(TIMEOUT)
        assert self.process.stdout is not None
        for line in self.process.stdout.read().splitlines():  # reports already written
            status, batch, *_ = line.split(maxsplit=2)
            (self.committed if status == "ok" else self.failed).add(int(batch))


@pytest.fixture
def data_dir(migrated_data_dir: Path) -> Path:
    return migrated_data_dir


def _batches(data_dir: Path) -> dict[int, int]:
    database = connect(DatabaseConfig(data_dir=data_dir))
    try:
        with database.engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT (metadata->>'batch')::int, count(*) FROM retrieval.memories GROUP BY 1"
                )
            ).all()
        return {int(batch): int(count) for batch, count in rows}
    finally:
        database.dispose()


def _next_client_works(data_dir: Path) -> None:
    database = connect(DatabaseConfig(data_dir=data_dir))
    try:
        with database.engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO retrieval.memories (tenant_id, content, embedding, "
                    "embedding_model) VALUES ('acme', 'after', array_fill(0.1, ARRAY[384])"
                    "::vector, 'm')"
                )
            )
            found = connection.execute(
                text("SELECT count(*) FROM retrieval.memories WHERE content = 'after'")
            ).scalar_one()
        assert found == 1
    finally:
        database.dispose()


def test_a_client_killed_during_a_copy_batch_leaves_no_partial_batch(data_dir: Path) -> None:
    for round_ in range(3):
        writer = Writer(data_dir, first_batch=round_ * 1000)
        writer.until_committed(2 + round_)
        time.sleep(0.05 * round_)  # a different moment of the next COPY each round
        writer.kill()
        batches = _batches(data_dir)
        assert all(count == BATCH for count in batches.values()), batches  # none partial
        assert writer.committed <= set(batches), "a committed batch was lost"
    _next_client_works(data_dir)


def test_a_postmaster_killed_during_writes_loses_no_committed_row(data_dir: Path) -> None:
    writer = Writer(data_dir, first_batch=0)
    writer.until_committed(3)
    server = postmaster_pid(data_dir)
    assert server is not None
    os.kill(server, signal.SIGKILL)
    # The writer's next batch fails or finds the server gone and starts it again; either way
    # it goes on writing.
    writer.until_committed(3)
    writer.kill()
    restarted = postmaster_pid(data_dir)
    assert restarted is not None and restarted != server
    batches = _batches(data_dir)
    assert all(count == BATCH for count in batches.values()), batches
    assert writer.committed <= set(batches), "a committed batch was lost"
    assert not writer.failed & set(batches), "a failed batch left rows"
    _next_client_works(data_dir)
