"""Plain-Python references for the SQL of the BM25 channels, shared by the integration tests.

``lexemes`` asks PostgreSQL for the terms of a text (the same analysis the write path uses);
``bm25_reference`` scores rows with ``reference_scores.bm25_scores`` on those terms;
``term_statistics`` reads the document frequencies the write path keeps beside a recount from
the postings; ``exact_distances`` ranks rows by their stored vectors; ``fused`` fuses the two
absolute channels with ``reference_scores``, as the SQL should.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
from pgvector import HalfVector
from sqlalchemy import Engine, text

from retrieval.embedding.calibration import DenseCalibration
from retrieval.search import reference_scores

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
    engine: Engine, table: str, tenant: str, query: str, *, memories: bool = False
) -> dict[int, float]:
    """BM25 of ``query`` for every row of ``retrieval.<table>`` of ``tenant`` with a score.

    ``memories``: the corpus is the rows holding at least one lexeme, and a row's length is its
    number of distinct lexemes (memories); otherwise every row counts, with all its lexemes
    (document chunks).
    """
    corpus = _corpus(engine, table, tenant, memories=memories)
    scores = reference_scores.bm25_scores(
        list(dict.fromkeys(lexemes(engine, query))),
        [terms for _, terms in corpus],
        distinct_length=memories,
    )
    return {row_id: score for (row_id, _), score in zip(corpus, scores, strict=True) if score}


def total_idf(
    engine: Engine, table: str, tenant: str, query: str, *, memories: bool = False
) -> float:
    """The query's summed idf over the tenant's rows (as :func:`bm25_reference` counts them)."""
    corpus = _corpus(engine, table, tenant, memories=memories)
    return reference_scores.query_idf(lexemes(engine, query), [terms for _, terms in corpus])


def _corpus(
    engine: Engine, table: str, tenant: str, *, memories: bool
) -> list[tuple[int, list[str]]]:
    with engine.connect() as connection:
        rows = connection.execute(
            text(f"SELECT id, content FROM retrieval.{table} WHERE tenant_id = :t ORDER BY id"),
            {"t": tenant},
        ).all()
    corpus = [(int(row_id), lexemes(engine, content)) for row_id, content in rows]
    return [(row_id, terms) for row_id, terms in corpus if terms] if memories else corpus


# How each table's document frequencies are recounted from the rows themselves.
_RECOUNT = {
    "document": "SELECT term, count(*) FROM retrieval.document_terms WHERE tenant_id = :t "
    "GROUP BY term ORDER BY term",
    # Memories: the sampled ones (one in eight, by a hash of the id; revision 0010).
    "memory": "SELECT lexeme, count(*) FROM retrieval.memories, "
    "unnest(tsvector_to_array(search_vector)) AS lexeme "
    "WHERE tenant_id = :t AND hashint8(id) & 7 = 0 GROUP BY lexeme ORDER BY lexeme",
}


def term_statistics(
    engine: Engine, prefix: str, tenant: str
) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(document frequencies kept in ``<prefix>_term_stats``, the same recounted from the rows
    themselves) of ``tenant``."""
    with engine.connect() as connection:
        kept = connection.execute(
            text(
                f"SELECT term, document_frequency FROM retrieval.{prefix}_term_stats "
                "WHERE tenant_id = :t ORDER BY term"
            ),
            {"t": tenant},
        ).all()
        recount = connection.execute(text(_RECOUNT[prefix]), {"t": tenant}).all()
    return [(str(t), int(n)) for t, n in kept], [(str(t), int(n)) for t, n in recount]


def exact_distances(
    engine: Engine, table: str, tenant: str, vector: npt.NDArray[np.float32]
) -> list[tuple[int, float]]:
    """``(id, L2 distance)`` of every row of ``retrieval.<table>`` of ``tenant``, nearest first."""
    with engine.connect() as connection:
        rows = connection.exec_driver_sql(
            f"SELECT id, embedding FROM retrieval.{table} WHERE tenant_id = %(t)s", {"t": tenant}
        ).all()
    # A halfvec column compares the query rounded as it is rounded (PostgreSQL converts it).
    half = any(isinstance(r.embedding, HalfVector) for r in rows)
    query = vector.astype(np.float16).astype(np.float32) if half else vector
    return sorted(
        (
            (int(r.id), float(np.linalg.norm(r.embedding.to_numpy().astype(np.float32) - query)))
            for r in rows
        ),
        key=lambda item: (item[1], item[0]),
    )


def fused(
    bm25: Mapping[int, float],
    distances: Mapping[int, float],
    query_idf: float,
    calibration: DenseCalibration,
    fusion: str,
) -> dict[int, float]:
    """The fused relevance of every row of ``distances`` (its L2 distance) with its BM25 score
    (0 when absent), both channels absolute, by ``fusion`` (equal channel weights, RRF k = 60,
    cascade threshold 0.7), the ranks taken among these rows, as the SQL should."""
    rows = sorted(distances)
    dense = dict(
        zip(rows, calibration.relevance(np.array([distances[r] for r in rows])), strict=True)
    )
    by_bm25 = sorted((r for r in rows if bm25.get(r, 0.0) > 0), key=lambda r: (-bm25[r], r))
    by_distance = sorted(rows, key=lambda r: (distances[r], r))
    bm25_rank = {row: rank for rank, row in enumerate(by_bm25, start=1)}
    dense_rank = {row: rank for rank, row in enumerate(by_distance, start=1)}
    return {
        row: reference_scores.fused_relevance(
            fusion,
            reference_scores.lexical_relevance(bm25.get(row, 0.0), query_idf),
            float(dense[row]),
            {"bm25": bm25_rank.get(row), "dense": dense_rank[row]},
        )
        for row in rows
    }
