"""Stops the embedded server once no process that uses it is alive.

The processes using an embedded server are listed in ``.handle_pids.json`` of its data
directory, and the last one to exit stops the server. A process killed with ``SIGKILL`` (or by
the out-of-memory killer) never takes its pid off that list, so without a watcher the server
would run on with no client. The process that starts the server also starts this watcher, a
small detached process that checks the list every second: it drops pids of processes that are
gone, and when none is left it stops the server (fast shutdown, as ``pg_ctl stop`` does) and
exits. It exits too when the server was stopped by its last user, or its data directory removed.

The list is written whole or not at all (a temporary file renamed over it). A list found damaged
(a process killed while an older version wrote it in place) is read as "users unknown"
(:data:`UNKNOWN`), never as "nobody": the watcher then stops the server only once no known user
lives and no client has been connected to it for :data:`QUIET_POLLS` checks in a row.

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
# The stand-in, in a list found damaged, for the users it lost (no process has pid 0).
UNKNOWN = 0
# Checks in a row with no client connected after which users listed as unknown count as gone.
QUIET_POLLS = 10


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


def read_members(data_dir: Path) -> list[int]:
    """The pids of ``.handle_pids.json`` (none when there is no list; ``[UNKNOWN]`` when it
    is damaged: its users are not known)."""
    return _listed(data_dir)[1]


def _listed(data_dir: Path) -> tuple[str | None, list[int]]:
    # The list's text as read (None: no list, or one that cannot be read) and its pids.
    try:
        text = (data_dir / HANDLES_FILE).read_text()
    except FileNotFoundError:
        return None, []
    except OSError:
        return None, [UNKNOWN]
    try:
        pids = json.loads(text)
    except ValueError:
        return text, [UNKNOWN]
    if not isinstance(pids, list) or not all(
        isinstance(pid, int) and not isinstance(pid, bool) and pid >= 0 for pid in pids
    ):
        return text, [UNKNOWN]
    return text, pids


def write_members(data_dir: Path, pids: list[int]) -> None:
    """Write the list whole: a temporary file beside it, renamed over it."""
    handles = data_dir / HANDLES_FILE
    temporary = handles.with_name(f"{HANDLES_FILE}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(pids))
    os.replace(temporary, handles)


def live_members(data_dir: Path) -> list[int]:
    """The pids of ``.handle_pids.json`` that still run (and :data:`UNKNOWN`, if the list was
    found damaged); the others are taken off the list, and a damaged list is written again."""
    written, pids = _listed(data_dir)
    living = [pid for pid in pids if pid == UNKNOWN or alive(pid)]
    if written is not None and written != json.dumps(living):
        write_members(data_dir, living)
    return living


def has_clients(data_dir: Path) -> bool:
    """Whether a client is connected to the server of ``data_dir`` (a backend of a session
    over its socket, ``postgres: user db [local] ...``)."""
    pid = postmaster_pid(data_dir)
    if pid is None or not alive(pid):
        return False
    try:
        children = psutil.Process(pid).children()
    except psutil.Error:
        return False
    for child in children:
        try:
            if "[local]" in " ".join(child.cmdline()):
                return True
        except psutil.Error:
            continue
    return False


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
    quiet = 0
    while True:
        time.sleep(POLL_SECONDS)
        if not (data_dir / "PG_VERSION").exists():
            return  # the data directory was removed (a throw-away server)
        with lock:
            members = live_members(data_dir)
            if any(pid != UNKNOWN for pid in members):
                quiet = 0
                continue
            if members:  # only users a damaged list lost: gone once no client is connected
                quiet = 0 if has_clients(data_dir) else quiet + 1
                if quiet < QUIET_POLLS:
                    continue
                write_members(data_dir, [])
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
