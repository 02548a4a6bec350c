"""Stops the embedded server once no process that uses it is alive.

The processes using an embedded server are listed in ``.handle_pids.json`` of its data
directory, and the last one to exit stops the server. A process killed with ``SIGKILL`` (or by
the out-of-memory killer) never takes its pid off that list, so without a watcher the server
would run on with no client. The process that starts the server also starts this watcher, a
small detached process that checks the list every second: it drops pids of processes that are
gone, and when none is left it stops the server (fast shutdown, as ``pg_ctl stop`` does) and
exits. It exits too when the server was stopped by its last user, or its data directory removed.

Run as a script (``python embedded_watchdog.py DATA_DIR LOCK_FILE``): it imports only the
standard library, psutil and fasteners, so it stays small.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from pathlib import Path

import fasteners
import psutil

POLL_SECONDS = 1.0
STOP_SECONDS = 60.0
HANDLES_FILE = ".handle_pids.json"


def pid_file(data_dir: Path, lock_file: Path) -> Path:
    """Where the watcher of ``data_dir`` writes its pid: beside the servers' lock file, not in
    the data directory (a throw-away server's directory is removed while its watcher exits)."""
    digest = hashlib.sha256(str(data_dir).encode()).hexdigest()[:16]
    return lock_file.parent / f"retrieval-watchdog-{digest}.pid"


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def postmaster_pid(data_dir: Path) -> int | None:
    """The pid in ``postmaster.pid``, or ``None`` when there is none."""
    try:
        return int((data_dir / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def live_members(data_dir: Path) -> list[int]:
    """The pids of ``.handle_pids.json`` that still run; the others are taken off the list."""
    handles = data_dir / HANDLES_FILE
    try:
        pids = json.loads(handles.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        pids = []
    living = [pid for pid in pids if isinstance(pid, int) and alive(pid)]
    if living != pids:
        handles.write_text(json.dumps(living))
    return living


def stop_server(data_dir: Path) -> bool:
    """Fast shutdown of the server of ``data_dir`` (SIGINT, as ``pg_ctl stop -m fast``), waiting
    until it is down; ``False`` when no server ran."""
    pid = postmaster_pid(data_dir)
    if pid is None or not alive(pid):
        return False
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + STOP_SECONDS
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return True


def watch(data_dir: Path, lock_file: Path) -> None:
    """Check every second, under the servers' lock, until no member is left; then stop."""
    lock = fasteners.InterProcessLock(str(lock_file))
    while True:
        time.sleep(POLL_SECONDS)
        if not (data_dir / "PG_VERSION").exists():
            return  # the data directory was removed (a throw-away server)
        with lock:
            if live_members(data_dir):
                continue
            stop_server(data_dir)
            return


def main(argv: list[str]) -> int:
    """Entry point: ``embedded_watchdog.py DATA_DIR LOCK_FILE``."""
    data_dir, lock_file = Path(argv[0]), Path(argv[1])
    try:
        watch(data_dir, lock_file)
    finally:
        own = pid_file(data_dir, lock_file)
        try:
            if int(own.read_text()) == os.getpid():
                own.unlink()
        except (OSError, ValueError):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
