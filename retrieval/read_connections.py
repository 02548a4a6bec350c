"""Connections of the read path: one round trip per statement.

A pooled SQLAlchemy checkout costs extra round trips (the pre-ping, ``BEGIN``, the reset on
return). The retriever instead keeps its own psycopg connections, made by the engine (so
pgvector's types are registered) and detached from its pool, in autocommit mode, with the
session settings of the read path set once when each is opened.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from sqlalchemy import Engine

from retrieval.errors import translate_database_errors

Connection = psycopg.Connection[Any]


class ReadConnections:
    """A small pool of autocommit psycopg connections with ``settings`` applied on open.

    ``settings`` are ``(name, value)`` pairs applied with ``set_config`` (session scope). A
    connection that breaks is dropped and the statement retried once on a new one.
    """

    def __init__(self, engine: Engine, settings: Sequence[tuple[str, str]] = ()) -> None:
        self.engine = engine
        self.settings = tuple(settings)
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def execute(self, query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Run one statement and return its rows, if any (one round trip on a warm connection)."""
        with translate_database_errors(str(self.engine.url)):
            for attempt in (1, 2):
                with self._connection() as connection:
                    try:
                        cursor = connection.execute(query, params)
                        return cursor.fetchall() if cursor.description else []
                    except psycopg.OperationalError:
                        if attempt == 2 or not connection.closed:
                            raise
                        # A stale connection (server restarted): retry on a fresh one.
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close every idle connection; later calls open new ones."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
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

    def _open(self) -> Connection:
        proxied = self.engine.raw_connection()
        connection: Connection = proxied.driver_connection  # type: ignore[assignment]
        proxied.detach()  # ours now: the pool neither resets nor reuses it
        connection.autocommit = True
        for name, value in self.settings:
            connection.execute("SELECT set_config(%s, %s, false)", (name, value))
        return connection
