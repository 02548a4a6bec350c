"""On a Citus cluster, the read statement run on the worker that holds its tenant's shards.

Routed through the coordinator, a read statement is planned twice: Citus plans it on the
coordinator (PostgreSQL's planner, then its router planning) and sends it on as the shard's
query, which the worker parses and plans again; Citus keeps no plan of a statement with CTEs.
That planning was most of what a cluster's read cost beyond one server's
(docs/decisions/0069-the-read-on-the-node-that-holds-the-tenant.md).

So `retrieval db distribute` makes a function in the schema, ``read_on_shard``, that Citus
delegates by its tenant argument to the node holding that tenant's shard group (every table is
co-located with ``memories``). The library names the shards in the statement itself: each
table of the schema becomes the tenant's shard of it (``"s".memories`` ->
``"s".memories_102008``; a shard keeps its id when it moves), and the function prepares that
statement once per worker session and executes it with the call's values, written as SQL
literals. The coordinator plans only the small call, the worker parses the statement once and
plans it for each call (the call's plan cache mode), and the rows come back as the routed
statement's. A tenant's shards are asked for once per pool and kept; the function checks
that the shard of memories it was given is still the tenant's (a split or an isolation gives a
tenant new shards, and the old may linger until Citus drops them): where it is not, the call
goes the routed way and the shards are asked for again next time.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.adapt import PyFormat, Transformer

from retrieval.db.placeholders import PositionalQuery, positional
from retrieval.db.queries import quote_schema, statement
from retrieval.db.schema import ALL_TABLES, MEMORIES

READ_FUNCTION = "read_on_shard"
# The read function's argument types, as regprocedure names it.
READ_FUNCTION_ARGUMENTS = "(text, bigint, text, text, text, text)"
# The prefix of the statements the function prepares (it keeps at most 64 of them).
PREPARED_PREFIX = "retrieval_"
_MAX_TENANTS = 100_000  # tenants whose shards one pool remembers (then it starts afresh)
_MAX_STATEMENTS = 512  # statements kept over their tenant's shards (then it starts afresh)


def read_function(schema: str) -> str:
    """The read function's signature in ``schema`` (for ``to_regprocedure``)."""
    return f"{quote_schema(schema)}.{READ_FUNCTION}{READ_FUNCTION_ARGUMENTS}"


def over_shards(query: str, schema: str, shards: Mapping[str, int]) -> str:
    """``query`` (the library's statement over ``schema``'s tables) over the tenant's shards:
    each table named ``"schema".table`` becomes ``"schema".table_<shard id>``."""
    quoted = re.escape(quote_schema(schema))
    names = "|".join(sorted(map(re.escape, shards), key=len, reverse=True))
    return re.sub(
        rf"{quoted}\.({names})\b(?!\s*\()",
        lambda match: f"{match[0]}_{shards[match[1]]}",
        query,
    )


def parameter_types(connection: psycopg.Connection[Any], values: Sequence[Any]) -> list[str]:
    """The type each value is bound as when psycopg sends it (``unknown``, which PostgreSQL
    infers from the statement, for a string or a list of them), as SQL names."""
    transformer = Transformer(connection)
    transformer.dump_sequence(values, [PyFormat.AUTO] * len(values))
    names = []
    for oid in transformer.types or ():
        info = connection.adapters.types.get(oid) if oid else None
        if info is None:
            names.append("unknown")
        else:
            names.append(info.regtype + ("[]" if oid == info.array_oid else ""))
    return names


def literals(connection: psycopg.Connection[Any], values: Sequence[Any]) -> str:
    """``values`` as SQL literals, comma-separated (the arguments of ``EXECUTE``): each as its
    text form, which the prepared statement's declared type reads back exactly (a float in its
    shortest form that round-trips, a vector's float32 values likewise)."""
    return ", ".join(sql.Literal(value).as_string(connection) for value in values)


def read_call(
    connection: psycopg.Connection[Any],
    schema: str,
    text: str,
    values: Sequence[Any],
    *,
    tenant_id: str,
    shard_id: int | None,
    columns: Sequence[tuple[str, str]],
    plan_mode: str,
) -> tuple[str, dict[str, Any]]:
    """The call of ``schema``'s read function that runs the statement ``text`` (``$n``
    placeholders) with ``values`` where ``tenant_id``'s shards are: its text (``%(name)s``
    placeholders) and values. ``shard_id`` is the tenant's shard of memories that ``text``
    names (the function refuses the call where it no longer is; ``None``: not checked, a
    schema without Citus). ``columns`` are the statement's columns and their SQL types, in
    order; ``plan_mode`` the ``plan_cache_mode`` it runs under. The statement is named by a
    digest of its text and its parameters' types: the same statement over the same shards is
    prepared once per worker session."""
    types = ", ".join(parameter_types(connection, values))
    prepared = f"({types}) AS {text}"
    digest = hashlib.sha1(prepared.encode(), usedforsecurity=False).hexdigest()[:24]
    listed = ", ".join(f'"{name}" {kind}' for name, kind in columns)
    return statement("shard_reads.call", schema, columns=listed), {
        "tenant_id": tenant_id,
        "shard_id": shard_id,
        "prepared_name": PREPARED_PREFIX + digest,
        "prepared": prepared,
        "arguments": literals(connection, values),
        "plan_mode": plan_mode,
    }


class ShardReads:
    """The read function's calls of one pool's schema: whether the schema has the function,
    each tenant's shards, and each statement over them (thread-safe)."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self._available: bool | None = None
        self._shards: dict[str, dict[str, int]] = {}
        self._over: dict[tuple[str, int], PositionalQuery] = {}
        self._lock = threading.Lock()

    def available(self, connection: psycopg.Connection[Any]) -> bool:
        """Whether the schema has the read function and the connection's role may call it
        (asked once)."""
        if self._available is None:
            row = connection.execute(
                statement("shard_reads.read_function_usable"),
                {"signature": read_function(self.schema)},
            ).fetchone()
            self._available = bool(row and row[0])
        return self._available

    def forget(self, tenant_id: str) -> None:
        """Ask for the tenant's shards again on its next read (one was split or isolated)."""
        with self._lock:
            self._shards.pop(tenant_id, None)

    def call(
        self,
        connection: psycopg.Connection[Any],
        query: str,
        params: Mapping[str, Any],
        *,
        columns: Sequence[tuple[str, str]],
        plan_mode: str,
    ) -> tuple[str, dict[str, Any]]:
        """The call of the read function that runs ``query`` with ``params`` (its
        ``tenant_id`` among them) on the node holding the tenant's shards: its text
        (``%(name)s`` placeholders) and values. ``columns`` are the statement's columns and
        their SQL types, in order; ``plan_mode`` the worker's ``plan_cache_mode`` for it."""
        tenant = str(params["tenant_id"])
        shards = self._shards_of(connection, tenant)
        key = (query, shards[MEMORIES])
        found = self._over.get(key)
        if found is None:
            found = positional(over_shards(query, self.schema, shards))
            with self._lock:
                if len(self._over) >= _MAX_STATEMENTS:
                    self._over.clear()
                self._over[key] = found
        return read_call(
            connection,
            self.schema,
            found.text.decode(),
            found.values(params),
            tenant_id=tenant,
            shard_id=shards[MEMORIES],
            columns=columns,
            plan_mode=plan_mode,
        )

    def _shards_of(self, connection: psycopg.Connection[Any], tenant: str) -> dict[str, int]:
        known = self._shards.get(tenant)
        if known is not None:
            return known
        rows = connection.execute(
            statement("shard_reads.shard_ids"),
            {"schema_name": self.schema, "tenant_id": tenant, "tables": list(ALL_TABLES)},
        ).fetchall()
        shards = {str(name): int(shard) for name, shard in rows}
        with self._lock:
            if len(self._shards) >= _MAX_TENANTS:
                self._shards.clear()
            self._shards[tenant] = shards
        return shards
