"""The presence rows: whether the tenant holds the sources the plan left out, and its size.

Read in the same snapshot as the candidates (see :mod:`retrieval.search.knowledge` for what the
plan makes of them).
"""

from __future__ import annotations

from collections.abc import Iterable

from retrieval.search.knowledge import (
    DOCUMENTS,
    EPISODIC,
    MEMORIES,
    MEMORY_GENERIC,
    MEMORY_TABLE,
)
from retrieval.search.statement.template import template

NOTES = {"source_presence": "a row per source asked for: whether the tenant holds it, its size"}
PRESENCE_ITEM = "presence"  # the item of a presence row; its ``id`` counts the source's rows


def presence_cte(schema: str, sources: Iterable[str]) -> str:
    """A CTE ``source_presence``: a row per source in ``sources`` (``documents``,
    ``episodic``) in the statement's columns, its ``id`` above zero when the tenant holds rows
    of that source (the chunk count for documents); for ``memories`` and ``memory_table`` the
    tenant's memory count and the table's rows (:mod:`~retrieval.search.plan.exact_read`); for
    ``memory_generic`` the memories a generic plan expects of a tenant
    (:mod:`~retrieval.search.plan.plan_cache`).
    Parameters: ``tenant_id``, ``as_of``."""
    counts = {
        DOCUMENTS: template("read_presence.documents", schema),
        EPISODIC: template("read_presence.episodic", schema),
        MEMORIES: template("read_presence.memories", schema),
        MEMORY_TABLE: template("read_presence.memory_table", schema),
        MEMORY_GENERIC: template("read_presence.memory_generic", schema),
    }
    rows = "\n    UNION ALL\n    ".join(
        template("read_presence.row", source=source, item=PRESENCE_ITEM, count=counts[source])
        for source in sources
    )
    return template("read_presence.presence", rows=rows)
