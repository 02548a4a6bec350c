"""Connections of the read path: one round trip per statement.

A pooled SQLAlchemy checkout costs extra round trips (the pre-ping, ``BEGIN``, the reset on
return). The retriever instead keeps its own psycopg connections, made by the engine (so
pgvector's types are registered) and detached from its pool, in autocommit mode, with the
session settings of the read path set once when each is opened.

Statements are written with named placeholders (``%(name)s``). psycopg converts such a query to
PostgreSQL's ``$n`` form on every call once it is longer than 4,096 characters (it caches only
shorter ones), and the retriever's statement is several times longer: that conversion cost
about 0.5 ms a call. So each statement is converted once here, kept, and sent through a
:class:`psycopg.RawCursor` with its parameters in order. Results come back in binary format:
the server skips formatting floats and timestamps as text and the driver parsing them (about
0.3 ms for the retriever's 40 to 90 rows; the values are the same).

The connections are bounded: at most ``max_connections`` are open at once (each concurrent
call holds one); a call beyond them waits up to ``wait_seconds`` for one to come free, then
raises :class:`~retrieval.errors.DatabaseError`. Without the bound a burst of threads would
open a server connection each and keep them all, up to PostgreSQL's ``max_connections``.

On a Citus coordinator a statement runs on the worker that holds its tenant's shard, which
does not see the coordinator's session settings: there each statement runs in a transaction of
its own that names its settings with ``SET LOCAL`` (sent on to the worker, see
:mod:`retrieval.db.local_settings`), in one pipelined round trip; a statement whose settings
every worker holds for the role already goes alone, outside a transaction. A read statement
whose columns the caller names goes through the schema's read function there, which runs it
over the tenant's shards on that worker (:mod:`retrieval.db.shard_reads`).
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from sqlalchemy import Engine

from retrieval.db.engine import ensure_vector_types
from retrieval.db.local_settings import has_citus, held_on_workers, set_local_statement
from retrieval.db.placeholders import PositionalQuery, positional
from retrieval.db.queries import statement
from retrieval.db.row_security import PROBE, SETTING, probe_parameters
from retrieval.db.shard_reads import ShardReads
from retrieval.db.versions import versions_of
from retrieval.errors import ConfigurationError, DatabaseError, translate_database_errors

Connection = psycopg.Connection[Any]

_CONVERTED_LIMIT = 256  # statements kept converted per pool (the retriever has a few shapes)
DEFAULT_MAX_CONNECTIONS = 10  # open at once per pool: two cores saturate at two to four calls
DEFAULT_WAIT_SECONDS = 30.0  # a call waits this long for a free connection
_LONGEST_WAIT_SECONDS = 86_400.0  # a day: threading's timeouts overflow past a few years
_SET_SESSION = statement("db.set_session")
# pgvector 0.8.0's setting: a filtered HNSW scan goes on until it has its rows.
ITERATIVE_SCAN = "hnsw.iterative_scan"
# Settings a Citus coordinator reads and its workers do not (a worker runs the statement the
# coordinator routes to it, unprepared): set once on the coordinator's session, not again as
# SET LOCAL with each statement.
PLAN_CACHE_MODE = "plan_cache_mode"  # the setting that chooses a custom or a generic plan
_COORDINATOR_ONLY = frozenset({PLAN_CACHE_MODE})
# How long a connection trusts what the workers said they hold before asking again.
_HELD_SECONDS = 60.0


def worker_settings(settings: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Of a read's ``(name, value)`` settings, those a Citus worker reads (all but the
    coordinator's own, such as ``plan_cache_mode``): what a read sends to the worker unless
    the worker holds it already for the role."""
    return [(name, value) for name, value in settings if name not in _COORDINATOR_ONLY]


class ReadConnections:
    """A small pool of autocommit psycopg connections with ``settings`` applied on open.

    ``settings`` are ``(name, value)`` pairs applied with ``set_config`` (session scope). A
    connection that breaks is dropped and the statement retried once on a new one. At most
    ``max_connections`` are open at once; a call finding them all busy waits up to
    ``wait_seconds`` for one.
    """

    def __init__(
        self,
        engine: Engine,
        settings: Sequence[tuple[str, str]] = (),
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
        schema: str | None = None,
    ) -> None:
        _check_pool_size(max_connections, wait_seconds)
        self.engine = engine
        self._where = str(engine.url)  # how an error names the database (its password masked)
        # Connections that row-level security binds on ``schema``'s tables name the tenant of
        # each statement (its ``tenant_id`` parameter) to the policies first.
        self.schema = schema
        # On a Citus coordinator: the read statements that name their columns, run through
        # the schema's read function on the worker holding the tenant's shards.
        self._shard_reads = ShardReads(schema) if schema is not None else None
        self._bound: weakref.WeakKeyDictionary[Connection, bool] = weakref.WeakKeyDictionary()
        # Connections to a Citus coordinator: their settings go with each statement, but those
        # every worker holds already for the role (asked on a connection's first read, and
        # again after a minute), with when they were asked.
        self._distributed: weakref.WeakKeyDictionary[Connection, bool] = weakref.WeakKeyDictionary()
        self._held: weakref.WeakKeyDictionary[Connection, tuple[float, dict[str, str]]] = (
            weakref.WeakKeyDictionary()
        )
        self._row_security: bool | None = None
        self._citus: bool | None = None
        self._on_shards: bool | None = None
        self.settings = tuple(settings)
        self.max_connections = max_connections
        self.wait_seconds = wait_seconds
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_connections)
        self._converted: dict[str, PositionalQuery] = {}
        # Each open connection's session settings, as this pool last set them.
        self._settings_of: weakref.WeakKeyDictionary[Connection, dict[str, str]] = (
            weakref.WeakKeyDictionary()
        )

    def execute(
        self,
        query: str,
        params: Mapping[str, Any],
        *,
        settings: Mapping[str, str] | None = None,
        columns: Sequence[tuple[str, str]] | None = None,
    ) -> list[tuple[Any, ...]]:
        """Run one statement and return its rows, if any (one round trip on a warm connection).

        ``query`` uses ``%(name)s`` placeholders, bound from ``params``; results are read in
        binary format. ``settings`` are session settings the statement needs (a larger
        ``hnsw.ef_search`` for a larger pool, say): a connection whose value differs is set
        first, one round trip more, and keeps it. ``columns`` (each column's name and SQL
        type, in order) mark a read statement of one tenant (its ``tenant_id`` among
        ``params``): on a Citus coordinator whose schema has the read function, it runs on the
        worker holding the tenant's shards (:mod:`retrieval.db.shard_reads`).
        """
        converted = self._positional(query)
        values = converted.values(params)
        with translate_database_errors(self._where):
            for attempt in (1, 2):
                with self._connection() as connection:
                    try:
                        if self._bound.get(connection):
                            tenant = str(params.get("tenant_id", ""))  # none: sees nothing
                            settings = {**(settings or {}), SETTING: tenant}
                        if self._distributed.get(connection):
                            if columns is not None and self._on_shard_available(connection):
                                return self._on_shard(connection, query, params, settings, columns)
                            return self._on_workers(connection, converted, values, settings)
                        if settings:
                            self._apply(connection, settings)
                        return _rows(connection, converted, values)
                    except psycopg.OperationalError:
                        if attempt == 2 or not connection.closed:
                            raise
                        # A stale connection (server restarted): retry on a fresh one.
        raise AssertionError("unreachable")

    def _positional(self, query: str) -> PositionalQuery:
        # The statement in $n form, converted once per pool.
        converted = self._converted.get(query)
        if converted is None:
            converted = positional(query)
            with self._lock:
                if len(self._converted) >= _CONVERTED_LIMIT:
                    self._converted.clear()  # a caller sending ever new statements
                self._converted[query] = converted
        return converted

    def iterative_scan(self) -> bool:
        """Whether the database's pgvector has ``hnsw.iterative_scan`` (read once per engine);
        without it, this pool's connections do not set it (docs/deployment.md)."""
        supported = versions_of(self.engine).iterative_scan
        if not supported and any(name == ITERATIVE_SCAN for name, _ in self.settings):
            self.settings = tuple((n, v) for n, v in self.settings if n != ITERATIVE_SCAN)
        return supported

    def row_security_active(self) -> bool:
        """Whether row-level security binds this pool's role on ``schema`` (asked once, on the
        first connection; all of them share the engine's role)."""
        if self._row_security is None:
            with translate_database_errors(self._where), self._connection() as connection:
                self._row_security = bool(self._bound.get(connection))
        return self._row_security

    def distributed(self) -> bool:
        """Whether the database is a Citus coordinator (asked once, on the first connection)."""
        if self._citus is None:
            with translate_database_errors(self._where), self._connection() as connection:
                self._citus = bool(self._distributed.get(connection))
        return self._citus

    def on_shards(self) -> bool:
        """Whether this pool's read statements run on the worker that holds their tenant's
        shards, through the schema's read function (a Citus coordinator whose schema has it,
        and a role that may call it; asked once)."""
        if self._on_shards is None:
            with translate_database_errors(self._where), self._connection() as connection:
                self._on_shards = bool(
                    self._distributed.get(connection) and self._on_shard_available(connection)
                )
        return self._on_shards

    def _on_workers(
        self,
        connection: Connection,
        converted: PositionalQuery,
        values: list[Any],
        settings: Mapping[str, str] | None,
    ) -> list[tuple[Any, ...]]:
        # The statement in a transaction of its own with every setting it needs as SET LOCAL,
        # but those only the coordinator reads where its session already holds them, and those
        # every worker holds for the role; alone, outside a transaction, when none is left.
        session = dict(self.settings)
        held = self._held_on_workers(connection)
        local = {
            name: value
            for name, value in {**session, **(settings or {})}.items()
            if not (name in _COORDINATOR_ONLY and session.get(name) == value)
            and held.get(name) != value
        }
        if not local:
            return _rows(connection, converted, values)
        with connection.pipeline() as pipeline, connection.transaction():
            for name, value in local.items():
                connection.execute(set_local_statement(name, value))
            with psycopg.RawCursor(connection) as cursor:
                cursor.execute(converted.text, values, binary=True)
                pipeline.sync()  # the result's description arrives with it
                return cursor.fetchall() if cursor.description else []

    def _on_shard_available(self, connection: Connection) -> bool:
        return self._shard_reads is not None and self._shard_reads.available(connection)

    def _on_shard(
        self,
        connection: Connection,
        query: str,
        params: Mapping[str, Any],
        settings: Mapping[str, str] | None,
        columns: Sequence[tuple[str, str]],
    ) -> list[tuple[Any, ...]]:
        # The read statement through the read function, on the worker that holds the tenant's
        # shards, under the plan cache mode the statement asks for; routed as any other when a
        # shard of the tenant is gone (split or isolated since its shards were asked for).
        assert self._shard_reads is not None
        plan_mode = {**dict(self.settings), **(settings or {})}.get(PLAN_CACHE_MODE, "auto")
        call, values = self._shard_reads.call(
            connection, query, params, columns=columns, plan_mode=plan_mode
        )
        # The statement's plan cache mode goes to the worker with the call; the coordinator
        # plans the call itself for its values (its session's mode), as Citus delegates a call
        # only by its tenant's value, and keeps no generic plan of a routed statement either.
        coordinator = {n: v for n, v in (settings or {}).items() if n != PLAN_CACHE_MODE}
        converted = self._positional(call)
        try:
            return self._on_workers(connection, converted, converted.values(values), coordinator)
        except psycopg.errors.UndefinedTable:
            self._shard_reads.forget(str(params["tenant_id"]))
        except psycopg.Error as error:
            if connection.closed:
                raise
            # The server's words without the context that quotes the call's values (the
            # question, its vector) as the function executed them.
            raise DatabaseError(
                f"PostgreSQL failed: {error.diag.message_primary or type(error).__name__} (the "
                "read statement, run on the node that holds the tenant's shards)"
            ) from error
        routed = self._positional(query)
        return self._on_workers(connection, routed, routed.values(params), coordinator)

    def _apply(self, connection: Connection, settings: Mapping[str, str]) -> None:
        current = self._settings_of.setdefault(connection, dict(self.settings))
        for name, value in settings.items():
            if current.get(name) != value:
                connection.execute(_SET_SESSION, {"name": name, "value": value})
                current[name] = value

    def close(self) -> None:
        """Close every idle connection; later calls open new ones."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        if not self._slots.acquire(timeout=self.wait_seconds):
            raise DatabaseError(
                f"all {self.max_connections} read connections stayed busy for "
                f"{self.wait_seconds:g} s: give the retriever more (max_connections=) or make "
                "fewer calls at once"
            )
        try:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                connection = self._open()
            try:
                yield connection
            finally:
                if connection.closed or connection.info.transaction_status not in (
                    psycopg.pq.TransactionStatus.IDLE,
                ):
                    connection.close()
                else:
                    with self._lock:
                        self._idle.append(connection)
        finally:
            self._slots.release()

    def _open(self) -> Connection:
        proxied = self.engine.raw_connection()
        connection: Connection = proxied.driver_connection  # type: ignore[assignment]
        proxied.detach()  # ours now: the pool neither resets nor reuses it
        connection.autocommit = True
        ensure_vector_types(connection)  # an engine make_engine did not make has none
        self.iterative_scan()  # before a setting pgvector may not know is sent
        for name, value in self.settings:
            connection.execute(_SET_SESSION, {"name": name, "value": value})
        if self.schema is not None:
            probe = connection.execute(PROBE, probe_parameters(self.schema)).fetchone()
            self._bound[connection] = bool(probe and probe[0])
        self._distributed[connection] = has_citus(connection)
        return connection

    def _held_on_workers(self, connection: Connection) -> dict[str, str]:
        # The settings every worker holds for the role, asked again after a while: a role's
        # setting removed, or a worker added without it, is then sent again.
        asked_at, held = self._held.get(connection, (-math.inf, {}))
        now = time.monotonic()
        if now - asked_at >= _HELD_SECONDS:
            held = held_on_workers(connection, (name for name, _ in worker_settings(self.settings)))
            self._held[connection] = (now, held)
        return held


def _rows(connection: Connection, converted: PositionalQuery, values: list[Any]) -> list[Any]:
    # One statement, its rows (none for a command) in binary format.
    with psycopg.RawCursor(connection) as cursor:
        cursor.execute(converted.text, values, binary=True)
        # Whether it returned rows, without describing its columns (description builds them).
        result = cursor.pgresult
        return cursor.fetchall() if result is not None and result.nfields else []


def _check_pool_size(max_connections: int, wait_seconds: float) -> None:
    """Refuse a pool bound that is not a positive integer, or a wait that is not positive."""
    if isinstance(max_connections, bool) or not isinstance(max_connections, int):
        raise ConfigurationError(f"max_connections must be an integer, got {max_connections!r}")
    if max_connections < 1:
        raise ConfigurationError(f"max_connections must be >= 1, got {max_connections}")
    if isinstance(wait_seconds, bool) or not isinstance(wait_seconds, int | float):
        raise ConfigurationError(f"wait_seconds must be a number, got {wait_seconds!r}")
    if not 0 < wait_seconds <= _LONGEST_WAIT_SECONDS:
        raise ConfigurationError(
            f"wait_seconds must be > 0 and at most {_LONGEST_WAIT_SECONDS:g}, got {wait_seconds!r}"
        )
