"""Absolute relevance in SQL: each channel in [0, 1] with the same meaning for every query.

A source's relevance must mean the same thing whatever the query and whichever source it
comes from, so that the weights mean what they say and a threshold keeps its meaning. Fused
scores that are relative to the query (min-max over the candidates, or ranks divided by the
best) cannot: the best chunk of an unrelated question would score near 1. So each channel is
absolute (:mod:`retrieval.search.scoring` holds the same formulas in Python):

* dense: the embedding model's calibrated relevance of the L2 distance ``d``
  (:mod:`retrieval.embedding.calibration`): ``clamp((u^2 - d^2) / (u^2 - p^2), 0, 1)``;
* lexical: the Okapi BM25 score divided by the sum of the query terms' idf (terms no row holds
  included), capped at 1. A row of average length that holds every query term once scores
  exactly 1 (each term then adds ``idf * (k1 + 1) / (1 + k1) = idf``); one holding half of the
  query's idf about 0.5. ``coverage``, the share of the query's idf whose terms the row holds,
  is the lexical evidence gate.

Fusions (the ``fusion`` parameter): ``convex`` (``w * lexical + (1 - w) * dense``, ``w`` the
``bm25_weight``), ``max``, ``cascade`` (lexical when it reaches ``cascade_threshold``, else
dense) are absolute; ``rrf`` (reciprocal rank fusion divided by its best possible value) is
rank-based, so relative to the query: it is kept for comparison, behind the same gate.

Parameters: ``dense_zero_squared``, ``dense_span_squared``, ``fusion``, ``bm25_weight``,
``dense_weight``, ``cascade_threshold``, ``rrf_k``.
"""

from __future__ import annotations

from retrieval.search.statement.template import template


def dense_relevance_sql(distance: str) -> str:
    """The calibrated relevance of the L2 distance ``distance`` (an SQL expression)."""
    return template("read_relevance.dense", distance=distance)


def lexical_relevance_sql(bm25: str, total_idf: str) -> str:
    """BM25 ``bm25`` over the query's summed idf ``total_idf``, in [0, 1] (0 without terms)."""
    return template("read_relevance.lexical", bm25=bm25, total_idf=total_idf)


def fused_relevance_sql(lexical: str, dense: str, bm25_rank: str, dense_rank: str) -> str:
    """The channels fused by the ``fusion`` parameter; a missing rank adds nothing to ``rrf``."""
    lexical_rrf, dense_rrf = _rrf_terms(bm25_rank, dense_rank)
    return template(
        "read_relevance.fused",
        lexical=lexical,
        dense=dense,
        lexical_rrf=lexical_rrf,
        dense_rrf=dense_rrf,
    )


def lexical_share_sql(lexical: str, dense: str, bm25_rank: str, dense_rank: str) -> str:
    """The share of :func:`fused_relevance_sql`'s relevance that the lexical channel gave, in
    [0, 1]: its term of the convex sum or of rank fusion over both terms; 1 where ``max`` or
    ``cascade`` took the lexical channel, 0 where they took the dense one (a tie of ``max``:
    half each)."""
    lexical_rrf, dense_rrf = _rrf_terms(bm25_rank, dense_rank)
    return template(
        "read_relevance.lexical_share",
        lexical=lexical,
        dense=dense,
        lexical_rrf=lexical_rrf,
        dense_rrf=dense_rrf,
    )


def _rrf_terms(bm25_rank: str, dense_rank: str) -> tuple[str, str]:
    # Each channel's term of reciprocal rank fusion (0 without a rank).
    return (
        template("read_relevance.rrf_term", weight="bm25_weight", rank=bm25_rank),
        template("read_relevance.rrf_term", weight="dense_weight", rank=dense_rank),
    )
