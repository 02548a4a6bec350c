"""The documents source: chunks found by BM25 and by vector, scored absolutely in SQL.

Two channels, each the tenant's best ``documents_candidates`` chunks:

* BM25 (Okapi, exact, from the write path's postings and statistics; see
  :mod:`retrieval.search.statement.bm25` and :mod:`retrieval.documents`);
* dense: L2 distance on the chunks' HNSW index.

Every chunk either channel found gets both exact channel scores (its distance, and its BM25
score from the postings of the query's terms), each made absolute
(:mod:`retrieval.search.statement.relevance`: the model's calibrated relevance of the distance,
and BM25
over the query's summed idf), then fused by ``fusion``. Recency is ``0.5 ^ (age / half_life)``
of the chunk. The metadata carries both channels' raw scores and ranks.
"""

from __future__ import annotations

from retrieval.db.queries import quote_schema
from retrieval.search.config import FUSIONS
from retrieval.search.statement import bm25
from retrieval.search.statement.bm25 import (
    Postings,
    bm25_contribution,
    bm25_ctes,
    bm25_factors,
)
from retrieval.search.statement.common import recency_sql
from retrieval.search.statement.cte import Cte, noted
from retrieval.search.statement.relevance import (
    dense_relevance_sql,
    fused_relevance_sql,
    lexical_relevance_sql,
    lexical_share_sql,
)

SOURCE = "documents"
# What each CTE holds, printed above it in docs/statements/ (the BM25 channel's: bm25.NOTES).
NOTES = {
    **bm25.NOTES,
    "doc_dense": "the tenant's chunks nearest the query's vector (the dense channel)",
    "doc_found": "the chunks either channel found",
    "doc_idf": "every query term's BM25 factors (a term no chunk holds included)",
    "doc_covered": "each found chunk's exact BM25 score and the idf it covers",
    "doc_evidence": "the found chunks with both channels' evidence and their columns",
    "doc_ranked": "the found chunks with their BM25 and dense ranks",
    "documents": "the chunks' candidates: fused relevance, recency and evidence",
}
__all__ = ["FUSIONS", "SOURCE", "document_postings", "documents_ctes"]


def document_postings(schema: str) -> Postings:
    """Where the document chunks' BM25 postings and statistics live in ``schema``."""
    s = quote_schema(schema)
    return Postings(
        terms=f"{s}.document_terms",
        stats=f"{s}.document_term_stats",
        corpus=f"{s}.document_corpus",
        key="chunk_id",
        length="chunk_length",
        count="chunks",
    )


def documents_ctes(schema: str, gated: bool = False, capped: bool = False) -> list[Cte]:
    """The CTEs of the documents source, the last named ``documents``.

    Parameters: ``tenant_id``, ``query_text``, ``query_vector``, ``text_search_config``,
    ``documents_candidates``, ``bm25_k1``, ``bm25_b``, ``bm25_common_share``,
    ``documents_half_life``, ``as_of``, the relevance's
    (:mod:`retrieval.search.statement.relevance`),
    and with ``gated`` ``max_distance`` and ``bm25_min_coverage``.

    ``gated``: a chunk is returned only with absolute evidence: its vector within the
    calibrated ``max_distance`` of the query's, or its lexemes covering at least
    ``bm25_min_coverage`` of the query's idf (a lexeme no chunk holds counts with the idf of a
    document frequency of 0), so that an exact code or name the vectors miss still counts
    (docs/decisions/0005-documents-evidence-gate.md).
    """
    s = quote_schema(schema)
    postings = document_postings(schema)
    total_idf = "(SELECT sum(idf) FROM doc_idf)"
    dense = dense_relevance_sql("f.distance")
    lexical = lexical_relevance_sql("f.bm25", total_idf)
    share = lexical_share_sql(lexical, dense, "f.bm25_rank", "f.dense_rank")
    return noted(
        [
            *_channels(s, postings, capped),
            *_evidence(s, total_idf),
            """doc_ranked AS (
    SELECT e.*,
           CASE WHEN e.bm25 > 0.0 THEN
               row_number() OVER (ORDER BY e.bm25 DESC, e.chunk_id) END AS bm25_rank,
           row_number() OVER (ORDER BY e.distance, e.chunk_id) AS dense_rank
    FROM doc_evidence AS e
)""",
            f"""documents AS (
    SELECT 'documents'::text AS source, 'chunk'::text AS item, f.chunk_id AS id, f.content,
           'chunk'::text AS kind, f.created_at,
           {fused_relevance_sql(lexical, dense, "f.bm25_rank", "f.dense_rank")} AS relevance,
           {recency_sql("f.created_at", "documents_half_life")} AS recency,
           0.0::float8 AS importance, 0.0::float8 AS popularity, 0.0::float8 AS entity,
           f.distance, NULL::text[] AS matched, NULL::text[] AS entities,
           json_build_object(
               'doc_id', d.doc_id, 'filename', d.filename, 'chunk_index', f.chunk_index,
               'section_title', f.section_title, 'page_start', f.page_start,
               'page_end', f.page_end, 'metadata', d.metadata || f.metadata,
               'coverage', f.coverage, 'bm25_tier', (SELECT tier FROM doc_tier),
               'fusion', %(fusion)s::text, 'bm25', f.bm25, 'bm25_rank', f.bm25_rank,
               'bm25_relevance', {lexical}, 'lexical_share', {share},
               'dense_distance', f.distance,
               'dense_rank', f.dense_rank, 'dense_relevance', {dense},
               'inverse_distance', 1.0::float8 / (1.0::float8 + f.distance)
           ) AS details
    FROM doc_ranked AS f
    JOIN {s}.documents AS d ON d.tenant_id = %(tenant_id)s AND d.id = f.document_id
    {_GATE if gated else ""}
)""",
        ],
        NOTES,
    )


def _channels(s: str, postings: Postings, capped: bool) -> list[str]:
    # Each channel's best chunks (BM25 pruned, and the nearest by vector), and their union.
    return [
        *bm25_ctes("doc", postings, "query_text", "documents_candidates", capped=capped),
        f"""doc_dense AS MATERIALIZED (
    SELECT c.id AS chunk_id, c.embedding <-> %(query_vector)s::vector AS distance
    FROM {s}.document_chunks AS c
    WHERE c.tenant_id = %(tenant_id)s
    ORDER BY distance
    LIMIT %(documents_candidates)s
)""",
        """doc_found AS MATERIALIZED (
    SELECT chunk_id FROM doc_bm25 UNION SELECT chunk_id FROM doc_dense
)""",
    ]


def _evidence(s: str, total_idf: str) -> list[str]:
    # Every found chunk's exact scores in both channels, with the columns the results show.
    return [
        f"""doc_idf AS MATERIALIZED (
    SELECT q.term, {bm25_factors("COALESCE(t.document_frequency, 0)", "c")}
    FROM doc_terms AS q
    CROSS JOIN doc_corpus AS c
    LEFT JOIN {s}.document_term_stats AS t ON t.tenant_id = %(tenant_id)s AND t.term = q.term
)""",
        # Each query term's postings probed for the found chunks at once (one index scan per
        # term): each chunk's exact BM25 score and the idf its lexemes cover.
        f"""doc_covered AS (
    SELECT p.chunk_id, sum(i.idf) AS covered,
           sum({bm25_contribution("i", "p.term_frequency", "p.chunk_length")}) AS bm25
    FROM doc_idf AS i
    JOIN {s}.document_terms AS p
      ON p.tenant_id = %(tenant_id)s AND p.term = i.term
         AND p.chunk_id = ANY (ARRAY(SELECT chunk_id FROM doc_found))
    GROUP BY p.chunk_id
)""",
        # The found chunks with their evidence and the columns the results show (one read of
        # each chunk's row).
        f"""doc_evidence AS MATERIALIZED (
    SELECT u.chunk_id, COALESCE(d.distance, c.embedding <-> %(query_vector)s::vector)
               AS distance,
           COALESCE(v.bm25, 0.0) AS bm25,
           COALESCE(v.covered, 0.0) / NULLIF({total_idf}, 0.0) AS coverage,
           c.content, c.created_at, c.document_id, c.chunk_index, c.section_title,
           c.page_start, c.page_end, c.metadata
    FROM doc_found AS u
    JOIN {s}.document_chunks AS c ON c.tenant_id = %(tenant_id)s AND c.id = u.chunk_id
    LEFT JOIN doc_dense AS d ON d.chunk_id = u.chunk_id
    LEFT JOIN doc_covered AS v ON v.chunk_id = u.chunk_id
)""",
    ]


_GATE = """WHERE f.distance <= %(max_distance)s::float8
       OR f.coverage >= %(bm25_min_coverage)s::float8"""
