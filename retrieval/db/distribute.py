"""Distributing the schema on a Citus cluster: every table by ``tenant_id``, co-located.

Every table carries ``tenant_id`` and every key starts with it, so each table is distributed
by it and co-located with ``memories``: a tenant's rows of every table live in one shard group,
on one node, and every statement of the library (each names its tenant) is routed whole to it.
:func:`distribute` does it on a Citus coordinator once the schema is at the newest revision
(``retrieval db upgrade``); a second call finds nothing to do. It also propagates the schema's
functions to every node (the word statistics' triggers run on the shards, and the row-level
security lookups inside statements that run there), and makes the read function that runs a
read statement on the node holding its tenant's shards (:mod:`retrieval.db.shard_reads`). On
a server without Citus it refuses, changing nothing. There is no way back to local tables:
Citus's ``undistribute_table`` refuses tables with identity columns, as every table of rows
here has. See docs/scale-out.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, Engine

from retrieval.db.queries import execute, quote_schema, statement
from retrieval.db.schema import ALL_TABLES, MEMORIES
from retrieval.db.shard_reads import read_function
from retrieval.errors import ConfigurationError, translate_database_errors

DISTRIBUTION_COLUMN = "tenant_id"


@dataclass(frozen=True)
class Distribution:
    """What :func:`distribute` did: the tables and functions it changed (empty: nothing to
    do), and the Citus version."""

    tables: tuple[str, ...]
    functions: tuple[str, ...]
    citus_version: str

    @property
    def changed(self) -> bool:
        return bool(self.tables or self.functions)


def citus_version(connection: Connection) -> str | None:
    """The citus extension's version in this database, or ``None``."""
    found = execute(connection, statement("db.citus_version")).scalar_one_or_none()
    return None if found is None else str(found)


def distributed_tables(connection: Connection, schema: str) -> set[str]:
    """The tables of ``schema`` that Citus distributes (none without Citus)."""
    if citus_version(connection) is None:
        return set()
    rows = execute(connection, statement("db.distributed_tables"), {"schema_name": schema})
    return {str(name) for name in rows.scalars()}


def is_distributed(engine: Engine, schema: str) -> bool:
    """Whether any table of ``schema`` is distributed by Citus."""
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        return bool(distributed_tables(connection, schema))


def distribute(engine: Engine, schema: str, *, head: str, revision: str | None) -> Distribution:
    """Distribute every table of ``schema`` by ``tenant_id``, co-located with ``memories``
    (parents first), and propagate its functions to every node. ``revision`` is the schema's
    and ``head`` the newest this library ships: an older schema is refused (its revisions
    would send statements Citus cannot run on distributed tables)."""
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        version = _require_citus(connection, "distribute")
        if revision != head:
            raise ConfigurationError(
                f"schema {schema!r} is at revision {revision or 'base (not migrated)'}, not "
                f"{head}: run `retrieval db upgrade` first, then distribute; nothing was changed"
            )
        tables, functions = _distribute_missing(connection, schema)
    return Distribution(tables=tables, functions=functions, citus_version=version)


def keep_distributed(engine: Engine, schema: str) -> Distribution | None:
    """After an upgrade: where ``schema`` is distributed, distribute the tables (and
    functions) a newer revision made; ``None`` where it is not."""
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        version = citus_version(connection)
        if version is None or not distributed_tables(connection, schema):
            return None
        tables, functions = _distribute_missing(connection, schema)
    return Distribution(tables=tables, functions=functions, citus_version=version)


def _distribute_missing(
    connection: Connection, schema: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    done = distributed_tables(connection, schema)
    tables = tuple(table for table in ALL_TABLES if table not in done)
    # Each call in its own transaction: create_distributed_table copies a table's rows.
    connection.commit()
    memories = f"{quote_schema(schema)}.{MEMORIES}"
    for table in tables:
        # The word statistics' triggers go to the shards with their tables (revision
        # 0015 makes them write the co-located shards): Citus asks to be told so.
        execute(connection, statement("db.allow_statistics_triggers"))
        execute(
            connection,
            statement("db.create_distributed_table"),
            {
                "relation": f"{quote_schema(schema)}.{table}",
                "column": DISTRIBUTION_COLUMN,
                "colocate_with": "default" if table == MEMORIES else memories,
            },
        )
        connection.commit()
    functions = _read_function(connection, schema) + _propagate_functions(connection, schema)
    connection.commit()
    return tables, functions


def _require_citus(connection: Connection, what: str) -> str:
    version = citus_version(connection)
    if version is None:
        raise ConfigurationError(
            f"cannot {what}: this database has no citus extension (it is not a Citus "
            "coordinator). Connect to the coordinator of a Citus cluster "
            "(RETRIEVAL_DATABASE_URL), where CREATE EXTENSION citus has been run; nothing was "
            "changed"
        )
    return version


def _read_function(connection: Connection, schema: str) -> tuple[str, ...]:
    """Make the schema's read function where it has none, and have Citus run each call on the
    node holding the shard of its tenant (:mod:`retrieval.db.shard_reads`)."""
    signature = read_function(schema)
    exists = execute(
        connection, statement("shard_reads.read_function_exists"), {"signature": signature}
    ).scalar_one()
    if exists:
        return ()
    execute(connection, statement("shard_reads.create_read_function", schema))
    execute(
        connection,
        statement("shard_reads.distribute_read_function"),
        {"function": signature, "colocate_with": f"{quote_schema(schema)}.{MEMORIES}"},
    )
    return (signature,)


def _propagate_functions(connection: Connection, schema: str) -> tuple[str, ...]:
    """Register each function of ``schema`` that Citus does not know yet as a distributed
    object: it is created on every node, now and on nodes added later."""
    missing = execute(
        connection, statement("db.undistributed_functions"), {"schema_name": schema}
    ).scalars()
    names = tuple(str(name) for name in missing)
    for signature in names:
        execute(connection, statement("db.create_distributed_function"), {"function": signature})
    return names
