-- The turns around the best memories (retrieval.search.statement.context): the candidates a
-- thread's relevance lifts. {columns} is a memory's columns (retrieval.memory.fields), {kinds}
-- the mode's kinds, {distance} a turn's distance from the query, {live} the predicate of a
-- live memory.

-- name: bound_hits
-- The hits of a separate context statement: the arrays the retriever binds.
SELECT *
    FROM unnest(%(hit_ids)s::bigint[], %(threads)s::text[], %(positions)s::int[])
         AS h(hit_id, thread_id, position)

-- name: weighted_signal
-- A signal's term of the source's weighted sum, its weight bound per call.
%(weight_{signal})s::float8 * s.{signal}

-- name: statement_hits
-- The hits within the read's own statement: of the semantic candidates with evidence ranked
-- as the retriever ranks them (the weighted sum {weighted_sum} of their signals, then relevance,
-- distance, recency and id), the first %(context_hits)s that are turns of a thread, or (with
-- %(untold_sessions)s) messages without a thread; each with its relevance, what it lifts.
SELECT c.id AS hit_id, c.details ->> 'thread_id' AS thread_id,
           (c.details ->> 'position')::int AS position, c.relevance AS hit_relevance
    FROM (
        SELECT * FROM semantic AS s
        WHERE s.evidence
        ORDER BY LEAST(1.0::float8, GREATEST(0.0::float8,
                     {weighted_sum})) DESC,
                 s.relevance DESC, s.distance ASC NULLS LAST, s.recency DESC, s.id
        LIMIT %(context_hits)s
    ) AS c
    WHERE (json_typeof(c.details -> 'thread_id') = 'string'
           AND json_typeof(c.details -> 'position') = 'number')
       OR (%(untold_sessions)s AND c.kind = %(message_kind)s
           AND COALESCE(json_typeof(c.details -> 'thread_id'), 'null') = 'null')

-- name: statement
-- The context statement of bound hits: its CTEs {ctes}, then the rows of hit_id, offset and
-- the source's columns {select_list}.
WITH {ctes}
SELECT hit_id, "offset", {select_list} FROM context ORDER BY hit_id, "offset", id

-- name: context_hits
-- The hits whose turns are read ({hits}).
context_hits AS (
    {hits}
)

-- name: untold
-- The hits that are messages without a thread, with their times.
untold AS (
    SELECT h.hit_id, m.created_at
    FROM context_hits AS h
    JOIN {schema}.memories AS m ON m.tenant_id = %(tenant_id)s AND m.id = h.hit_id
    WHERE h.thread_id IS NULL
)

-- name: told_side
-- The messages without a thread told just {side} each such hit, nearest first ({order}), with
-- their pause from the one nearer the hit ({pause}) and their signed offset ({sign}).
told_{side} AS (
    SELECT x.hit_id, {sign}row_number() OVER w AS "offset", {told_columns}, x.distance,
           {pause} AS gap
    FROM (
        SELECT u.hit_id, u.created_at AS hit_at, n.*
        FROM untold AS u
        CROSS JOIN LATERAL (
            SELECT {columns}, {distance} AS distance
            FROM {schema}.memories AS m
            WHERE m.tenant_id = %(tenant_id)s AND m.kind = %(message_kind)s
              AND m.thread_id IS NULL AND {live}{kinds}
              AND (m.created_at, m.id) {compare} (u.created_at, u.hit_id)
              AND m.created_at {bound} u.created_at
                  {shift} %(session_gap)s * %(context_window)s
            ORDER BY m.created_at {order}, m.id {order}
            LIMIT %(context_window)s
        ) AS n
    ) AS x
    WINDOW w AS (PARTITION BY x.hit_id ORDER BY x.created_at {order}, x.id {order})
)

-- name: pause_before
-- The pause between a message told before the hit and the one after it.
lag(x.created_at, 1, x.hit_at) OVER w - x.created_at

-- name: pause_after
-- The pause between a message told after the hit and the one before it.
x.created_at - lag(x.created_at, 1, x.hit_at) OVER w

-- name: told
-- The messages told around the hits, with the widest pause between them and their hit.
told AS (
    SELECT *, max(gap) OVER (PARTITION BY hit_id, sign("offset") ORDER BY abs("offset"))
              AS widest_gap
    FROM (SELECT * FROM told_before UNION ALL SELECT * FROM told_after) AS sides
)

-- name: turns
-- The turns within the window of each hit: its thread's, or its session's in time.
turns AS (
    SELECT h.hit_id, m.position - h.position AS "offset", {columns},
           {distance} AS distance
    FROM context_hits AS h
    JOIN {schema}.memories AS m
      ON m.tenant_id = %(tenant_id)s AND m.thread_id = h.thread_id
         AND m.position BETWEEN h.position - %(context_window)s
                            AND h.position + %(context_window)s
         AND m.id <> h.hit_id{kinds} AND {live}
    WHERE h.thread_id IS NOT NULL
    UNION ALL
    SELECT hit_id, "offset", {told_columns}, distance
    FROM told WHERE widest_gap <= %(session_gap)s
)

-- name: context
-- The turns as memory candidates ({relevance}, {recency}, {signals}, {evidence}), each with
-- the hit it is next to and how far; when each was last told ({told_at}), its dense relevance
-- and its age ({computed}) computed once and read by name; those the lift may raise ({worth}).
context AS (
    SELECT n.hit_id, n."offset", 'semantic'::text AS source, 'memory'::text AS item, n.id,
           n.content, n.kind, n.created_at,
           {relevance} AS relevance,
           {recency} AS recency,
           {signals},
           0.0::float8 AS entity, n.distance, NULL::text[] AS matched,
           NULL::text[] AS entities,
           json_build_object({evidence}) AS details, TRUE AS evidence, NULL::bigint[] AS newer, NULL::boolean[] AS newer_near
    FROM turns AS n
    {told_at}
    {computed}
    {worth}
)

-- name: worth_lifting
-- A turn the ranking may raise: a semantic candidate (its relevance may be fused with BM25's),
-- or one whose lift from its hit (the hit's relevance times %(context_lift)s per position away,
-- at most 1) is above its own dense relevance; the others the ranking would pass over (a
-- billionth of slack: the ranking compares the same products in Python).
WHERE n.id IN (SELECT s.id FROM semantic AS s)
       OR LEAST(1.0::float8,
                (SELECT h.hit_relevance FROM context_hits AS h WHERE h.hit_id = n.hit_id)
                * power(%(context_lift)s::float8, abs(n."offset")))
          > c.dense - 1e-9
