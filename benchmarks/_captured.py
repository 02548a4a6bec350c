"""The read statement a retriever sends for a call, captured to be run bare.

The benchmarks that time the statement without the library around it (``overhead.py``,
``statement_planning.py``, ``citus_materialized.py``) take it from a real ``retrieve()``: the
retriever's connections are watched for one call, and the call's first statement (the read
statement; a short one reading the turns around given hits may follow it) is kept as the pool
was given it and as psycopg runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Captured:
    """A call's read statement: as psycopg runs it (``text``, ``values``: positional
    placeholders) and as the retriever's pool was given it (``query``, ``params``,
    ``settings``)."""

    text: bytes
    values: Any
    query: str
    params: dict[str, Any]
    settings: dict[str, str] | None
    columns: Any = None  # the statement's columns and types, as the reader names them


def captured(
    retriever: Any,
    query: str,
    tenant: str,
    as_of: datetime,
    *,
    warm: bool = False,
    materialized: bool | None = None,
) -> Captured:
    """The read statement ``retriever`` sends for ``query`` in ``tenant`` as of ``as_of``;
    ``warm``: after a first call of the same query (the tenant's presence and size then known,
    so that the statement does not ask for them again, as most calls do not); ``materialized``:
    the plan's shape made to write every CTE ``AS MATERIALIZED`` (True, as on Citus) or as one
    server writes them (False), whatever the database (None: as the plan chose)."""
    import retrieval.search.retriever as reader
    from retrieval.db.placeholders import positional

    plan_read = reader.plan_read

    def planned(*plan_args: Any) -> Any:
        plan = plan_read(*plan_args)
        if materialized is None or plan.shape is None:
            return plan
        return replace(plan, shape=replace(plan.shape, materialized=materialized))

    reads = retriever._reads
    execute = reads.execute
    sent: list[tuple[str, dict[str, Any], Any, Any]] = []

    def spy(statement: str, params: Any, *, settings: Any = None, columns: Any = None) -> Any:
        sent.append((statement, dict(params), settings, columns))
        return execute(statement, params, settings=settings, columns=columns)

    reader.plan_read = planned
    try:
        if warm:
            retriever.retrieve(query, tenant_id=tenant, as_of=as_of)
        reads.execute = spy
        retriever.retrieve(query, tenant_id=tenant, as_of=as_of)
    finally:
        reads.__dict__.pop("execute", None)
        reader.plan_read = plan_read
    statement, params, settings, columns = sent[0]
    converted = positional(statement)
    text = converted.text
    return Captured(
        text=text if isinstance(text, bytes) else text.encode(),
        values=converted.values(params),
        query=statement,
        params=params,
        settings=settings,
        columns=columns,
    )


_EVIDENCE = "json_build_object("


def evidence_left_out(sent: Captured) -> Captured:
    """``sent`` with each candidate's evidence (a ``json_build_object(...) AS details``) sent as
    an empty object: what building the evidence costs the server, timed against it."""
    from retrieval.db.placeholders import positional

    query, found = sent.query, 0
    while (start := query.find(_EVIDENCE, found)) >= 0:
        depth, end = 0, start + len(_EVIDENCE) - 1
        while True:  # to the parenthesis that closes the call
            depth += {"(": 1, ")": -1}.get(query[end], 0)
            if depth == 0:
                break
            end += 1
        if query[end + 1 :].lstrip().startswith("AS details"):
            query = query[:start] + "'{}'::json" + query[end + 1 :]
        found = start + 1
    converted = positional(query)
    text = converted.text
    return replace(
        sent,
        text=text if isinstance(text, bytes) else text.encode(),
        values=converted.values(sent.params),
        query=query,
    )
