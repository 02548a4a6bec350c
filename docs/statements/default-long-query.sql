-- default-long-query: the defaults, a query of more words than max_query_words (and 63 keywords)
-- Binds: as_of, bm25_b, bm25_common_share, bm25_k1, bm25_min_coverage, bm25_weight,
--        cascade_threshold, dense_span_squared, dense_weight, dense_zero_squared,
--        documents_candidates, documents_half_life, episodic_band_lists, episodic_band_since,
--        episodic_band_until, episodic_candidates, episodic_half_life, episodic_keywords,
--        episodic_min_hits, episodic_recency, episodic_relevance, fallback_results, fusion,
--        keywords, known_at, max_distance, max_query_words, memory_bm25_rows, patterns,
--        query_text, query_vector, rrf_k, semantic_candidates, semantic_half_life, tenant_id,
--        text_search_config, update_similarity, version_candidates, version_most_characters,
--        version_nearest_margin, version_shared_words, version_similarity,
--        version_words_similarity

WITH
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
--   binds: max_query_words, query_text, tenant_id
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
    ORDER BY estimate,
             q.term
    LIMIT %(max_query_words)s
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
  ),

-- episodic_patterns: the query's keywords and their LIKE patterns, lower-cased once
--   binds: episodic_keywords, keywords, patterns, tenant_id
episodic_patterns AS MATERIALIZED (
    SELECT k.keyword,
           lower(k.pattern) AS pattern,
           row_number() OVER (ORDER BY k.position) AS position
    FROM (SELECT k.keyword,
                 k.pattern,
                 k.position
          FROM unnest(CAST(%(keywords)s AS text[]),
                      CAST(%(patterns)s AS text[])) WITH ORDINALITY AS k (keyword, pattern, position)
               LEFT JOIN retrieval.episodic_vocabulary AS v ON v.tenant_id = %(tenant_id)s
                                                           AND v.digest = sha256(convert_to(lower(k.keyword),
                                                                                            'UTF8'))
          ORDER BY v.rows IS NULL,
                   v.rows,
                   k.position
          LIMIT %(episodic_keywords)s) AS k
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
           count(DISTINCT h.position) AS seen,
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
    HAVING count(DISTINCT h.position) >= min(h.read) - min(h.lists) + 1
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
  ),

-- doc_terms: the query's lexemes (the rarest first, when the query is capped)
--   binds: max_query_words, query_text, tenant_id, text_search_config
doc_terms AS MATERIALIZED (
    SELECT q.term
    FROM (SELECT DISTINCT lexeme AS term
          FROM unnest(to_tsvector(CAST(%(text_search_config)s AS regconfig),
                                  %(query_text)s))) AS q
         LEFT JOIN retrieval.document_term_stats AS t ON t.tenant_id = %(tenant_id)s
                                                     AND t.term = q.term
    ORDER BY t.document_frequency IS NULL,
             t.document_frequency,
             q.term
    LIMIT %(max_query_words)s
  ),

-- doc_corpus: the tenant's row count and mean length
--   binds: tenant_id
doc_corpus AS (
    SELECT CAST(chunks AS float8) AS n,
           CAST(total_terms AS float8) / NULLIF(chunks, 0) AS average_length
    FROM retrieval.document_corpus
    WHERE tenant_id = %(tenant_id)s
  ),

-- doc_weights: the query terms the rows hold, each with its BM25 factors and whether it is common
--   binds: bm25_b, bm25_common_share, bm25_k1, tenant_id
doc_weights AS MATERIALIZED (
    SELECT q.term,
           ln(1.0 + (c.n - t.document_frequency + 0.5) / (t.document_frequency + 0.5)) AS idf,
           ln(1.0 + (c.n - t.document_frequency + 0.5) / (t.document_frequency + 0.5)) * (CAST(%(bm25_k1)s AS float8) + 1.0) AS idf_k1,
           CAST(%(bm25_k1)s AS float8) * (1.0 - CAST(%(bm25_b)s AS float8)) AS base,
           CAST(%(bm25_k1)s AS float8) * CAST(%(bm25_b)s AS float8) / c.average_length AS per_length,
           t.document_frequency > CAST(%(bm25_common_share)s AS float8) * c.n AS common
    FROM doc_terms AS q
         INNER JOIN retrieval.document_term_stats AS t ON t.tenant_id = %(tenant_id)s
                                                      AND t.term = q.term
         CROSS JOIN doc_corpus AS c
  ),

-- doc_partial: each row's partial score from the rare terms' postings
--   binds: tenant_id
doc_partial AS MATERIALIZED (
    SELECT p.chunk_id,
           sum(w.idf_k1 * p.term_frequency / (p.term_frequency + w.base + w.per_length * p.chunk_length)) AS partial
    FROM doc_weights AS w
         INNER JOIN retrieval.document_terms AS p ON p.tenant_id = %(tenant_id)s
                                                 AND p.term = w.term
    WHERE NOT w.common
    GROUP BY p.chunk_id
  ),

-- doc_top: the seed (the best partial scores) and the best one outside it
--   binds: documents_candidates
doc_top AS MATERIALIZED (
    SELECT a.chunk_id,
           a.partial,
           row_number() OVER (ORDER BY a.partial DESC,
                                       a.chunk_id) AS place
    FROM (SELECT *
          FROM doc_partial
          ORDER BY partial DESC,
                   chunk_id
          LIMIT (8 * %(documents_candidates)s + 1)) AS a
  ),

-- doc_seed: the seed's exact scores, the common terms added
--   binds: documents_candidates, tenant_id
doc_seed AS MATERIALIZED (
    SELECT a.chunk_id,
           a.partial + COALESCE(x.rest, 0.0) AS bm25
    FROM doc_top AS a
         LEFT JOIN (SELECT p.chunk_id,
                           sum(w.idf_k1 * p.term_frequency / (p.term_frequency + w.base + w.per_length * p.chunk_length)) AS rest
                    FROM doc_weights AS w
                         INNER JOIN retrieval.document_terms AS p ON p.tenant_id = %(tenant_id)s
                                                                 AND p.term = w.term
                                                                 AND p.chunk_id = ANY(ARRAY(SELECT chunk_id
                                                                                            FROM doc_top
                                                                                            WHERE place <= 8 * %(documents_candidates)s))
                    WHERE w.common
                    GROUP BY p.chunk_id) AS x ON x.chunk_id = a.chunk_id
    WHERE a.place <= 8 * %(documents_candidates)s
  ),

-- doc_bound: what the common terms can add, the seed's bar, and the best partial outside it
--   binds: documents_candidates
doc_bound AS MATERIALIZED (
    SELECT (SELECT COALESCE(sum(idf_k1),
                            0.0)
            FROM doc_weights
            WHERE common) AS rest,
           (SELECT bm25
            FROM doc_seed
            ORDER BY bm25 DESC
            LIMIT 1
            OFFSET %(documents_candidates)s - 1) AS theta,
           (SELECT partial
            FROM doc_top
            WHERE place = 8 * %(documents_candidates)s + 1) AS outside
  ),

-- doc_reach: the rows the rare terms found that can still reach the top
doc_reach AS MATERIALIZED (
    SELECT a.chunk_id,
           a.partial
    FROM doc_partial AS a, doc_bound AS x
    WHERE a.partial + x.rest >= x.theta
  ),

-- doc_tier: which tier answers exactly: the seed, the rows in reach, or every posting
doc_tier AS MATERIALIZED (
    SELECT CASE
             WHEN x.rest = 0.0
              AND x.outside IS NULL
               THEN 1
             WHEN x.theta > x.rest
              AND (x.outside IS NULL
                OR x.outside + x.rest < x.theta)
               THEN 1
             WHEN x.theta > x.rest
              AND (SELECT count(*)
                   FROM doc_reach) <= 5000
               THEN 2
             ELSE 3
           END AS tier
    FROM doc_bound AS x
  ),

-- doc_bm25: the best rows by exact BM25
--   binds: documents_candidates, tenant_id
doc_bm25 AS (
    SELECT *
    FROM ((SELECT s.chunk_id,
                  s.bm25
           FROM doc_seed AS s
           WHERE (SELECT tier
                  FROM doc_tier) = 1

           UNION ALL

           SELECT a.chunk_id,
                  a.partial + COALESCE(x.rest, 0.0) AS bm25
           FROM doc_reach AS a
                LEFT JOIN (SELECT p.chunk_id,
                                  sum(w.idf_k1 * p.term_frequency / (p.term_frequency + w.base + w.per_length * p.chunk_length)) AS rest
                           FROM doc_weights AS w
                                INNER JOIN retrieval.document_terms AS p ON p.tenant_id = %(tenant_id)s
                                                                        AND p.term = w.term
                                                                        AND p.chunk_id = ANY(ARRAY(SELECT chunk_id
                                                                                                   FROM doc_reach))
                           WHERE w.common
                           GROUP BY p.chunk_id) AS x ON x.chunk_id = a.chunk_id
           WHERE (SELECT tier
                  FROM doc_tier) = 2)

          UNION ALL

          SELECT p.chunk_id,
                 sum(w.idf_k1 * p.term_frequency / (p.term_frequency + w.base + w.per_length * p.chunk_length)) AS bm25
          FROM doc_weights AS w
               INNER JOIN retrieval.document_terms AS p ON p.tenant_id = %(tenant_id)s
                                                       AND p.term = w.term
          WHERE (SELECT tier
                 FROM doc_tier) = 3
          GROUP BY p.chunk_id) AS scored
    ORDER BY scored.bm25 DESC,
             scored.chunk_id
    LIMIT %(documents_candidates)s
  ),

-- doc_dense: the tenant's chunks nearest the query's vector (the dense channel)
--   binds: documents_candidates, query_vector, tenant_id
doc_dense AS MATERIALIZED (
    SELECT c.id AS chunk_id,
           c.embedding <-> CAST(%(query_vector)s AS vector) AS distance
    FROM retrieval.document_chunks AS c
    WHERE c.tenant_id = %(tenant_id)s
    ORDER BY distance
    LIMIT %(documents_candidates)s
  ),

-- doc_found: the chunks either channel found
doc_found AS MATERIALIZED (
    SELECT chunk_id
    FROM doc_bm25

    UNION

    SELECT chunk_id
    FROM doc_dense
  ),

-- doc_idf: every query term's BM25 factors (a term no chunk holds included)
--   binds: bm25_b, bm25_k1, tenant_id
doc_idf AS MATERIALIZED (
    SELECT q.term,
           ln(1.0 + (c.n - COALESCE(t.document_frequency, 0) + 0.5) / (COALESCE(t.document_frequency, 0) + 0.5)) AS idf,
           ln(1.0 + (c.n - COALESCE(t.document_frequency, 0) + 0.5) / (COALESCE(t.document_frequency, 0) + 0.5)) * (CAST(%(bm25_k1)s AS float8) + 1.0) AS idf_k1,
           CAST(%(bm25_k1)s AS float8) * (1.0 - CAST(%(bm25_b)s AS float8)) AS base,
           CAST(%(bm25_k1)s AS float8) * CAST(%(bm25_b)s AS float8) / c.average_length AS per_length
    FROM doc_terms AS q
         CROSS JOIN doc_corpus AS c
         LEFT JOIN retrieval.document_term_stats AS t ON t.tenant_id = %(tenant_id)s
                                                     AND t.term = q.term
  ),

-- doc_covered: each found chunk's exact BM25 score and the idf it covers
--   binds: tenant_id
doc_covered AS (
    SELECT p.chunk_id,
           sum(i.idf) AS covered,
           sum(i.idf_k1 * p.term_frequency / (p.term_frequency + i.base + i.per_length * p.chunk_length)) AS bm25
    FROM doc_idf AS i
         INNER JOIN retrieval.document_terms AS p ON p.tenant_id = %(tenant_id)s
                                                 AND p.term = i.term
                                                 AND p.chunk_id = ANY(ARRAY(SELECT chunk_id
                                                                            FROM doc_found))
    GROUP BY p.chunk_id
  ),

-- doc_evidence: the found chunks with both channels' evidence and their columns
--   binds: query_vector, tenant_id
doc_evidence AS MATERIALIZED (
    SELECT u.chunk_id,
           COALESCE(d.distance,
                    c.embedding <-> CAST(%(query_vector)s AS vector)) AS distance,
           COALESCE(v.bm25, 0.0) AS bm25,
           COALESCE(v.covered, 0.0) / NULLIF((SELECT sum(idf)
                                              FROM doc_idf),
                                             0.0) AS coverage,
           c.content,
           c.created_at,
           c.document_id,
           c.chunk_index,
           c.section_title,
           c.page_start,
           c.page_end,
           c.metadata
    FROM doc_found AS u
         INNER JOIN retrieval.document_chunks AS c ON c.tenant_id = %(tenant_id)s
                                                  AND c.id = u.chunk_id
         LEFT JOIN doc_dense AS d ON d.chunk_id = u.chunk_id
         LEFT JOIN doc_covered AS v ON v.chunk_id = u.chunk_id
  ),

-- doc_ranked: the found chunks with their BM25 and dense ranks
doc_ranked AS (
    SELECT e.*,
           CASE
             WHEN e.bm25 > 0.0
               THEN row_number() OVER (ORDER BY e.bm25 DESC,
                                                e.chunk_id)
           END AS bm25_rank,
           row_number() OVER (ORDER BY e.distance,
                                       e.chunk_id) AS dense_rank
    FROM doc_evidence AS e
  ),

-- documents: the chunks' candidates: fused relevance, recency and evidence
--   binds: as_of, bm25_min_coverage, bm25_weight, cascade_threshold, dense_span_squared,
--          dense_weight, dense_zero_squared, documents_half_life, fusion, max_distance, rrf_k,
--          tenant_id
documents AS (
    SELECT CAST('documents' AS text) AS source,
           CAST('chunk' AS text) AS item,
           f.chunk_id AS id,
           f.content,
           CAST('chunk' AS text) AS kind,
           f.created_at,
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
                          (COALESCE(CAST(%(bm25_weight)s AS float8) / (%(rrf_k)s + f.bm25_rank),
                                    0.0) + COALESCE(CAST(%(dense_weight)s AS float8) / (%(rrf_k)s + f.dense_rank),
                                                    0.0)) / ((CAST(%(bm25_weight)s AS float8) + CAST(%(dense_weight)s AS float8)) / (%(rrf_k)s + 1)))
           END AS relevance,
           CASE
             WHEN c.halvings > 1000
               THEN CAST(0.0 AS float8)
             ELSE power(CAST(0.5 AS float8),
                        c.halvings)
           END AS recency,
           CAST(0.0 AS float8) AS importance,
           CAST(0.0 AS float8) AS popularity,
           CAST(0.0 AS float8) AS entity,
           f.distance,
           CAST(NULL AS text[]) AS matched,
           CAST(NULL AS text[]) AS entities,
           json_build_object('doc_id',
                             d.doc_id,
                             'filename',
                             d.filename,
                             'chunk_index',
                             f.chunk_index,
                             'section_title',
                             f.section_title,
                             'page_start',
                             f.page_start,
                             'page_end',
                             f.page_end,
                             'metadata',
                             d.metadata || f.metadata,
                             'coverage',
                             f.coverage,
                             'bm25_tier',
                             (SELECT tier
                              FROM doc_tier),
                             'fusion',
                             CAST(%(fusion)s AS text),
                             'bm25',
                             f.bm25,
                             'bm25_rank',
                             f.bm25_rank,
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
                                      THEN COALESCE(COALESCE(CAST(%(bm25_weight)s AS float8) / (%(rrf_k)s + f.bm25_rank),
                                                             0.0) / NULLIF(COALESCE(CAST(%(bm25_weight)s AS float8) / (%(rrf_k)s + f.bm25_rank),
                                                                                    0.0) + COALESCE(CAST(%(dense_weight)s AS float8) / (%(rrf_k)s + f.dense_rank),
                                                                                                    0.0),
                                                                           0.0),
                                                    0.0)
                                  END AS float8),
                             'dense_distance',
                             f.distance,
                             'dense_rank',
                             f.dense_rank,
                             'dense_relevance',
                             c.dense,
                             'inverse_distance',
                             CAST(1.0 AS float8) / (CAST(1.0 AS float8) + f.distance)) AS details,
           TRUE AS evidence,
           CAST(NULL AS bigint[]) AS newer,
           CAST(NULL AS boolean[]) AS newer_near
    FROM doc_ranked AS f
         CROSS JOIN LATERAL (SELECT LEAST(CAST(1.0 AS float8),
                                          GREATEST(CAST(0.0 AS float8),
                                                   (CAST(%(dense_zero_squared)s AS float8) - f.distance * f.distance) / CAST(%(dense_span_squared)s AS float8))) AS dense,
                                    LEAST(CAST(1.0 AS float8),
                                          COALESCE(f.bm25 / NULLIF((SELECT sum(idf)
                                                                    FROM doc_idf),
                                                                   CAST(0.0 AS float8)),
                                                   0.0)) AS lexical,
                                    GREATEST(CAST(EXTRACT(EPOCH FROM CAST(%(as_of)s AS timestamptz) - f.created_at) AS float8),
                                             0.0) / CAST(%(documents_half_life)s AS float8) AS halvings) AS c
         INNER JOIN retrieval.documents AS d ON d.tenant_id = %(tenant_id)s
                                            AND d.id = f.document_id
    WHERE f.distance <= CAST(%(max_distance)s AS float8)
       OR f.coverage >= CAST(%(bm25_min_coverage)s AS float8)
  ),

-- source_presence: a row per source asked for: whether the tenant holds it, its size
--   binds: as_of, tenant_id, version_most_characters
source_presence AS (
    (SELECT CAST('episodic' AS text) AS source,
            CAST('presence' AS text) AS item,
            CAST(CAST(EXISTS (SELECT
                              FROM retrieval.decisions AS d
                              WHERE d.tenant_id = %(tenant_id)s)
                   OR EXISTS (SELECT
                              FROM retrieval.tool_calls AS t
                              WHERE t.tenant_id = %(tenant_id)s) AS integer) AS bigint) AS id,
            CAST('' AS text) AS content,
            CAST('presence' AS text) AS kind,
            CAST(%(as_of)s AS timestamptz) AS created_at,
            CAST(0.0 AS float8) AS relevance,
            CAST(0.0 AS float8) AS recency,
            CAST(0.0 AS float8) AS importance,
            CAST(0.0 AS float8) AS popularity,
            CAST(0.0 AS float8) AS entity,
            CAST(NULL AS float8) AS distance,
            CAST(NULL AS text[]) AS matched,
            CAST(NULL AS text[]) AS entities,
            CAST('{}' AS pg_catalog.json) AS details,
            TRUE AS evidence,
            CAST(NULL AS bigint[]) AS newer,
            CAST(NULL AS boolean[]) AS newer_near

     UNION ALL

     SELECT CAST('documents' AS text) AS source,
            CAST('presence' AS text) AS item,
            CAST(COALESCE((SELECT c.chunks
                           FROM retrieval.document_corpus AS c
                           WHERE c.tenant_id = %(tenant_id)s),
                          0) AS bigint) AS id,
            CAST('' AS text) AS content,
            CAST('presence' AS text) AS kind,
            CAST(%(as_of)s AS timestamptz) AS created_at,
            CAST(0.0 AS float8) AS relevance,
            CAST(0.0 AS float8) AS recency,
            CAST(0.0 AS float8) AS importance,
            CAST(0.0 AS float8) AS popularity,
            CAST(0.0 AS float8) AS entity,
            CAST(NULL AS float8) AS distance,
            CAST(NULL AS text[]) AS matched,
            CAST(NULL AS text[]) AS entities,
            CAST('{}' AS pg_catalog.json) AS details,
            TRUE AS evidence,
            CAST(NULL AS bigint[]) AS newer,
            CAST(NULL AS boolean[]) AS newer_near)

    UNION ALL

    SELECT CAST('facts' AS text) AS source,
           CAST('presence' AS text) AS item,
           CAST((SELECT count(*) - 1
                 FROM semantic AS s
                 WHERE NOT(s.kind = 'message'
                        OR (s.thread_id IS NOT NULL
                        AND s.position IS NOT NULL))
                   AND (octet_length(s.content) <= %(version_most_characters)s
                     OR (octet_length(s.content) <= 4 * %(version_most_characters)s
                     AND char_length(s.content) <= %(version_most_characters)s))) AS bigint) AS id,
           CAST('' AS text) AS content,
           CAST('presence' AS text) AS kind,
           CAST(%(as_of)s AS timestamptz) AS created_at,
           CAST(0.0 AS float8) AS relevance,
           CAST(0.0 AS float8) AS recency,
           CAST(0.0 AS float8) AS importance,
           CAST(0.0 AS float8) AS popularity,
           CAST(0.0 AS float8) AS entity,
           CAST(NULL AS float8) AS distance,
           CAST(NULL AS text[]) AS matched,
           CAST(NULL AS text[]) AS entities,
           CAST('{}' AS pg_catalog.json) AS details,
           TRUE AS evidence,
           CAST(NULL AS bigint[]) AS newer,
           CAST(NULL AS boolean[]) AS newer_near
  )

-- the candidates of every source
(((SELECT source,
          item,
          id,
          content,
          kind,
          created_at,
          relevance,
          recency,
          importance,
          popularity,
          entity,
          distance,
          matched,
          entities,
          CAST(details AS text) AS details,
          evidence,
          newer,
          newer_near
   FROM semantic_sent

   UNION ALL

   SELECT source,
          item,
          id,
          content,
          kind,
          created_at,
          relevance,
          recency,
          importance,
          popularity,
          entity,
          distance,
          matched,
          entities,
          CAST(details AS text) AS details,
          evidence,
          newer,
          newer_near
   FROM episodic_decisions)

  UNION ALL

  SELECT source,
         item,
         id,
         content,
         kind,
         created_at,
         relevance,
         recency,
         importance,
         popularity,
         entity,
         distance,
         matched,
         entities,
         CAST(details AS text) AS details,
         evidence,
         newer,
         newer_near
  FROM episodic_tool_calls)

 UNION ALL

 SELECT source,
        item,
        id,
        content,
        kind,
        created_at,
        relevance,
        recency,
        importance,
        popularity,
        entity,
        distance,
        matched,
        entities,
        CAST(details AS text) AS details,
        evidence,
        newer,
        newer_near
 FROM documents)

UNION ALL

SELECT source,
       item,
       id,
       content,
       kind,
       created_at,
       relevance,
       recency,
       importance,
       popularity,
       entity,
       distance,
       matched,
       entities,
       CAST(details AS text) AS details,
       evidence,
       newer,
       newer_near
FROM source_presence
