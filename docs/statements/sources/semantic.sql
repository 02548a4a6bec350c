-- semantic: the semantic source's CTEs
-- Binds: as_of, bm25_b, bm25_k1, bm25_min_coverage, bm25_weight, cascade_threshold,
--        dense_span_squared, dense_weight, dense_zero_squared, fallback_results, fusion, known_at,
--        max_distance, memory_bm25_rows, query_text, query_vector, rrf_k, semantic_candidates,
--        semantic_half_life, tenant_id, update_similarity, version_candidates,
--        version_most_characters, version_nearest_margin, version_shared_words,
--        version_similarity, version_words_similarity

-- semantic_nearest: the tenant's live or corrected memories nearest the query's vector
--   binds: as_of, known_at, query_vector, semantic_candidates, tenant_id
semantic_nearest AS MATERIALIZED (
    SELECT m.id,
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
           m.search_vector,
           CASE
             WHEN m.retired_at <= CAST(%(as_of)s AS timestamptz)
               THEN m.superseded_by
           END AS routed_to,
           m.embedding <-> CAST(%(query_vector)s AS vector) AS distance
    FROM retrieval.memories AS m
    WHERE m.tenant_id = %(tenant_id)s
      AND (((m.retired_at IS NULL
          OR m.retired_at > CAST(%(as_of)s AS timestamptz))
        AND (m.expires_at IS NULL
          OR m.expires_at > CAST(%(as_of)s AS timestamptz))
        AND (CAST(%(known_at)s AS timestamptz) IS NULL
          OR m.created_at <= CAST(%(known_at)s AS timestamptz)))
        OR (m.superseded_by IS NOT NULL
        AND m.key IS NULL
        AND m.retired_at <= CAST(%(as_of)s AS timestamptz)
        AND (CAST(%(known_at)s AS timestamptz) IS NULL
          OR m.created_at <= CAST(%(known_at)s AS timestamptz))))
    ORDER BY distance
    LIMIT %(semantic_candidates)s
  ),

-- mem_corpus: the tenant's memory count, mean length and sampled share (memory_corpus)
--   binds: tenant_id
mem_corpus AS MATERIALIZED (
    SELECT CAST(memories AS float8) AS n,
           CAST(total_terms AS float8) / NULLIF(memories, 0) AS average_length,
           CAST(sampled_memories AS float8) AS sampled_n,
           text_search_config
    FROM retrieval.memory_corpus
    WHERE tenant_id = %(tenant_id)s
  ),

-- mem_terms: the query's lexemes with their document frequencies estimated from the sample
--   binds: query_text, tenant_id
mem_terms AS MATERIALIZED (
    SELECT q.term,
           CAST(CAST(array_to_tsvector(ARRAY[q.term]) AS text) AS tsquery) AS query,
           COALESCE(t.document_frequency, 0) AS sampled,
           COALESCE(t.document_frequency, 0) * c.n / NULLIF(c.sampled_n, 0.0) AS estimate
    FROM mem_corpus AS c
         CROSS JOIN LATERAL (SELECT DISTINCT lexeme AS term
                             FROM unnest(to_tsvector(CAST(c.text_search_config AS regconfig),
                                                     %(query_text)s))) AS q
         LEFT JOIN retrieval.memory_term_stats AS t ON t.tenant_id = %(tenant_id)s
                                                   AND t.term = q.term
  ),

-- mem_probed: the rarest query terms whose memories fit the BM25 row budget
--   binds: memory_bm25_rows
mem_probed AS MATERIALIZED (
    SELECT term,
           query
    FROM (SELECT term,
                 query,
                 sum(GREATEST(estimate, 1.0)) OVER (ORDER BY estimate,
                                                             term) AS rows
          FROM mem_terms
          WHERE sampled < 16) AS x
    WHERE rows <= %(memory_bm25_rows)s
  ),

-- mem_fetched: the live or corrected memories holding each probed term (GIN index)
--   binds: as_of, known_at, query_vector, tenant_id
mem_fetched AS MATERIALIZED (
    SELECT w.term,
           r.*
    FROM mem_probed AS w
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
                                    m.search_vector,
                                    CASE
                                      WHEN m.retired_at <= CAST(%(as_of)s AS timestamptz)
                                        THEN m.superseded_by
                                    END AS routed_to,
                                    m.embedding <-> CAST(%(query_vector)s AS vector) AS distance
                             FROM retrieval.memories AS m
                             WHERE m.tenant_id = %(tenant_id)s
                               AND m.search_vector @@ w.query
                               AND (((m.retired_at IS NULL
                                   OR m.retired_at > CAST(%(as_of)s AS timestamptz))
                                 AND (m.expires_at IS NULL
                                   OR m.expires_at > CAST(%(as_of)s AS timestamptz))
                                 AND (CAST(%(known_at)s AS timestamptz) IS NULL
                                   OR m.created_at <= CAST(%(known_at)s AS timestamptz)))
                                 OR (m.superseded_by IS NOT NULL
                                 AND m.key IS NULL
                                 AND m.retired_at <= CAST(%(as_of)s AS timestamptz)
                                 AND (CAST(%(known_at)s AS timestamptz) IS NULL
                                   OR m.created_at <= CAST(%(known_at)s AS timestamptz))))
                             LIMIT 513) AS r
  ),

-- mem_weights: each query term's document frequency (counted or estimated) and BM25 factors
--   binds: bm25_b, bm25_k1
mem_weights AS MATERIALIZED (
    SELECT w.term,
           x.document_frequency,
           x.counted,
           ln(1.0 + (c.n - x.document_frequency + 0.5) / (x.document_frequency + 0.5)) AS idf,
           ln(1.0 + (c.n - x.document_frequency + 0.5) / (x.document_frequency + 0.5)) * (CAST(%(bm25_k1)s AS float8) + 1.0) AS idf_k1,
           CAST(%(bm25_k1)s AS float8) * (1.0 - CAST(%(bm25_b)s AS float8)) AS base,
           CAST(%(bm25_k1)s AS float8) * CAST(%(bm25_b)s AS float8) / c.average_length AS per_length
    FROM mem_terms AS w
         CROSS JOIN mem_corpus AS c
         LEFT JOIN (SELECT term,
                           count(*) AS rows
                    FROM mem_fetched
                    GROUP BY term) AS r ON r.term = w.term
         CROSS JOIN LATERAL (SELECT CASE
                                      WHEN w.term IN (SELECT term
                                                      FROM mem_probed)
                                       AND COALESCE(r.rows, 0) <= 512
                                        THEN COALESCE(r.rows, 0)
                                      ELSE GREATEST(LEAST(w.estimate, c.n),
                                                    COALESCE(r.rows, 0))
                                    END AS document_frequency,
                                        w.term IN (SELECT term
                                                   FROM mem_probed)
                                    AND COALESCE(r.rows, 0) <= 512 AS counted) AS x
  ),

-- mem_total: the query's summed idf, its terms, and how many were not counted
mem_total AS MATERIALIZED (
    SELECT sum(idf) AS total_idf,
           array_agg(term) AS terms,
           count(*) FILTER (WHERE NOT counted) AS unprobed
    FROM mem_weights
  ),

-- mem_matched: the memories the rare terms found beyond the dense pool, in the mode's kinds
mem_matched AS MATERIALIZED (
    SELECT DISTINCT ON (r.id) r.id,
                              r.content,
                              r.kind,
                              r.metadata,
                              r.importance,
                              r.access_count,
                              r.last_accessed_at,
                              r.created_at,
                              r.embedding_model,
                              r.thread_id,
                              r.position,
                              r.namespace,
                              r.key,
                              r.last_seen_at,
                              r.search_vector,
                              r.routed_to,
                              r.distance
    FROM mem_fetched AS r
    WHERE TRUE
      AND r.id <> ALL(ARRAY(SELECT id
                            FROM semantic_nearest))
    ORDER BY r.id
  ),

-- mem_pool: the candidates of both channels, marked by the channel that found them
mem_pool AS MATERIALIZED (
    SELECT *,
           TRUE AS near
    FROM semantic_nearest

    UNION ALL

    SELECT *,
           FALSE AS near
    FROM mem_matched
  ),

-- mem_scores: each candidate's BM25 score and the idf it covers, from its own lexemes
mem_scores AS MATERIALIZED (
    SELECT p.id,
           sum(w.idf_k1 * cardinality(u.positions) / (cardinality(u.positions) + w.base + w.per_length * length(x.marked))) AS bm25,
           sum(w.idf) AS covered
    FROM mem_pool AS p
         CROSS JOIN LATERAL (SELECT setweight(p.search_vector,
                                              'A',
                                              (SELECT terms
                                               FROM mem_total)) AS marked
                             OFFSET 0) AS x
         CROSS JOIN LATERAL unnest(ts_filter(x.marked, '{a}')) AS u
         INNER JOIN mem_weights AS w ON w.term = u.lexeme
    GROUP BY p.id
  ),

-- mem_ranked: the candidates with their BM25 and dense ranks
mem_ranked AS MATERIALIZED (
    SELECT p.*,
           COALESCE(s.bm25, 0.0) AS bm25,
           COALESCE(s.covered, 0.0) / NULLIF((SELECT total_idf
                                              FROM mem_total),
                                             0.0) AS coverage,
           CASE
             WHEN s.bm25 > 0.0
               THEN row_number() OVER (ORDER BY COALESCE(s.bm25, 0.0) DESC,
                                                p.id)
           END AS bm25_rank,
           row_number() OVER (ORDER BY p.distance,
                                       p.id) AS dense_rank
    FROM mem_pool AS p
         LEFT JOIN mem_scores AS s ON s.id = p.id
  ),

-- semantic_found: the dense pool and the lexical channel's best candidates
--   binds: semantic_candidates
semantic_found AS (
    SELECT *
    FROM mem_ranked
    WHERE near
       OR bm25_rank <= %(semantic_candidates)s
  ),

-- semantic_routed: the candidates, each corrected memory in its live correction's place
--   binds: as_of, known_at, tenant_id
semantic_routed AS MATERIALIZED (
    SELECT DISTINCT ON (n.id) n.*
    FROM (SELECT f.*,
                 CAST(NULL AS bigint) AS found_through
          FROM semantic_found AS f
          WHERE f.routed_to IS NULL

          UNION ALL

          SELECT s.id,
                 s.content,
                 s.kind,
                 s.metadata,
                 s.importance,
                 s.access_count,
                 s.last_accessed_at,
                 s.created_at,
                 s.embedding_model,
                 s.thread_id,
                 s.position,
                 s.namespace,
                 s.key,
                 s.last_seen_at,
                 f.search_vector,
                 f.routed_to,
                 f.distance,
                 f.near,
                 f.bm25,
                 f.coverage,
                 f.bm25_rank,
                 f.dense_rank,
                 f.id AS found_through
          FROM semantic_found AS f
               CROSS JOIN LATERAL (WITH RECURSIVE
                                        later(id) AS (
                                            SELECT f.routed_to

                                            UNION

                                            SELECT c.superseded_by
                                            FROM later
                                                 INNER JOIN retrieval.memories AS c ON c.tenant_id = %(tenant_id)s
                                                                                   AND c.id = later.id
                                            WHERE c.superseded_by IS NOT NULL
                                              AND c.retired_at <= CAST(%(as_of)s AS timestamptz)
                                          )
                                     SELECT later.id
                                     FROM later) AS chain
               INNER JOIN retrieval.memories AS s ON s.tenant_id = %(tenant_id)s
                                                 AND s.id = chain.id
          WHERE f.routed_to IS NOT NULL
            AND (s.retired_at IS NULL
              OR s.retired_at > CAST(%(as_of)s AS timestamptz))
            AND (s.expires_at IS NULL
              OR s.expires_at > CAST(%(as_of)s AS timestamptz))
            AND (CAST(%(known_at)s AS timestamptz) IS NULL
              OR s.created_at <= CAST(%(known_at)s AS timestamptz))) AS n
    ORDER BY n.id,
             LEAST(n.bm25_rank, n.dense_rank),
             n.distance,
             n.found_through NULLS FIRST
  ),

-- semantic: the memories' candidates: relevance, recency, signals and evidence
--   binds: as_of, bm25_min_coverage, bm25_weight, cascade_threshold, dense_span_squared,
--          dense_weight, dense_zero_squared, fusion, max_distance, rrf_k, semantic_half_life
semantic AS (
    SELECT CAST('semantic' AS text) AS source,
           CAST('memory' AS text) AS item,
           n.id,
           n.content,
           n.kind,
           n.created_at,
           CASE %(fusion)s
             WHEN 'convex'
               THEN LEAST(CAST(1.0 AS float8),
                          CAST(%(bm25_weight)s AS float8) * c.lexical + CAST(%(dense_weight)s AS float8) * c.dense)
             WHEN 'max'
               THEN GREATEST(c.lexical, c.dense)
             WHEN 'cascade'
               THEN CASE
                      WHEN c.lexical >= CAST(%(cascade_threshold)s AS float8)
                        THEN c.lexical
                      ELSE c.dense
                    END
             WHEN 'rrf'
               THEN LEAST(CAST(1.0 AS float8),
                          (COALESCE(CAST(%(bm25_weight)s AS float8) / (%(rrf_k)s + n.bm25_rank),
                                    0.0) + COALESCE(CAST(%(dense_weight)s AS float8) / (%(rrf_k)s + n.dense_rank),
                                                    0.0)) / ((CAST(%(bm25_weight)s AS float8) + CAST(%(dense_weight)s AS float8)) / (%(rrf_k)s + 1)))
           END AS relevance,
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
                             c.dense,
                             'fusion',
                             CAST(%(fusion)s AS text),
                             'bm25',
                             n.bm25,
                             'bm25_rank',
                             n.bm25_rank,
                             'bm25_relevance',
                             c.lexical,
                             'lexical_share',
                             CAST(CASE %(fusion)s
                                    WHEN 'convex'
                                      THEN COALESCE(CAST(%(bm25_weight)s AS float8) * c.lexical / NULLIF(CAST(%(bm25_weight)s AS float8) * c.lexical + CAST(%(dense_weight)s AS float8) * c.dense,
                                                                                                             0.0),
                                                    0.0)
                                    WHEN 'max'
                                      THEN CASE
                                             WHEN c.lexical > c.dense
                                               THEN 1.0
                                             WHEN c.lexical < c.dense
                                               THEN 0.0
                                             ELSE 0.5
                                           END
                                    WHEN 'cascade'
                                      THEN CASE
                                             WHEN c.lexical >= CAST(%(cascade_threshold)s AS float8)
                                               THEN 1.0
                                             ELSE 0.0
                                           END
                                    WHEN 'rrf'
                                      THEN COALESCE(COALESCE(CAST(%(bm25_weight)s AS float8) / (%(rrf_k)s + n.bm25_rank),
                                                             0.0) / NULLIF(COALESCE(CAST(%(bm25_weight)s AS float8) / (%(rrf_k)s + n.bm25_rank),
                                                                                    0.0) + COALESCE(CAST(%(dense_weight)s AS float8) / (%(rrf_k)s + n.dense_rank),
                                                                                                    0.0),
                                                                           0.0),
                                                    0.0)
                                  END AS float8),
                             'coverage',
                             n.coverage,
                             'dense_rank',
                             n.dense_rank,
                             'found_by',
                             CASE
                               WHEN n.near
                                 THEN 'dense'
                               ELSE 'bm25'
                             END,
                             'bm25_complete',
                             (SELECT unprobed
                              FROM mem_total) = 0,
                             'found_through',
                             n.found_through) AS details,
              n.distance <= CAST(%(max_distance)s AS float8)
           OR n.coverage >= CAST(%(bm25_min_coverage)s AS float8) AS evidence,
           CAST(NULL AS bigint[]) AS newer,
           CAST(NULL AS boolean[]) AS newer_near,
           n.thread_id,
           n.position,
           t.told_at
    FROM semantic_routed AS n
         CROSS JOIN LATERAL (SELECT CASE
                                      WHEN n.last_seen_at <= CAST(%(as_of)s AS timestamptz)
                                        THEN GREATEST(n.created_at, n.last_seen_at)
                                      ELSE n.created_at
                                    END AS told_at) AS t
         CROSS JOIN LATERAL (SELECT LEAST(CAST(1.0 AS float8),
                                          GREATEST(CAST(0.0 AS float8),
                                                   (CAST(%(dense_zero_squared)s AS float8) - n.distance * n.distance) / CAST(%(dense_span_squared)s AS float8))) AS dense,
                                    LEAST(CAST(1.0 AS float8),
                                          COALESCE(n.bm25 / NULLIF((SELECT total_idf
                                                                    FROM mem_total),
                                                                   CAST(0.0 AS float8)),
                                                   0.0)) AS lexical,
                                    GREATEST(CAST(EXTRACT(EPOCH FROM CAST(%(as_of)s AS timestamptz) - t.told_at) AS float8),
                                             0.0) / CAST(%(semantic_half_life)s AS float8) AS halvings) AS c
  ),

-- mem_facts: the most relevant candidates stating facts (not turns), with their vectors
--   binds: tenant_id, version_candidates, version_most_characters
mem_facts AS MATERIALIZED (
    SELECT s.id,
           s.kind,
           m.namespace,
           s.told_at,
           m.embedding,
           strip(m.search_vector) AS lexemes,
           EXISTS (SELECT 1
                   FROM retrieval.memories AS r
                   WHERE r.tenant_id = %(tenant_id)s
                     AND r.superseded_by = s.id) AS replaced
    FROM (SELECT s.id,
                 s.kind,
                 s.told_at
          FROM semantic AS s
          WHERE NOT(s.kind = 'message'
                 OR (s.thread_id IS NOT NULL
                 AND s.position IS NOT NULL))
            AND (octet_length(s.content) <= %(version_most_characters)s
              OR (octet_length(s.content) <= 4 * %(version_most_characters)s
              AND char_length(s.content) <= %(version_most_characters)s))
          ORDER BY s.relevance DESC,
                   s.id
          LIMIT %(version_candidates)s) AS s
         INNER JOIN retrieval.memories AS m ON m.tenant_id = %(tenant_id)s
                                           AND m.id = s.id
  ),

-- mem_newer: each fact's possible newer versions among them, marked near or not
--   binds: as_of, update_similarity, version_nearest_margin, version_shared_words,
--          version_similarity, version_words_similarity
mem_newer AS MATERIALIZED (
    SELECT q.id,
           array_agg(q.newer ORDER BY q.told_at DESC,
                                      q.newer DESC) AS newer,
           array_agg(q.near ORDER BY q.told_at DESC,
                                     q.newer DESC) AS newer_near
    FROM (SELECT o.id,
                 n.id AS newer,
                 n.told_at,
                 p.near,
                 d.similarity,
                 CASE
                   WHEN n.replaced
                     THEN CAST(1.0 AS float8)
                   ELSE max(d.similarity) OVER (PARTITION BY n.id)
                 END AS nearest
          FROM mem_facts AS o
               INNER JOIN mem_facts AS n ON n.kind = o.kind
                                        AND n.namespace = o.namespace
                                        AND n.told_at > o.told_at
                                        AND n.told_at <= CAST(%(as_of)s AS timestamptz)
               CROSS JOIN LATERAL (SELECT CAST(1.0 AS float8) - (o.embedding <=> n.embedding) AS similarity) AS d
               CROSS JOIN LATERAL (SELECT length(o.lexemes) + length(n.lexemes) - length(o.lexemes || n.lexemes) AS shared) AS w
               CROSS JOIN LATERAL (SELECT CASE
                                            WHEN d.similarity >= CAST(%(version_similarity)s AS float8)
                                              THEN TRUE
                                            WHEN d.similarity >= CAST(%(version_words_similarity)s AS float8)
                                              THEN CAST(w.shared AS float8) >= CAST(%(version_shared_words)s AS float8) * (length(o.lexemes) + length(n.lexemes) - w.shared)
                                          END AS near) AS p
          WHERE d.similarity >= CAST(%(update_similarity)s AS float8)) AS q
    WHERE q.near IS TRUE
       OR q.similarity >= q.nearest - CAST(%(version_nearest_margin)s AS float8)
    GROUP BY q.id
  ),

-- semantic_versions: the memories' candidates, each with its newer versions
semantic_versions AS (
    SELECT s.source,
           s.item,
           s.id,
           s.content,
           s.kind,
           s.created_at,
           s.relevance,
           s.recency,
           s.importance,
           s.popularity,
           s.entity,
           s.distance,
           s.matched,
           s.entities,
           s.details,
           s.evidence,
           v.newer,
           v.newer_near
    FROM semantic AS s
         LEFT JOIN mem_newer AS v ON v.id = s.id
  ),

-- semantic_sent: the candidates ranked: with evidence, newer versions, weak matches
--   binds: fallback_results
semantic_sent AS (
    SELECT *
    FROM semantic_versions AS s
    WHERE s.evidence
       OR s.id IN (SELECT unnest(v.newer)
                   FROM mem_newer AS v
                        INNER JOIN semantic AS e ON e.id = v.id
                                                AND e.evidence)
       OR s.id IN (SELECT w.id
                   FROM semantic AS w
                   WHERE NOT w.evidence
                   ORDER BY w.relevance DESC,
                            w.distance,
                            w.id
                   LIMIT %(fallback_results)s)
  )
