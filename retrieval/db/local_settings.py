"""Settings for one transaction, that reach every node a statement of it runs on.

``set_config(name, value, true)`` sets a setting for the transaction on the server the library
is connected to. On a Citus coordinator that is not where a routed statement runs: the worker
holding the tenant's shard reads its own settings, so the HNSW search there would use its
defaults and row-level security would see no tenant. Citus sends ``SET LOCAL`` commands of a
transaction on to the workers it opens (``citus.propagate_set_commands = local``, set on every
connection of a Citus database by :func:`propagate_to_workers`), so the library names each such
setting with ``SET LOCAL``. ``SET`` takes no bound parameter: the setting's name is one of the
library's own and its value is quoted by psycopg as a literal, never formatted in.

A setting every worker already holds for the role (``ALTER ROLE ... SET``, which Citus carries
to every node) need not be sent: :func:`held_on_workers` asks the workers which they hold, and
a statement whose settings they all hold goes alone, outside a transaction, saving Citus the
remote transaction it opens for ``SET LOCAL`` (docs/scale-out.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import Connection

from retrieval.db.queries import execute, statement


def set_local_statement(name: str, value: str) -> str:
    """``SET LOCAL name = 'value'``: ``name`` a setting's (dotted) name, ``value`` quoted."""
    identifier = sql.Identifier(*name.split("."))
    return sql.SQL("SET LOCAL {} = {}").format(identifier, sql.Literal(value)).as_string(None)


def set_local(connection: Connection, name: str, value: str) -> None:
    """Set ``name`` to ``value`` until the transaction ends, on every node it runs on."""
    execute(connection, set_local_statement(name, value).replace("%", "%%"))


def has_citus(connection: psycopg.Connection[Any]) -> bool:
    """Whether the database of this (driver) connection has the citus extension."""
    return connection.execute(statement("db.citus_version")).fetchone() is not None


def propagate_to_workers(connection: psycopg.Connection[Any]) -> bool:
    """On a connection to a Citus database, send its ``SET LOCAL`` commands on to the workers;
    whether it is one."""
    if not has_citus(connection):
        return False
    connection.execute(statement("db.propagate_set_commands"))
    return True


def held_on_workers(connection: psycopg.Connection[Any], names: Iterable[str]) -> dict[str, str]:
    """The settings among ``names`` that every worker of this (driver) connection's Citus
    cluster holds with one value for a new connection of its role, with that value; none where
    there is no worker, a worker does not answer, or the role may not ask (``SET LOCAL`` then
    sends each setting, as always)."""
    wanted = sorted(set(names))
    if not wanted:
        return {}
    pairs = sql.SQL(", ").join(
        sql.SQL("{}, current_setting({}, true)").format(sql.Literal(name), sql.Literal(name))
        for name in wanted
    )
    command = sql.SQL("SELECT json_build_object({})").format(pairs).as_string(None)
    try:
        rows = connection.execute(statement("db.settings_on_workers"), {"command": command})
        answers = rows.fetchall()
    except psycopg.Error:
        return {}
    if not answers or not all(success for success, _ in answers):
        return {}
    found = [json.loads(result) for _, result in answers]
    return {
        name: value
        for name in wanted
        if (value := found[0].get(name)) is not None
        and all(worker.get(name) == value for worker in found)
    }
