-- episodic: the episodic source's CTEs
-- Binds: as_of, episodic_band_lists, episodic_band_since, episodic_band_until,
--        episodic_candidates, episodic_half_life, episodic_keywords, episodic_min_hits,
--        episodic_recency, episodic_relevance, keywords, known_at, patterns, tenant_id

-- episodic_patterns: the query's keywords and their LIKE patterns, lower-cased once
--   binds: keywords, patterns
episodic_patterns AS MATERIALIZED (
    SELECT k.keyword,
           lower(k.pattern) AS pattern,
           k.position
    FROM unnest(CAST(%(keywords)s AS text[]),
                CAST(%(patterns)s AS text[])) WITH ORDINALITY AS k (keyword, pattern, position)
  ),

-- episodic_tokens: each keyword's tokens in the tenant's vocabulary, with their row counts
--   binds: tenant_id
episodic_tokens AS MATERIALIZED (
    SELECT k.position,
           v.id AS token_id,
           v.rows
    FROM episodic_patterns AS k
         CROSS JOIN LATERAL (SELECT v.id,
                                    v.rows
                             FROM retrieval.episodic_vocabulary AS v
                             WHERE v.tenant_id = %(tenant_id)s
                               AND v.token LIKE k.pattern
                             OFFSET 0) AS v
  ),

-- episodic_rarity: the keywords ranked rarest first
episodic_rarity AS MATERIALIZED (
    SELECT k.position,
           row_number() OVER (ORDER BY COALESCE(sum(t.rows),
                                                0),
                                       k.position) AS rarity
    FROM episodic_patterns AS k
         LEFT JOIN episodic_tokens AS t ON t.position = k.position
    GROUP BY k.position
  ),

-- episodic_found: the rows that can pass the threshold, from their bands' rarest postings
--   binds: episodic_band_lists, episodic_band_since, episodic_band_until, episodic_keywords,
--          tenant_id
episodic_found AS MATERIALIZED (
    SELECT h.item,
           h.row_id,
           bit_count(CAST(bit_or(CAST(1 AS bigint) << CAST(h.position AS integer) - 1) AS pg_catalog.bit(64))) AS seen,
           min(h.read) = CAST(%(episodic_keywords)s AS integer) AS exact
    FROM (SELECT p.item,
                 p.row_id,
                 t.position,
                 b.read,
                 b.lists
          FROM (SELECT lists,
                       COALESCE(since,
                                CAST('-infinity' AS timestamptz)) AS since,
                       COALESCE(until,
                                CAST('infinity' AS timestamptz)) AS until,
                       LEAST(lists + 1,
                             CAST(%(episodic_keywords)s AS integer)) AS read
                FROM unnest(CAST(%(episodic_band_lists)s AS integer[]),
                            CAST(%(episodic_band_since)s AS timestamptz[]),
                            CAST(%(episodic_band_until)s AS timestamptz[])) AS b (lists, since, until)
                OFFSET 0) AS b
               INNER JOIN episodic_rarity AS r ON r.rarity <= b.read
               INNER JOIN episodic_tokens AS t ON t.position = r.position
               CROSS JOIN LATERAL (SELECT p.item,
                                          p.row_id
                                   FROM retrieval.episodic_postings AS p
                                   WHERE p.tenant_id = %(tenant_id)s
                                     AND p.token_id = t.token_id
                                     AND p.created_at >= b.since
                                     AND p.created_at < b.until
                                   OFFSET 0) AS p) AS h
    GROUP BY h.item, h.row_id
    HAVING bit_count(CAST(bit_or(CAST(1 AS bigint) << CAST(h.position AS integer) - 1) AS pg_catalog.bit(64))) >= min(h.read) - min(h.lists) + 1
  ),

-- decision_hits: the decisions found, each with its exact count of keywords
--   binds: known_at, tenant_id
decision_hits AS (
    SELECT x.id,
           x.created_at,
           x.hits
    FROM episodic_found AS f
         CROSS JOIN LATERAL (SELECT x.id,
                                    x.created_at,
                                    CASE
                                      WHEN f.exact
                                        THEN f.seen
                                      ELSE (SELECT count(*)
                                            FROM episodic_patterns AS k
                                            WHERE x.search_text LIKE k.pattern)
                                    END AS hits
                             FROM retrieval.decisions AS x
                             WHERE x.tenant_id = %(tenant_id)s
                               AND x.id = f.row_id
                               AND (CAST(%(known_at)s AS timestamptz) IS NULL
                                 OR x.created_at <= CAST(%(known_at)s AS timestamptz))
                             LIMIT 1) AS x
    WHERE f.item = 1
  ),

-- decision_top: the decisions' candidate pool, by the source's relevance and recency
--   binds: as_of, episodic_candidates, episodic_half_life, episodic_keywords, episodic_min_hits,
--          episodic_recency, episodic_relevance
decision_top AS (
    SELECT *
    FROM (SELECT h.id,
                 CAST(h.hits AS float8) / CAST(%(episodic_keywords)s AS integer) AS relevance,
                 CASE
                   WHEN c.halvings > 1000
                     THEN CAST(0.0 AS float8)
                   ELSE power(CAST(0.5 AS float8),
                              c.halvings)
                 END AS recency,
                 h.created_at
          FROM decision_hits AS h
               CROSS JOIN LATERAL (SELECT GREATEST(CAST(EXTRACT(EPOCH FROM CAST(%(as_of)s AS timestamptz) - h.created_at) AS float8),
                                                   0.0) / CAST(%(episodic_half_life)s AS float8) AS halvings) AS c
          WHERE h.hits >= %(episodic_min_hits)s) AS scored
    ORDER BY CAST(%(episodic_relevance)s AS float8) * scored.relevance + CAST(%(episodic_recency)s AS float8) * scored.recency DESC,
             scored.created_at DESC,
             scored.id DESC
    LIMIT %(episodic_candidates)s
  ),

-- episodic_decisions: the decisions' candidates: relevance, recency and evidence
--   binds: tenant_id
episodic_decisions AS (
    SELECT CAST('episodic' AS text) AS source,
           CAST('decision' AS text) AS item,
           d.id,
           d.content,
           CAST('decision' AS text) AS kind,
           d.created_at,
           t.relevance,
           t.recency,
           CAST(0.0 AS float8) AS importance,
           CAST(0.0 AS float8) AS popularity,
           CAST(0.0 AS float8) AS entity,
           CAST(NULL AS float8) AS distance,
           ARRAY(SELECT k.keyword
                 FROM episodic_patterns AS k
                 WHERE d.search_text LIKE k.pattern
                 ORDER BY k.position) AS matched,
           CAST(NULL AS text[]) AS entities,
           json_build_object('task_id', d.task_id, 'action_type', d.action_type, 'status', d.status) AS details,
           TRUE AS evidence,
           CAST(NULL AS bigint[]) AS newer,
           CAST(NULL AS boolean[]) AS newer_near
    FROM decision_top AS t
         INNER JOIN retrieval.decisions AS d ON d.tenant_id = %(tenant_id)s
                                            AND d.id = t.id
  ),

-- tool_call_hits: the tool calls found, each with its exact count of keywords
--   binds: known_at, tenant_id
tool_call_hits AS (
    SELECT x.id,
           x.created_at,
           x.hits
    FROM episodic_found AS f
         CROSS JOIN LATERAL (SELECT x.id,
                                    x.created_at,
                                    CASE
                                      WHEN f.exact
                                        THEN f.seen
                                      ELSE (SELECT count(*)
                                            FROM episodic_patterns AS k
                                            WHERE x.search_text LIKE k.pattern)
                                    END AS hits
                             FROM retrieval.tool_calls AS x
                             WHERE x.tenant_id = %(tenant_id)s
                               AND x.id = f.row_id
                               AND (CAST(%(known_at)s AS timestamptz) IS NULL
                                 OR x.created_at <= CAST(%(known_at)s AS timestamptz))
                             LIMIT 1) AS x
    WHERE f.item = 2
  ),

-- tool_call_top: the tool calls' candidate pool, by the source's relevance and recency
--   binds: as_of, episodic_candidates, episodic_half_life, episodic_keywords, episodic_min_hits,
--          episodic_recency, episodic_relevance
tool_call_top AS (
    SELECT *
    FROM (SELECT h.id,
                 CAST(h.hits AS float8) / CAST(%(episodic_keywords)s AS integer) AS relevance,
                 CASE
                   WHEN c.halvings > 1000
                     THEN CAST(0.0 AS float8)
                   ELSE power(CAST(0.5 AS float8),
                              c.halvings)
                 END AS recency,
                 h.created_at
          FROM tool_call_hits AS h
               CROSS JOIN LATERAL (SELECT GREATEST(CAST(EXTRACT(EPOCH FROM CAST(%(as_of)s AS timestamptz) - h.created_at) AS float8),
                                                   0.0) / CAST(%(episodic_half_life)s AS float8) AS halvings) AS c
          WHERE h.hits >= %(episodic_min_hits)s) AS scored
    ORDER BY CAST(%(episodic_relevance)s AS float8) * scored.relevance + CAST(%(episodic_recency)s AS float8) * scored.recency DESC,
             scored.created_at DESC,
             scored.id DESC
    LIMIT %(episodic_candidates)s
  ),

-- episodic_tool_calls: the tool calls' candidates: relevance, recency and evidence
--   binds: tenant_id
episodic_tool_calls AS (
    SELECT CAST('episodic' AS text) AS source,
           CAST('tool_call' AS text) AS item,
           c.id,
           c.tool_name || ' ' || CAST(c.params AS text) || COALESCE(' -> ' || c.result,
                                                                    '') AS content,
           CAST('tool_call' AS text) AS kind,
           c.created_at,
           t.relevance,
           t.recency,
           CAST(0.0 AS float8) AS importance,
           CAST(0.0 AS float8) AS popularity,
           CAST(0.0 AS float8) AS entity,
           CAST(NULL AS float8) AS distance,
           ARRAY(SELECT k.keyword
                 FROM episodic_patterns AS k
                 WHERE c.search_text LIKE k.pattern
                 ORDER BY k.position) AS matched,
           CAST(NULL AS text[]) AS entities,
           json_build_object('tool_name', c.tool_name, 'params', c.params, 'result', c.result, 'decision_id', c.decision_id) AS details,
           TRUE AS evidence,
           CAST(NULL AS bigint[]) AS newer,
           CAST(NULL AS boolean[]) AS newer_near
    FROM tool_call_top AS t
         INNER JOIN retrieval.tool_calls AS c ON c.tenant_id = %(tenant_id)s
                                             AND c.id = t.id
  )
