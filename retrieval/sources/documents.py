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
from retrieval.sources.fusion import FUSIONS, Postings, bm25_ctes, channel_evidence, fusion_ctes

SOURCE = "documents"
__all__ = ["FUSIONS", "SOURCE", "documents_ctes"]


def documents_ctes(schema: str, gated: bool = False) -> list[str]:
    """The CTEs of the documents source, the last named ``documents``.

    Parameters: ``tenant_id``, ``query_text``, ``query_vector``, ``text_search_config``,
    ``documents_candidates``, ``bm25_k1``, ``bm25_b``, ``fusion``, ``rrf_k``, ``bm25_weight``,
    ``dense_weight``, ``cascade_threshold``, ``documents_half_life``, ``as_of``, and with
    ``gated`` ``max_distance`` and ``bm25_min_coverage``.

    ``gated``: the fused relevance is relative to the query (RRF divides by its maximum, the
    others min-max normalize), so the best chunks of an unrelated question would score high.
    A chunk is returned only with absolute evidence: its vector within the calibrated
    ``max_distance`` of the query's, or its lexemes covering at least ``bm25_min_coverage``
    of the query's idf (a lexeme no chunk holds counts with the idf of a document frequency
    of 0), so that an exact code or name the vectors miss still counts.
    """
    s = f'"{schema}"'
    postings = Postings(
        terms=f"{s}.document_terms",
        stats=f"{s}.document_term_stats",
        corpus=f"{s}.document_corpus",
        key="chunk_id",
        length="chunk_length",
        count="chunks",
    )
    return [
        *bm25_ctes("doc", postings, "query_text", "documents_candidates"),
        f"""doc_dense AS MATERIALIZED (
    SELECT c.id AS chunk_id, c.embedding <-> %(query_vector)s::vector AS distance
    FROM {s}.document_chunks AS c
    WHERE c.tenant_id = %(tenant_id)s
    ORDER BY distance
    LIMIT %(documents_candidates)s
)""",
        *fusion_ctes("doc", "chunk_id"),
        f"""doc_idf AS MATERIALIZED (
    SELECT q.term, ln(1.0 + (c.n - COALESCE(t.document_frequency, 0) + 0.5)
                          / (COALESCE(t.document_frequency, 0) + 0.5)) AS idf
    FROM doc_terms AS q
    CROSS JOIN doc_corpus AS c
    LEFT JOIN {s}.document_term_stats AS t ON t.tenant_id = %(tenant_id)s AND t.term = q.term
)""",
        # Each query term's postings probed for the fused chunks at once (one index scan per
        # term): the idf the chunk's lexemes cover.
        f"""doc_covered AS (
    SELECT p.chunk_id, sum(i.idf) AS covered
    FROM doc_idf AS i
    JOIN {s}.document_terms AS p
      ON p.tenant_id = %(tenant_id)s AND p.term = i.term
         AND p.chunk_id = ANY (ARRAY(SELECT chunk_id FROM doc_fused))
    GROUP BY p.chunk_id
)""",
        # The fused chunks with their evidence and the columns the results show (one read of
        # each chunk's row).
        f"""doc_evidence AS MATERIALIZED (
    SELECT f.*, COALESCE(f.distance, c.embedding <-> %(query_vector)s::vector) AS nearness,
           COALESCE(v.covered, 0.0) / NULLIF((SELECT sum(idf) FROM doc_idf), 0.0) AS coverage,
           c.content, c.created_at, c.document_id, c.chunk_index, c.section_title,
           c.page_start, c.page_end
    FROM doc_fused AS f
    JOIN {s}.document_chunks AS c ON c.tenant_id = %(tenant_id)s AND c.id = f.chunk_id
    LEFT JOIN doc_covered AS v ON v.chunk_id = f.chunk_id
)""",
        f"""documents AS (
    SELECT 'documents'::text AS source, 'chunk'::text AS item, f.chunk_id AS id, f.content,
           'chunk'::text AS kind, f.created_at, f.relevance,
           {recency_sql("f.created_at", "documents_half_life")} AS recency,
           0.0::float8 AS importance, 0.0::float8 AS popularity, 0.0::float8 AS entity,
           f.nearness AS distance, NULL::text[] AS matched, NULL::text[] AS entities,
           jsonb_build_object(
               'doc_id', d.doc_id, 'filename', d.filename, 'chunk_index', f.chunk_index,
               'section_title', f.section_title, 'page_start', f.page_start,
               'page_end', f.page_end, 'coverage', f.coverage,
               'bm25_tier', (SELECT tier FROM doc_tier), {channel_evidence("f")}
           ) AS details
    FROM doc_evidence AS f
    JOIN {s}.documents AS d ON d.tenant_id = %(tenant_id)s AND d.id = f.document_id
    {_GATE if gated else ""}
)""",
    ]


_GATE = """WHERE f.nearness <= %(max_distance)s::float8
       OR f.coverage >= %(bm25_min_coverage)s::float8"""
