-- The documents source (retrieval.search.statement.documents): chunks found by BM25 over their
-- postings (read_bm25, prefix doc) and by meaning, fused, behind the evidence gate.

-- name: doc_dense
-- The tenant's chunks nearest the query's vector (the dense channel, {cte}), those that meet
-- the call's metadata filter when it has one: then the walk (doc_walk) that
-- `doc_dense_checked` keeps or reads again.
{cte} AS MATERIALIZED (
    SELECT c.id AS chunk_id, c.embedding <-> %(query_vector)s::vector AS distance
    FROM {schema}.document_chunks AS c
    WHERE c.tenant_id = %(tenant_id)s{allowed}
    ORDER BY distance
    LIMIT %(documents_candidates)s
)

-- name: doc_dense_checked
-- The dense channel of a call with a metadata filter: the walk's chunks when they fill its
-- candidates; else the chunks that meet the filter read exactly, each distance computed once
-- and sorted by the distance plus 0, an order no index gives (the walk stopped short, or the
-- filter keeps fewer chunks than that: docs/decisions/0065). Each branch runs or not by the
-- count of the walk's chunks (a one-time filter).
doc_dense AS MATERIALIZED (
    SELECT w.chunk_id, w.distance
    FROM doc_walk AS w
    WHERE (SELECT count(*) FROM doc_walk) >= %(documents_candidates)s
    UNION ALL
    (SELECT x.chunk_id, x.distance
     FROM (
         SELECT c.id AS chunk_id, c.embedding <-> %(query_vector)s::vector AS distance
         FROM {schema}.document_chunks AS c
         WHERE c.tenant_id = %(tenant_id)s{allowed}
         OFFSET 0
     ) AS x
     WHERE (SELECT count(*) FROM doc_walk) < %(documents_candidates)s
     ORDER BY x.distance + 0.0
     LIMIT %(documents_candidates)s)
)

-- name: doc_found
-- The chunks either channel found.
doc_found AS MATERIALIZED (
    SELECT chunk_id FROM doc_bm25 UNION SELECT chunk_id FROM doc_dense
)

-- name: doc_idf
-- Every query term's BM25 factors {factors} (a term no chunk holds included).
doc_idf AS MATERIALIZED (
    SELECT q.term, {factors}
    FROM doc_terms AS q
    CROSS JOIN doc_corpus AS c
    LEFT JOIN {schema}.document_term_stats AS t ON t.tenant_id = %(tenant_id)s AND t.term = q.term
)

-- name: doc_covered
-- Each query term's postings probed for the found chunks at once (one index scan per term):
-- each chunk's exact BM25 score ({contribution}) and the idf its lexemes cover.
doc_covered AS (
    SELECT p.chunk_id, sum(i.idf) AS covered,
           sum({contribution}) AS bm25
    FROM doc_idf AS i
    JOIN {schema}.document_terms AS p
      ON p.tenant_id = %(tenant_id)s AND p.term = i.term
         AND p.chunk_id = ANY (ARRAY(SELECT chunk_id FROM doc_found))
    GROUP BY p.chunk_id
)

-- name: doc_evidence
-- The found chunks with their evidence and the columns the results show (one read of each
-- chunk's row); {total_idf} the query's summed idf.
doc_evidence AS MATERIALIZED (
    SELECT u.chunk_id, COALESCE(d.distance, c.embedding <-> %(query_vector)s::vector)
               AS distance,
           COALESCE(v.bm25, 0.0) AS bm25,
           COALESCE(v.covered, 0.0) / NULLIF({total_idf}, 0.0) AS coverage,
           c.content, c.created_at, c.document_id, c.chunk_index, c.section_title,
           c.page_start, c.page_end, c.metadata
    FROM doc_found AS u
    JOIN {schema}.document_chunks AS c ON c.tenant_id = %(tenant_id)s AND c.id = u.chunk_id
    LEFT JOIN doc_dense AS d ON d.chunk_id = u.chunk_id
    LEFT JOIN doc_covered AS v ON v.chunk_id = u.chunk_id
)

-- name: doc_ranked
-- The found chunks with their BM25 and dense ranks.
doc_ranked AS (
    SELECT e.*,
           CASE WHEN e.bm25 > 0.0 THEN
               row_number() OVER (ORDER BY e.bm25 DESC, e.chunk_id) END AS bm25_rank,
           row_number() OVER (ORDER BY e.distance, e.chunk_id) AS dense_rank
    FROM doc_evidence AS e
)

-- name: gate
-- The evidence gate: near enough by meaning, or covering enough of the query's idf.
WHERE f.distance <= %(max_distance)s::float8
       OR f.coverage >= %(bm25_min_coverage)s::float8

-- name: documents
-- The chunks' candidates: fused relevance {relevance}, recency and evidence ({share} the
-- lexical channel's share), behind {gate}; each channel's relevance and the chunk's age
-- ({computed}) computed once and read by name.
documents AS (
    SELECT 'documents'::text AS source, 'chunk'::text AS item, f.chunk_id AS id, f.content,
           'chunk'::text AS kind, f.created_at,
           {relevance} AS relevance,
           {recency} AS recency,
           0.0::float8 AS importance, 0.0::float8 AS popularity, 0.0::float8 AS entity,
           f.distance, NULL::text[] AS matched, NULL::text[] AS entities,
           json_build_object(
               'doc_id', d.doc_id, 'filename', d.filename, 'chunk_index', f.chunk_index,
               'section_title', f.section_title, 'page_start', f.page_start,
               'page_end', f.page_end, 'metadata', d.metadata || f.metadata,
               'coverage', f.coverage, 'bm25_tier', (SELECT tier FROM doc_tier),
               'fusion', %(fusion)s::text, 'bm25', f.bm25, 'bm25_rank', f.bm25_rank,
               'bm25_relevance', c.lexical, 'lexical_share', {share},
               'dense_distance', f.distance,
               'dense_rank', f.dense_rank, 'dense_relevance', c.dense,
               'inverse_distance', 1.0::float8 / (1.0::float8 + f.distance)
           ) AS details, TRUE AS evidence, NULL::bigint[] AS newer, NULL::boolean[] AS newer_near
    FROM doc_ranked AS f
    {computed}
    JOIN {schema}.documents AS d ON d.tenant_id = %(tenant_id)s AND d.id = f.document_id
    {gate}
)
