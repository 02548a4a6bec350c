"""The documents source: chunks found by BM25 and by vector, fused into one relevance in SQL.

Two channels, each the tenant's best ``documents_candidates`` chunks:

* BM25 (Okapi, from the write path's statistics; see :mod:`retrieval.documents`), ranked;
* dense: L2 distance on the chunks' HNSW index, similarity ``1 / (1 + d)``, ranked.

Each channel's scores are min-max normalized over its candidates (a chunk a channel did not
find scores 0 there), then fused by the strategy of the ``fusion`` parameter:

* ``rrf``: ``sum(w_c / (k + rank_c)) / sum(w_c / (k + 1))``
  (:func:`~retrieval.scoring.reciprocal_rank_fusion`);
* ``convex``: ``w_bm25 * bm25 + w_dense * dense`` of the normalized scores;
* ``max``: the larger normalized score;
* ``cascade``: the normalized BM25 score when it reaches ``cascade_threshold``, else the dense one.

Recency is ``0.5 ^ (age / half_life)`` of the chunk. The metadata carries both channels' raw
scores and ranks.
"""

from __future__ import annotations

from retrieval.sources.common import recency_sql

SOURCE = "documents"
FUSIONS = ("rrf", "convex", "max", "cascade")


def documents_ctes(schema: str) -> list[str]:
    """The CTEs of the documents source, the last named ``documents``.

    Parameters: ``tenant_id``, ``query_text``, ``query_vector``, ``text_search_config``,
    ``documents_candidates``, ``bm25_k1``, ``bm25_b``, ``fusion``, ``rrf_k``, ``bm25_weight``,
    ``dense_weight``, ``cascade_threshold``, ``documents_half_life``, ``as_of``.
    """
    s = f'"{schema}"'
    return [
        """doc_terms AS (
    SELECT DISTINCT lexeme AS term
    FROM unnest(to_tsvector(CAST(%(text_search_config)s AS regconfig), %(query_text)s))
)""",
        f"""doc_corpus AS (
    SELECT chunks::float8 AS n, total_terms::float8 / NULLIF(chunks, 0) AS average_length
    FROM {s}.document_corpus WHERE tenant_id = %(tenant_id)s
)""",
        # Each query term's factors once (idf, and the length normalization's constants), so
        # that a posting costs one multiply-add: BM25 = idf * tf * (k1 + 1)
        # / (tf + k1 * (1 - b) + k1 * b * length / average_length).
        f"""doc_weights AS MATERIALIZED (
    SELECT q.term,
           ln(1.0 + (c.n - t.document_frequency + 0.5) / (t.document_frequency + 0.5))
               * (%(bm25_k1)s::float8 + 1.0) AS idf_k1,
           %(bm25_k1)s::float8 * (1.0 - %(bm25_b)s::float8) AS base,
           %(bm25_k1)s::float8 * %(bm25_b)s::float8 / c.average_length AS per_length
    FROM doc_terms AS q
    JOIN {s}.document_term_stats AS t ON t.tenant_id = %(tenant_id)s AND t.term = q.term
    CROSS JOIN doc_corpus AS c
)""",
        f"""doc_bm25 AS (
    SELECT p.chunk_id,
           sum(w.idf_k1 * p.term_frequency
               / (p.term_frequency + w.base + w.per_length * p.chunk_length)) AS bm25
    FROM doc_weights AS w
    JOIN {s}.document_terms AS p ON p.tenant_id = %(tenant_id)s AND p.term = w.term
    GROUP BY p.chunk_id
    ORDER BY bm25 DESC, p.chunk_id
    LIMIT %(documents_candidates)s
)""",
        f"""doc_dense AS MATERIALIZED (
    SELECT c.id AS chunk_id, c.embedding <-> %(query_vector)s::vector AS distance
    FROM {s}.document_chunks AS c
    WHERE c.tenant_id = %(tenant_id)s
    ORDER BY distance
    LIMIT %(documents_candidates)s
)""",
        """doc_channels AS (
    SELECT COALESCE(b.chunk_id, d.chunk_id) AS chunk_id, b.bm25, b.bm25_rank, b.bm25_norm,
           d.distance, d.dense_rank, d.dense_norm
    FROM (
        SELECT chunk_id, bm25, row_number() OVER (ORDER BY bm25 DESC, chunk_id) AS bm25_rank,
               CASE WHEN max(bm25) OVER () = min(bm25) OVER () THEN 1.0::float8
                    ELSE (bm25 - min(bm25) OVER ()) / (max(bm25) OVER () - min(bm25) OVER ())
               END AS bm25_norm
        FROM doc_bm25
    ) AS b
    FULL JOIN (
        SELECT chunk_id, distance,
               row_number() OVER (ORDER BY distance, chunk_id) AS dense_rank,
               CASE WHEN max(distance) OVER () = min(distance) OVER () THEN 1.0::float8
                    ELSE (1.0 / (1.0 + distance) - 1.0 / (1.0 + max(distance) OVER ()))
                         / (1.0 / (1.0 + min(distance) OVER ())
                            - 1.0 / (1.0 + max(distance) OVER ()))
               END AS dense_norm
        FROM doc_dense
    ) AS d ON d.chunk_id = b.chunk_id
)""",
        """doc_fused AS (
    SELECT x.*,
           CASE %(fusion)s
               WHEN 'rrf' THEN LEAST(1.0::float8,
                   (COALESCE(%(bm25_weight)s::float8 / (%(rrf_k)s + x.bm25_rank), 0.0)
                    + COALESCE(%(dense_weight)s::float8 / (%(rrf_k)s + x.dense_rank), 0.0))
                   / ((%(bm25_weight)s::float8 + %(dense_weight)s::float8) / (%(rrf_k)s + 1)))
               WHEN 'convex' THEN LEAST(1.0::float8,
                   %(bm25_weight)s::float8 * COALESCE(x.bm25_norm, 0.0)
                   + %(dense_weight)s::float8 * COALESCE(x.dense_norm, 0.0))
               WHEN 'max' THEN GREATEST(COALESCE(x.bm25_norm, 0.0), COALESCE(x.dense_norm, 0.0))
               WHEN 'cascade' THEN CASE
                   WHEN COALESCE(x.bm25_norm, 0.0) >= %(cascade_threshold)s::float8
                   THEN x.bm25_norm ELSE COALESCE(x.dense_norm, 0.0) END
           END AS relevance
    FROM doc_channels AS x
)""",
        f"""documents AS (
    SELECT 'documents'::text AS source, 'chunk'::text AS item, c.id, c.content,
           'chunk'::text AS kind, c.created_at, f.relevance,
           {recency_sql("c.created_at", "documents_half_life")} AS recency,
           0.0::float8 AS importance, 0.0::float8 AS popularity, 0.0::float8 AS entity,
           f.distance, NULL::text[] AS matched, NULL::text[] AS entities,
           jsonb_build_object(
               'doc_id', d.doc_id, 'filename', d.filename, 'chunk_index', c.chunk_index,
               'section_title', c.section_title, 'page_start', c.page_start,
               'page_end', c.page_end, 'fusion', %(fusion)s::text,
               'bm25', f.bm25, 'bm25_rank', f.bm25_rank, 'bm25_normalized', f.bm25_norm,
               'dense_distance', f.distance, 'dense_rank', f.dense_rank,
               'dense_normalized', f.dense_norm
           ) AS details
    FROM doc_fused AS f
    JOIN {s}.document_chunks AS c ON c.tenant_id = %(tenant_id)s AND c.id = f.chunk_id
    JOIN {s}.documents AS d ON d.tenant_id = %(tenant_id)s AND d.id = c.document_id
)""",
    ]
