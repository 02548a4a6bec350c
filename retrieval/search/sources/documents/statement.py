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
from retrieval.search.plan.shape import StatementShape
from retrieval.search.statement import bm25
from retrieval.search.statement.bm25 import (
    Postings,
    bm25_contribution,
    bm25_ctes,
    bm25_factors,
)
from retrieval.search.statement.common import computed_once, halvings_sql, recency_sql
from retrieval.search.statement.cte import Cte, noted
from retrieval.search.statement.metadata import NOTES as METADATA_NOTES
from retrieval.search.statement.metadata import allowed_chunks
from retrieval.search.statement.relevance import (
    dense_relevance_sql,
    fused_relevance_sql,
    lexical_relevance_sql,
    lexical_share_sql,
)
from retrieval.search.statement.source import StatementSource
from retrieval.search.statement.template import template

SOURCE = "documents"
# What each CTE holds, printed above it in docs/statements/ (the BM25 channel's: bm25.NOTES).
NOTES = {
    **bm25.NOTES,
    **METADATA_NOTES,
    "doc_dense": "the tenant's chunks nearest the query's vector (the dense channel)",
    "doc_walk": "a filtered call's nearest chunks through the HNSW graph (kept if they fill it)",
    "doc_found": "the chunks either channel found",
    "doc_idf": "every query term's BM25 factors (a term no chunk holds included)",
    "doc_covered": "each found chunk's exact BM25 score and the idf it covers",
    "doc_evidence": "the found chunks with both channels' evidence and their columns",
    "doc_ranked": "the found chunks with their BM25 and dense ranks",
    "documents": "the chunks' candidates: fused relevance, recency and evidence",
}
__all__ = ["FUSIONS", "SOURCE", "STATEMENT", "document_postings", "documents_ctes"]


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


def documents_ctes(
    schema: str,
    gated: bool = False,
    capped: bool = False,
    filter_operators: tuple[str, ...] = (),
) -> list[Cte]:
    """The CTEs of the documents source, the last named ``documents``.

    Parameters: ``tenant_id``, ``query_text``, ``query_vector``, ``text_search_config``,
    ``documents_candidates``, ``bm25_k1``, ``bm25_b``, ``bm25_common_share``,
    ``documents_half_life``, ``as_of``, the relevance's
    (:mod:`retrieval.search.statement.relevance`),
    and with ``gated`` ``max_distance`` and ``bm25_min_coverage``; with ``filter_operators``
    the metadata filter's (:mod:`retrieval.search.statement.metadata`): both channels read only
    the chunks that meet it.

    ``gated``: a chunk is returned only with absolute evidence: its vector within the
    calibrated ``max_distance`` of the query's, or its lexemes covering at least
    ``bm25_min_coverage`` of the query's idf (a lexeme no chunk holds counts with the idf of a
    document frequency of 0), so that an exact code or name the vectors miss still counts
    (docs/decisions/0005-documents-evidence-gate.md).
    """
    postings = document_postings(schema)
    total_idf = "(SELECT sum(idf) FROM doc_idf)"
    # Each chunk's channels and age, computed once and read as c.dense, c.lexical, c.halvings.
    computed = computed_once(
        "c",
        {
            "dense": dense_relevance_sql("f.distance"),
            "lexical": lexical_relevance_sql("f.bm25", total_idf),
            "halvings": halvings_sql("f.created_at", "documents_half_life"),
        },
    )
    return noted(
        [
            *([allowed_chunks(schema, filter_operators)] if filter_operators else []),
            *_channels(schema, postings, capped, bool(filter_operators)),
            *_evidence(schema, total_idf),
            template("read_documents.doc_ranked"),
            template(
                "read_documents.documents",
                schema,
                relevance=fused_relevance_sql(
                    "c.lexical", "c.dense", "f.bm25_rank", "f.dense_rank"
                ),
                recency=recency_sql("c.halvings"),
                share=lexical_share_sql("c.lexical", "c.dense", "f.bm25_rank", "f.dense_rank"),
                computed=computed,
                gate=template("read_documents.gate") if gated else "",
            ),
        ],
        NOTES,
    )


def _statement_ctes(schema: str, shape: StatementShape) -> list[Cte]:
    query = shape.documents
    if query is None:
        return []
    return documents_ctes(
        schema, gated=query.gated, capped=query.capped, filter_operators=shape.filter
    )


# The documents source's part of the read statement; its presence row counts the tenant's
# chunks.
STATEMENT = StatementSource(
    SOURCE,
    _statement_ctes,
    lambda shape: [] if shape.documents is None else [SOURCE],
    presence="read_presence.documents",
)


def _channels(schema: str, postings: Postings, capped: bool, filtered: bool) -> list[str]:
    # Each channel's best chunks (BM25 pruned, and the nearest by vector), and their union;
    # when the call has a metadata filter, of the chunks that meet it (doc_allowed).
    posting = template("read_metadata.allowed", key="p.chunk_id") if filtered else ""
    chunk = " AND " + template("read_metadata.allowed", key="c.id") if filtered else ""
    return [
        *bm25_ctes("doc", postings, "query_text", "documents_candidates", posting, capped=capped),
        *_dense(schema, chunk, filtered),
        template("read_documents.doc_found"),
    ]


def _dense(schema: str, chunk: str, filtered: bool) -> list[str]:
    # The dense channel; with a metadata filter, the walk and the exact read when the walk did
    # not fill the candidates (docs/decisions/0065).
    if not filtered:
        return [template("read_documents.doc_dense", schema, cte="doc_dense", allowed="")]
    return [
        template("read_documents.doc_dense", schema, cte="doc_walk", allowed=chunk),
        template("read_documents.doc_dense_checked", schema, allowed=chunk),
    ]


def _evidence(schema: str, total_idf: str) -> list[str]:
    # Every found chunk's exact scores in both channels, with the columns the results show.
    return [
        template(
            "read_documents.doc_idf",
            schema,
            factors=bm25_factors("COALESCE(t.document_frequency, 0)", "c"),
        ),
        template(
            "read_documents.doc_covered",
            schema,
            contribution=bm25_contribution("i", "p.term_frequency", "p.chunk_length"),
        ),
        template("read_documents.doc_evidence", schema, total_idf=total_idf),
    ]
