"""Plain-Python references for the SQL of the BM25 channels, shared by the integration tests.

``lexemes`` asks PostgreSQL for the terms of a text (the same analysis the write path uses);
``bm25_reference`` scores rows with ``scoring.bm25_scores`` on those terms; ``term_statistics``
reads the document frequencies the write path keeps beside a recount from the postings;
``exact_distances`` ranks rows by their stored vectors; ``fused`` fuses two channels with
``scoring.py``, as the SQL should.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine, text

from retrieval import scoring

Ranking = Sequence[tuple[int, float]]  # (row id, score or distance), best first


def lexemes(engine: Engine, body: str) -> list[str]:
    """The terms PostgreSQL makes of ``body``, each repeated by its frequency."""
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT lexeme, cardinality(positions) FROM unnest(to_tsvector('english', :t))"),
            {"t": body},
        ).all()
    return [lexeme for lexeme, count in rows for _ in range(count)]


def bm25_reference(
    engine: Engine, table: str, tenant: str, query: str, *, corpus_of_lexical_rows: bool = False
) -> dict[int, float]:
    """BM25 of ``query`` for every row of ``retrieval.<table>`` of ``tenant`` with a score.

    ``corpus_of_lexical_rows``: the corpus is the rows holding at least one lexeme (memories);
    otherwise every row counts (document chunks).
    """
    with engine.connect() as connection:
        rows = connection.execute(
            text(f"SELECT id, content FROM retrieval.{table} WHERE tenant_id = :t ORDER BY id"),
            {"t": tenant},
        ).all()
    corpus = [(int(row_id), lexemes(engine, content)) for row_id, content in rows]
    if corpus_of_lexical_rows:
        corpus = [(row_id, terms) for row_id, terms in corpus if terms]
    scores = scoring.bm25_scores(
        list(dict.fromkeys(lexemes(engine, query))), [terms for _, terms in corpus]
    )
    return {row_id: score for (row_id, _), score in zip(corpus, scores, strict=True) if score}


def term_statistics(
    engine: Engine, prefix: str, tenant: str
) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(document frequencies kept in ``<prefix>_term_stats``, the same recounted from
    ``<prefix>_terms``) of ``tenant``."""
    with engine.connect() as connection:
        kept = connection.execute(
            text(
                f"SELECT term, document_frequency FROM retrieval.{prefix}_term_stats "
                "WHERE tenant_id = :t ORDER BY term"
            ),
            {"t": tenant},
        ).all()
        recount = connection.execute(
            text(
                f"SELECT term, count(*) FROM retrieval.{prefix}_terms WHERE tenant_id = :t "
                "GROUP BY term ORDER BY term"
            ),
            {"t": tenant},
        ).all()
    return [(str(t), int(n)) for t, n in kept], [(str(t), int(n)) for t, n in recount]


def exact_distances(
    engine: Engine, table: str, tenant: str, vector: npt.NDArray[np.float32]
) -> list[tuple[int, float]]:
    """``(id, L2 distance)`` of every row of ``retrieval.<table>`` of ``tenant``, nearest first."""
    with engine.connect() as connection:
        rows = connection.exec_driver_sql(
            f"SELECT id, embedding FROM retrieval.{table} WHERE tenant_id = %(t)s", {"t": tenant}
        ).all()
    return sorted(
        ((int(r.id), float(np.linalg.norm(r.embedding.to_numpy() - vector))) for r in rows),
        key=lambda item: (item[1], item[0]),
    )


def fused(bm25: Ranking, dense: Ranking, fusion: str) -> dict[int, float]:
    """The fused relevance of every row of the two channels (BM25 scores, L2 distances), by
    ``fusion`` with equal channel weights, RRF k = 60 and the cascade threshold 0.7."""
    bm25_norm = dict(zip([i for i, _ in bm25], scoring.min_max([s for _, s in bm25]), strict=True))
    similarity = [scoring.distance_relevance(d) for _, d in dense]
    dense_norm = dict(zip([i for i, _ in dense], scoring.min_max(similarity), strict=True))
    bm25_rank = {row: rank for rank, (row, _) in enumerate(bm25, start=1)}
    dense_rank = {row: rank for rank, (row, _) in enumerate(dense, start=1)}
    result = {}
    for row in set(bm25_norm) | set(dense_norm):
        lexical, semantic = bm25_norm.get(row, 0.0), dense_norm.get(row, 0.0)
        if fusion == "rrf":
            result[row] = scoring.reciprocal_rank_fusion(
                {"bm25": bm25_rank.get(row), "dense": dense_rank.get(row)},
                weights={"bm25": 0.5, "dense": 0.5},
            )
        elif fusion == "convex":
            result[row] = scoring.weighted_sum(
                {"bm25": lexical, "dense": semantic}, {"bm25": 0.5, "dense": 0.5}
            )
        elif fusion == "max":
            result[row] = scoring.fuse_max([lexical, semantic])
        else:
            result[row] = scoring.cascade([(lexical, 0.7)], semantic)
    return result
