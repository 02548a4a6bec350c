"""The presence rows: whether the tenant holds the sources the plan left out, and its size.

Read in the same snapshot as the candidates (see :mod:`retrieval.search.knowledge` for what the
plan makes of them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from retrieval.search.knowledge import FACTS, MEMORIES, MEMORY_GENERIC, MEMORY_TABLE
from retrieval.search.statement.common import short_fact_sql
from retrieval.search.statement.template import template

NOTES = {"source_presence": "a row per source asked for: whether the tenant holds it, its size"}
PRESENCE_ITEM = "presence"  # the item of a presence row; its ``id`` counts the source's rows


def presence_cte(schema: str, sources: Iterable[str], counted: Mapping[str, str]) -> str:
    """A CTE ``source_presence``: a row per source in ``sources`` in the statement's columns,
    for a source its ``id`` above zero when the tenant holds rows of it (``counted`` names the
    template of each source's count: the chunk count for documents); for ``memories`` and
    ``memory_table`` the
    tenant's memory count and the table's rows (:mod:`~retrieval.search.plan.exact_read`); for
    ``memory_generic`` the memories a generic plan expects of a tenant
    (:mod:`~retrieval.search.plan.plan_cache`); for ``facts`` the semantic candidates that may
    be versions, less one (above zero: a pair may form).
    Parameters: ``tenant_id``, ``as_of``, and ``version_most_characters`` for ``facts``."""
    counts = {
        **{source: template(name, schema) for source, name in counted.items()},
        FACTS: template("read_presence.facts", short_fact=short_fact_sql("s")),
        MEMORIES: template("read_presence.memories", schema),
        MEMORY_TABLE: template("read_presence.memory_table", schema),
        MEMORY_GENERIC: template("read_presence.memory_generic", schema),
    }
    rows = "\n    UNION ALL\n    ".join(
        template("read_presence.row", source=source, item=PRESENCE_ITEM, count=counts[source])
        for source in sources
    )
    return template("read_presence.presence", rows=rows)
