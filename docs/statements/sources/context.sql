-- context: the context turns of the semantic candidates that are turns
-- Binds: as_of, context_hits, context_lift, context_window, dense_span_squared,
--        dense_zero_squared, known_at, message_kind, query_vector, semantic_half_life,
--        session_gap, tenant_id, untold_sessions, weight_entity, weight_importance,
--        weight_popularity, weight_recency, weight_relevance

-- context_hits: the leading memory candidates that are turns of a conversation
--   binds: context_hits, message_kind, untold_sessions, weight_entity, weight_importance,
--          weight_popularity, weight_recency, weight_relevance
context_hits AS (
    SELECT c.id AS hit_id,
           c.details ->> 'thread_id' AS thread_id,
           CAST(c.details ->> 'position' AS integer) AS position,
           c.relevance AS hit_relevance
    FROM (SELECT *
          FROM semantic AS s
          WHERE s.evidence
          ORDER BY LEAST(CAST(1.0 AS float8),
                         GREATEST(CAST(0.0 AS float8),
                                  CAST(%(weight_relevance)s AS float8) * s.relevance + CAST(%(weight_recency)s AS float8) * s.recency + CAST(%(weight_importance)s AS float8) * s.importance + CAST(%(weight_popularity)s AS float8) * s.popularity + CAST(%(weight_entity)s AS float8) * s.entity)) DESC,
                   s.relevance DESC,
                   s.distance ASC NULLS LAST,
                   s.recency DESC,
                   s.id
          LIMIT %(context_hits)s) AS c
    WHERE (json_typeof(c.details -> 'thread_id') = 'string'
       AND json_typeof(c.details -> 'position') = 'number')
       OR (%(untold_sessions)s
       AND c.kind = %(message_kind)s
       AND COALESCE(json_typeof(c.details -> 'thread_id'),
                    'null') = 'null')
  ),

-- untold: those hits that are messages without a thread, with their times
--   binds: tenant_id
untold AS (
    SELECT h.hit_id,
           m.created_at
    FROM context_hits AS h
         INNER JOIN retrieval.memories AS m ON m.tenant_id = %(tenant_id)s
                                           AND m.id = h.hit_id
    WHERE h.thread_id IS NULL
  ),

-- told_before: the messages without a thread told just before each such hit, and pauses
--   binds: as_of, context_window, known_at, message_kind, query_vector, session_gap, tenant_id
told_before AS (
    SELECT x.hit_id,
           - row_number() OVER w AS "offset",
           x.id,
           x.content,
           x.kind,
           x.metadata,
           x.importance,
           x.access_count,
           x.last_accessed_at,
           x.created_at,
           x.embedding_model,
           x.thread_id,
           x.position,
           x.namespace,
           x.key,
           x.last_seen_at,
           x.distance,
           lag(x.created_at, 1, x.hit_at) OVER w - x.created_at AS gap
    FROM (SELECT u.hit_id,
                 u.created_at AS hit_at,
                 n.*
          FROM untold AS u
               CROSS JOIN LATERAL (SELECT m.id,
                                          m.content,
                                          m.kind,
                                          m.metadata,
                                          m.importance,
                                          m.access_count,
                                          m.last_accessed_at,
                                          m.created_at,
                                          m.embedding_model,
                                          m.thread_id,
                                          m.position,
                                          m.namespace,
                                          m.key,
                                          m.last_seen_at,
                                          m.embedding <-> %(query_vector)s AS distance
                                   FROM retrieval.memories AS m
                                   WHERE m.tenant_id = %(tenant_id)s
                                     AND m.kind = %(message_kind)s
                                     AND m.thread_id IS NULL
                                     AND (m.retired_at IS NULL
                                       OR m.retired_at > CAST(%(as_of)s AS timestamptz))
                                     AND (m.expires_at IS NULL
                                       OR m.expires_at > CAST(%(as_of)s AS timestamptz))
                                     AND (CAST(%(known_at)s AS timestamptz) IS NULL
                                       OR m.created_at <= CAST(%(known_at)s AS timestamptz))
                                     AND (m.created_at, m.id) < (u.created_at, u.hit_id)
                                     AND m.created_at >= u.created_at - %(session_gap)s * %(context_window)s
                                   ORDER BY m.created_at DESC,
                                            m.id DESC
                                   LIMIT %(context_window)s) AS n) AS x
    WINDOW w AS (PARTITION BY x.hit_id
                 ORDER BY x.created_at DESC,
                          x.id DESC)
  ),

-- told_after: the messages without a thread told just after each such hit, and pauses
--   binds: as_of, context_window, known_at, message_kind, query_vector, session_gap, tenant_id
told_after AS (
    SELECT x.hit_id,
           row_number() OVER w AS "offset",
           x.id,
           x.content,
           x.kind,
           x.metadata,
           x.importance,
           x.access_count,
           x.last_accessed_at,
           x.created_at,
           x.embedding_model,
           x.thread_id,
           x.position,
           x.namespace,
           x.key,
           x.last_seen_at,
           x.distance,
           x.created_at - lag(x.created_at, 1, x.hit_at) OVER w AS gap
    FROM (SELECT u.hit_id,
                 u.created_at AS hit_at,
                 n.*
          FROM untold AS u
               CROSS JOIN LATERAL (SELECT m.id,
                                          m.content,
                                          m.kind,
                                          m.metadata,
                                          m.importance,
                                          m.access_count,
                                          m.last_accessed_at,
                                          m.created_at,
                                          m.embedding_model,
                                          m.thread_id,
                                          m.position,
                                          m.namespace,
                                          m.key,
                                          m.last_seen_at,
                                          m.embedding <-> %(query_vector)s AS distance
                                   FROM retrieval.memories AS m
                                   WHERE m.tenant_id = %(tenant_id)s
                                     AND m.kind = %(message_kind)s
                                     AND m.thread_id IS NULL
                                     AND (m.retired_at IS NULL
                                       OR m.retired_at > CAST(%(as_of)s AS timestamptz))
                                     AND (m.expires_at IS NULL
                                       OR m.expires_at > CAST(%(as_of)s AS timestamptz))
                                     AND (CAST(%(known_at)s AS timestamptz) IS NULL
                                       OR m.created_at <= CAST(%(known_at)s AS timestamptz))
                                     AND (m.created_at, m.id) > (u.created_at, u.hit_id)
                                     AND m.created_at <= u.created_at + %(session_gap)s * %(context_window)s
                                   ORDER BY m.created_at ASC,
                                            m.id ASC
                                   LIMIT %(context_window)s) AS n) AS x
    WINDOW w AS (PARTITION BY x.hit_id
                 ORDER BY x.created_at ASC,
                          x.id ASC)
  ),

-- told: those messages with the widest pause between them and their hit
told AS (
    SELECT *,
           max(gap) OVER (PARTITION BY hit_id,
                                       sign("offset")
                          ORDER BY abs("offset")) AS widest_gap
    FROM (SELECT *
          FROM told_before

          UNION ALL

          SELECT *
          FROM told_after) AS sides
  ),

-- turns: the turns within the window of each hit: its thread's, or its session's in time
--   binds: as_of, context_window, known_at, query_vector, session_gap, tenant_id
turns AS (
    SELECT h.hit_id,
           m.position - h.position AS "offset",
           m.id,
           m.content,
           m.kind,
           m.metadata,
           m.importance,
           m.access_count,
           m.last_accessed_at,
           m.created_at,
           m.embedding_model,
           m.thread_id,
           m.position,
           m.namespace,
           m.key,
           m.last_seen_at,
           m.embedding <-> %(query_vector)s AS distance
    FROM context_hits AS h
         INNER JOIN retrieval.memories AS m ON m.tenant_id = %(tenant_id)s
                                           AND m.thread_id = h.thread_id
                                           AND m.position BETWEEN h.position - %(context_window)s AND h.position + %(context_window)s
                                           AND m.id <> h.hit_id
                                           AND (m.retired_at IS NULL
                                             OR m.retired_at > CAST(%(as_of)s AS timestamptz))
                                           AND (m.expires_at IS NULL
                                             OR m.expires_at > CAST(%(as_of)s AS timestamptz))
                                           AND (CAST(%(known_at)s AS timestamptz) IS NULL
                                             OR m.created_at <= CAST(%(known_at)s AS timestamptz))
    WHERE h.thread_id IS NOT NULL

    UNION ALL

    SELECT hit_id,
           "offset",
           id,
           content,
           kind,
           metadata,
           importance,
           access_count,
           last_accessed_at,
           created_at,
           embedding_model,
           thread_id,
           position,
           namespace,
           key,
           last_seen_at,
           distance
    FROM told
    WHERE widest_gap <= %(session_gap)s
  ),

-- context: the turns as memory candidates, each with the hit it is next to and how far
--   binds: as_of, context_lift, dense_span_squared, dense_zero_squared, semantic_half_life
context AS (
    SELECT n.hit_id,
           n."offset",
           CAST('semantic' AS text) AS source,
           CAST('memory' AS text) AS item,
           n.id,
           n.content,
           n.kind,
           n.created_at,
           c.dense AS relevance,
           CASE
             WHEN c.halvings > 1000
               THEN CAST(0.0 AS float8)
             ELSE power(CAST(0.5 AS float8),
                        c.halvings)
           END AS recency,
           COALESCE(n.importance,
                    CAST(0.5 AS float8)) AS importance,
           LEAST(CAST(1.0 AS float8),
                 log(CAST(n.access_count + 1 AS float8)) / log(CAST(101.0 AS float8))) AS popularity,
           CAST(0.0 AS float8) AS entity,
           n.distance,
           CAST(NULL AS text[]) AS matched,
           CAST(NULL AS text[]) AS entities,
           json_build_object('metadata',
                             n.metadata,
                             'importance',
                             n.importance,
                             'access_count',
                             n.access_count,
                             'last_accessed_at',
                             n.last_accessed_at,
                             'embedding_model',
                             n.embedding_model,
                             'thread_id',
                             n.thread_id,
                             'position',
                             n.position,
                             'namespace',
                             n.namespace,
                             'key',
                             n.key,
                             'inverse_distance',
                             CAST(1.0 AS float8) / (CAST(1.0 AS float8) + n.distance),
                             'dense_relevance',
                             c.dense) AS details,
           TRUE AS evidence,
           CAST(NULL AS bigint[]) AS newer,
           CAST(NULL AS boolean[]) AS newer_near
    FROM turns AS n
         CROSS JOIN LATERAL (SELECT CASE
                                      WHEN n.last_seen_at <= CAST(%(as_of)s AS timestamptz)
                                        THEN GREATEST(n.created_at, n.last_seen_at)
                                      ELSE n.created_at
                                    END AS told_at) AS t
         CROSS JOIN LATERAL (SELECT LEAST(CAST(1.0 AS float8),
                                          GREATEST(CAST(0.0 AS float8),
                                                   (CAST(%(dense_zero_squared)s AS float8) - n.distance * n.distance) / CAST(%(dense_span_squared)s AS float8))) AS dense,
                                    GREATEST(CAST(EXTRACT(EPOCH FROM CAST(%(as_of)s AS timestamptz) - t.told_at) AS float8),
                                             0.0) / CAST(%(semantic_half_life)s AS float8) AS halvings) AS c
    WHERE n.id IN (SELECT s.id
                   FROM semantic AS s)
       OR LEAST(CAST(1.0 AS float8),
                (SELECT h.hit_relevance
                 FROM context_hits AS h
                 WHERE h.hit_id = n.hit_id) * power(CAST(%(context_lift)s AS float8),
                                                    abs(n."offset"))) > c.dense - 1e-9
  )
