"""The turns around the best memories: the candidates a thread's relevance lifts.

An answer in a conversation often sits next to the turn that matches the question ("Where did
you go?" ... "To the coast, with the kids."). For the best memories of a call that belong to
a thread (``thread_id``) at a ``position``, one statement reads the memories of the same thread
within ``context_window`` positions of each. A message (kind ``message``) stored without a
thread has as neighbours the messages without a thread of its tenant told just before and
after it, in the order of ``created_at`` (then id), up to ``context_window`` each way and
while less than ``session_gap`` passes between two of them: the session is inferred from the
time between messages. Each neighbour comes with the same signals as the semantic source's
candidates (its own dense relevance, recency, importance, popularity) and, first, the hit it
is next to and how far (``offset``). :mod:`retrieval.search.rank.context_lift` scores them.
"""

from __future__ import annotations

from retrieval.db.queries import quote_schema
from retrieval.search.config import SIGNALS, Mode
from retrieval.search.statement.common import (
    SELECT_LIST,
    live_sql,
    memory_columns,
    recency_sql,
    told_at_sql,
)
from retrieval.search.statement.cte import Cte, noted
from retrieval.search.statement.relevance import dense_relevance_sql
from retrieval.search.statement.semantic import MEMORY_EVIDENCE, MEMORY_SIGNALS, kind_filters

# What each CTE holds, printed above it in docs/statements/.
NOTES = {
    "context_hits": "the leading memory candidates that are turns of a conversation",
    "untold": "those hits that are messages without a thread, with their times",
    "told_before": "the messages without a thread told just before each such hit, and pauses",
    "told_after": "the messages without a thread told just after each such hit, and pauses",
    "told": "those messages with the widest pause between them and their hit",
    "turns": "the turns within the window of each hit: its thread's, or its session's in time",
    "context": "the turns as memory candidates, each with the hit it is next to and how far",
}

# The hits of a separate context statement: the arrays the retriever binds.
_BOUND_HITS = """SELECT *
    FROM unnest(%(hit_ids)s::bigint[], %(threads)s::text[], %(positions)s::int[])
         AS h(hit_id, thread_id, position)"""

# The hits within the read's own statement: of the semantic candidates ranked as the retriever
# ranks them (its final score, the weighted sum of their signals, then relevance, distance,
# recency and id), the first ``%(context_hits)s`` (twice the source's limit: the retriever
# lifts from its first ``limit``, and keeps only their rows) that are turns of a thread, or
# (with ``%(untold_sessions)s``) messages without a thread, as context_lift places them.
# The source's weighted sum of a candidate's signals, with the weights bound per call.
_WEIGHTED_SUM = "\n                     + ".join(
    f"%(weight_{name})s::float8 * s.{name}" for name in SIGNALS
)
_STATEMENT_HITS = (
    """SELECT c.id AS hit_id, c.details ->> 'thread_id' AS thread_id,
           (c.details ->> 'position')::int AS position
    FROM (
        SELECT * FROM semantic AS s
        ORDER BY LEAST(1.0::float8, GREATEST(0.0::float8,
                     """
    + _WEIGHTED_SUM
    + """)) DESC,
                 s.relevance DESC, s.distance ASC NULLS LAST, s.recency DESC, s.id
        LIMIT %(context_hits)s
    ) AS c
    WHERE (json_typeof(c.details -> 'thread_id') = 'string'
           AND json_typeof(c.details -> 'position') = 'number')
       OR (%(untold_sessions)s AND c.kind = %(message_kind)s
           AND COALESCE(json_typeof(c.details -> 'thread_id'), 'null') = 'null')"""
)

# The two columns a context row adds to the source's (the hit it is next to, and how far); the
# read's other rows carry them empty.
CONTEXT_COLUMNS = 'hit_id, "offset"'
NO_CONTEXT = 'NULL::bigint AS hit_id, NULL::int AS "offset"'


def context_statement(schema: str, mode: Mode) -> str:
    """The context turns of the hits ``%(hit_ids)s`` (threads ``%(threads)s``, positions
    ``%(positions)s``; a hit with neither is a message, of kind ``%(message_kind)s``, without a
    thread) within ``%(context_window)s`` positions (``%(session_gap)s`` the longest pause
    within a session of messages without a thread), in the mode's kinds: rows of ``hit_id,
    offset`` then the source's columns."""
    ctes = ",\n".join(context_ctes(schema, mode, _BOUND_HITS))
    return f"""WITH {ctes}
SELECT hit_id, "offset", {SELECT_LIST} FROM context ORDER BY hit_id, "offset", id"""


def statement_context_ctes(schema: str, mode: Mode) -> list[Cte]:
    """The CTEs that read, within the read's statement (after its ``semantic`` CTE), the
    context turns of every semantic candidate that is a turn: a CTE ``context`` of rows of
    ``hit_id, offset`` then the source's columns. Its parameters are the context statement's
    but the hits, and ``%(untold_sessions)s``."""
    return noted(context_ctes(schema, mode, _STATEMENT_HITS), NOTES)


def context_ctes(schema: str, mode: Mode, hits: str) -> list[str]:
    """The CTEs from ``hits`` (a query of ``hit_id, thread_id, position``) to ``context``."""
    s = quote_schema(schema)
    kinds = "".join(f" AND {condition}" for condition in kind_filters(mode, "m"))
    distance = "(m.embedding <-> %(query_vector)s)"
    told = [
        _told_side(s, kinds, distance, side, order)
        for side, order in (("before", "DESC"), ("after", "ASC"))
    ]
    return [
        f"""context_hits AS (
    {hits}
)""",
        f"""untold AS (
    SELECT h.hit_id, m.created_at
    FROM context_hits AS h
    JOIN {s}.memories AS m ON m.tenant_id = %(tenant_id)s AND m.id = h.hit_id
    WHERE h.thread_id IS NULL
)""",
        *told,
        """told AS (
    SELECT *, max(gap) OVER (PARTITION BY hit_id, sign("offset") ORDER BY abs("offset"))
              AS widest_gap
    FROM (SELECT * FROM told_before UNION ALL SELECT * FROM told_after) AS sides
)""",
        f"""turns AS (
    SELECT h.hit_id, m.position - h.position AS "offset", {memory_columns("m")},
           {distance} AS distance
    FROM context_hits AS h
    JOIN {s}.memories AS m
      ON m.tenant_id = %(tenant_id)s AND m.thread_id = h.thread_id
         AND m.position BETWEEN h.position - %(context_window)s
                            AND h.position + %(context_window)s
         AND m.id <> h.hit_id{kinds} AND {live_sql("m")}
    WHERE h.thread_id IS NOT NULL
    UNION ALL
    SELECT hit_id, "offset", {memory_columns()}, distance
    FROM told WHERE widest_gap <= %(session_gap)s
)""",
        f"""context AS (
    SELECT n.hit_id, n."offset", 'semantic'::text AS source, 'memory'::text AS item, n.id,
           n.content, n.kind, n.created_at,
           {dense_relevance_sql("n.distance")} AS relevance,
           {recency_sql(told_at_sql("n"), "semantic_half_life")} AS recency,
           {MEMORY_SIGNALS},
           0.0::float8 AS entity, n.distance, NULL::text[] AS matched,
           NULL::text[] AS entities,
           json_build_object({MEMORY_EVIDENCE}) AS details
    FROM turns AS n
)""",
    ]


def _told_side(schema: str, kinds: str, distance: str, side: str, order: str) -> str:
    # The messages without a thread told just before (or after) each such hit, nearest first,
    # with their pause from the one nearer the hit (``gap``) and their signed offset.
    earlier = side == "before"
    compare = "<" if earlier else ">"
    pause = "lag(x.created_at, 1, x.hit_at) OVER w - x.created_at"
    if not earlier:
        pause = "x.created_at - lag(x.created_at, 1, x.hit_at) OVER w"
    sign = "-" if earlier else ""
    return f"""told_{side} AS (
    SELECT x.hit_id, {sign}row_number() OVER w AS "offset", {memory_columns("x")}, x.distance,
           {pause} AS gap
    FROM (
        SELECT u.hit_id, u.created_at AS hit_at, n.*
        FROM untold AS u
        CROSS JOIN LATERAL (
            SELECT {memory_columns("m")}, {distance} AS distance
            FROM {schema}.memories AS m
            WHERE m.tenant_id = %(tenant_id)s AND m.kind = %(message_kind)s
              AND m.thread_id IS NULL AND {live_sql("m")}{kinds}
              AND (m.created_at, m.id) {compare} (u.created_at, u.hit_id)
              AND m.created_at {">=" if earlier else "<="} u.created_at
                  {"-" if earlier else "+"} %(session_gap)s * %(context_window)s
            ORDER BY m.created_at {order}, m.id {order}
            LIMIT %(context_window)s
        ) AS n
    ) AS x
    WINDOW w AS (PARTITION BY x.hit_id ORDER BY x.created_at {order}, x.id {order})
)"""
