"""The presence rows: whether the tenant holds the sources the plan left out, and its size.

Read in the same snapshot as the candidates (see :mod:`retrieval.search.knowledge` for what the
plan makes of them).
"""

from __future__ import annotations

from collections.abc import Iterable

from retrieval.db.queries import quote_schema
from retrieval.search.knowledge import DOCUMENTS, EPISODIC, MEMORIES, MEMORY_TABLE

NOTES = {"source_presence": "a row per source asked for: whether the tenant holds it, its size"}
PRESENCE_ITEM = "presence"  # the item of a presence row; its ``id`` counts the source's rows


def presence_cte(schema: str, sources: Iterable[str]) -> str:
    """A CTE ``source_presence``: a row per source in ``sources`` (``documents``,
    ``episodic``) in the statement's columns, its ``id`` above zero when the tenant holds rows
    of that source (the chunk count for documents); for ``memories`` and ``memory_table`` the
    tenant's memory count and the table's rows (:mod:`~retrieval.search.plan.exact_read`).
    Parameters: ``tenant_id``, ``as_of``."""
    s = quote_schema(schema)
    counts = {
        DOCUMENTS: f"""COALESCE((SELECT c.chunks FROM {s}.document_corpus AS c
                               WHERE c.tenant_id = %(tenant_id)s), 0)""",
        EPISODIC: f"""(EXISTS (SELECT FROM {s}.decisions AS d
                               WHERE d.tenant_id = %(tenant_id)s)
                       OR EXISTS (SELECT FROM {s}.tool_calls AS t
                                  WHERE t.tenant_id = %(tenant_id)s))::int""",
        MEMORIES: f"""COALESCE((SELECT c.memories FROM {s}.memory_corpus AS c
                               WHERE c.tenant_id = %(tenant_id)s), 0)""",
        MEMORY_TABLE: f"""GREATEST(COALESCE((SELECT t.reltuples FROM pg_catalog.pg_class AS t
                                            WHERE t.oid = to_regclass('{s}.memories')), 0), 0)""",
    }
    rows = "\n    UNION ALL\n    ".join(
        f"""SELECT '{source}'::text AS source, '{PRESENCE_ITEM}'::text AS item,
           {counts[source]}::bigint AS id,
           ''::text AS content, '{PRESENCE_ITEM}'::text AS kind,
           %(as_of)s::timestamptz AS created_at, 0.0::float8 AS relevance,
           0.0::float8 AS recency, 0.0::float8 AS importance, 0.0::float8 AS popularity,
           0.0::float8 AS entity, NULL::float8 AS distance, NULL::text[] AS matched,
           NULL::text[] AS entities, '{{}}'::json AS details"""
        for source in sources
    )
    return f"""source_presence AS (
    {rows}
)"""
