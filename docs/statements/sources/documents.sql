-- documents: the documents source's CTEs
-- Binds: as_of, bm25_b, bm25_common_share, bm25_k1, bm25_min_coverage, bm25_weight,
--        cascade_threshold, dense_span_squared, dense_weight, dense_zero_squared,
--        documents_candidates, documents_half_life, fusion, max_distance, query_text,
--        query_vector, rrf_k, tenant_id, text_search_config

-- doc_terms: the query's lexemes (the rarest first, when the query is capped)
--   binds: query_text, text_search_config
doc_terms AS (
    SELECT DISTINCT lexeme AS term
    FROM unnest(to_tsvector(CAST(%(text_search_config)s AS regconfig),
                            %(query_text)s))
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
  )
