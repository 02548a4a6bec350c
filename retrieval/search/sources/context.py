"""The turns around the best memories: the candidates a thread's relevance lifts.

An answer in a conversation often sits next to the turn that matches the question ("Where did
you go?" ... "To the coast, with the kids."). For the best memories of a call that belong to
a thread (``thread_id``) at a ``position``, one statement reads the memories of the same thread
within ``context_window`` positions of each, with the same signals as the semantic source's
candidates (their own dense relevance, recency, importance, popularity) and, first, the hit
they are next to and how far (``offset``). :mod:`retrieval.search.context_lift` scores them.
"""

from __future__ import annotations

from retrieval.db.queries import quote_schema
from retrieval.search.config import Mode
from retrieval.search.sources.common import SELECT_LIST, live_sql, recency_sql, told_at_sql
from retrieval.search.sources.relevance import dense_relevance_sql
from retrieval.search.sources.semantic import MEMORY_EVIDENCE, MEMORY_SIGNALS, kind_filters


def context_statement(schema: str, mode: Mode) -> str:
    """The context turns of the hits ``%(hit_ids)s`` (threads ``%(threads)s``, positions
    ``%(positions)s``) within ``%(context_window)s`` positions, in the mode's kinds: rows of
    ``hit_id, offset`` then the source's columns."""
    s = quote_schema(schema)
    kinds = "".join(f" AND {condition}" for condition in kind_filters(mode, "m"))
    distance = "(m.embedding <-> %(query_vector)s)"
    return f"""WITH turns AS (
    SELECT h.hit_id, m.position - h.position AS "offset", m.id, m.content, m.kind,
           m.created_at, m.importance, m.access_count, m.last_accessed_at, m.metadata,
           m.embedding_model, m.thread_id, m.position, m.last_seen_at, {distance} AS distance
    FROM unnest(%(hit_ids)s::bigint[], %(threads)s::text[], %(positions)s::int[])
         AS h(hit_id, thread_id, position)
    JOIN {s}.memories AS m
      ON m.tenant_id = %(tenant_id)s AND m.thread_id = h.thread_id
         AND m.position BETWEEN h.position - %(context_window)s
                            AND h.position + %(context_window)s
         AND m.id <> h.hit_id{kinds} AND {live_sql("m")}
), context AS (
    SELECT n.hit_id, n."offset", 'semantic'::text AS source, 'memory'::text AS item, n.id,
           n.content, n.kind, n.created_at,
           {dense_relevance_sql("n.distance")} AS relevance,
           {recency_sql(told_at_sql("n"), "semantic_half_life")} AS recency,
           {MEMORY_SIGNALS},
           0.0::float8 AS entity, n.distance, NULL::text[] AS matched,
           NULL::text[] AS entities,
           jsonb_build_object({MEMORY_EVIDENCE}) AS details
    FROM turns AS n
)
SELECT hit_id, "offset", {SELECT_LIST} FROM context ORDER BY hit_id, "offset", id"""
