"""BM25 and vector channels fused into one relevance in SQL (documents, and memories).

The BM25 channel reads the postings and statistics the write path keeps (``*_terms``,
``*_term_stats``, ``*_corpus``); the vector channel is an HNSW scan. Each channel's scores are
min-max normalized over its candidates (a row a channel did not find scores 0 there), then
fused by the strategy of the ``fusion`` parameter:

* ``rrf``: ``sum(w_c / (k + rank_c)) / sum(w_c / (k + 1))``
  (:func:`~retrieval.scoring.reciprocal_rank_fusion`);
* ``convex``: ``w_bm25 * bm25 + w_dense * dense`` of the normalized scores;
* ``max``: the larger normalized score;
* ``cascade``: the normalized BM25 score when it reaches ``cascade_threshold``, else the dense one.

Parameters: ``tenant_id``, ``text_search_config``, ``bm25_k1``, ``bm25_b``,
``bm25_common_share``, ``fusion``,
``rrf_k``, ``bm25_weight``, ``dense_weight``, ``cascade_threshold``, and the query text and
candidate count named by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

FUSIONS = ("rrf", "convex", "max", "cascade")
SEED = 4  # rows scored exactly to set the pruning bound, per candidate wanted
PROBE_LIMIT = 2000  # most rows whose common terms are probed; more: score every posting


@dataclass(frozen=True)
class Postings:
    """Where one table's BM25 statistics live, and the names of their columns."""

    terms: str  # postings: tenant_id, term, <key>, term_frequency, <length>
    stats: str  # tenant_id, term, document_frequency
    corpus: str  # tenant_id, <count>, total_terms
    key: str  # the id column of the postings (chunk_id, memory_id)
    length: str  # the row's length in lexemes (chunk_length, memory_length)
    count: str  # the corpus size column (chunks, memories)


def bm25_ctes(
    prefix: str, postings: Postings, query_text: str, candidates: str, condition: str = ""
) -> list[str]:
    """CTEs ending in ``{prefix}_bm25 (<key>, bm25)``: the best ``candidates`` rows by Okapi
    BM25 for the text of parameter ``query_text``; ``condition`` filters postings (alias
    ``p``). Parameter ``bm25_common_share`` (in [0, 1]) makes the search prune losslessly.

    Exact, with pruning (the "max-score" idea, set-wise): the query's rare terms (held by at
    most ``bm25_common_share`` of the rows) are scored from all their postings, giving each
    row they find a partial score ``P``; the common terms together can add at most
    ``R = sum(idf * (k1 + 1))``. When the ``candidates``-th best ``P`` (``theta``) exceeds
    ``R``, no row the rare terms missed can reach the top (it scores at most ``R``), nor can a
    found row with ``P + R < theta``; only the others get their common terms' contributions
    added, one index probe per (row, common term). Otherwise every posting is scored.
    """
    extra = f"AND {condition}" if condition else ""
    contribution = (
        f"w.idf_k1 * p.term_frequency / (p.term_frequency + w.base "
        f"+ w.per_length * p.{postings.length})"
    )
    key = postings.key

    def common(alias: str) -> str:
        # The common terms' contributions to one row: an index probe per common term.
        return f"""COALESCE((
                   SELECT sum({contribution})
                   FROM {prefix}_weights AS w
                   JOIN {postings.terms} AS p
                     ON p.tenant_id = %(tenant_id)s AND p.term = w.term
                        AND p.{key} = {alias}.{key}
                   WHERE w.common
               ), 0.0)"""

    return [
        f"""{prefix}_terms AS (
    SELECT DISTINCT lexeme AS term
    FROM unnest(to_tsvector(CAST(%(text_search_config)s AS regconfig), %({query_text})s))
)""",
        f"""{prefix}_corpus AS (
    SELECT {postings.count}::float8 AS n,
           total_terms::float8 / NULLIF({postings.count}, 0) AS average_length
    FROM {postings.corpus} WHERE tenant_id = %(tenant_id)s
)""",
        # Each query term's factors once (idf, and the length normalization's constants), so
        # that a posting costs one multiply-add: BM25 = idf * tf * (k1 + 1)
        # / (tf + k1 * (1 - b) + k1 * b * length / average_length). idf * (k1 + 1) bounds the
        # term's contribution.
        f"""{prefix}_weights AS MATERIALIZED (
    SELECT q.term,
           ln(1.0 + (c.n - t.document_frequency + 0.5) / (t.document_frequency + 0.5))
               * (%(bm25_k1)s::float8 + 1.0) AS idf_k1,
           %(bm25_k1)s::float8 * (1.0 - %(bm25_b)s::float8) AS base,
           %(bm25_k1)s::float8 * %(bm25_b)s::float8 / c.average_length AS per_length,
           t.document_frequency > %(bm25_common_share)s::float8 * c.n AS common
    FROM {prefix}_terms AS q
    JOIN {postings.stats} AS t ON t.tenant_id = %(tenant_id)s AND t.term = q.term
    CROSS JOIN {prefix}_corpus AS c
)""",
        f"""{prefix}_partial AS MATERIALIZED (
    SELECT p.{key}, sum({contribution}) AS partial
    FROM {prefix}_weights AS w
    JOIN {postings.terms} AS p ON p.tenant_id = %(tenant_id)s AND p.term = w.term {extra}
    WHERE NOT w.common
    GROUP BY p.{key}
)""",
        # theta: the candidates-th best exact score among the rows with the best partial
        # scores (real rows, so the true candidates-th best is at least theta).
        f"""{prefix}_seed AS MATERIALIZED (
    SELECT a.{key}, a.partial + {common("a")} AS bm25
    FROM (SELECT * FROM {prefix}_partial ORDER BY partial DESC LIMIT {SEED} * %({candidates})s)
         AS a
)""",
        f"""{prefix}_bound AS MATERIALIZED (
    SELECT (SELECT COALESCE(sum(idf_k1), 0.0) FROM {prefix}_weights WHERE common) AS rest,
           COALESCE((SELECT bm25 FROM {prefix}_seed ORDER BY bm25 DESC
                     OFFSET %({candidates})s - 1 LIMIT 1), 0.0) AS theta
)""",
        f"""{prefix}_pruning AS MATERIALIZED (
    SELECT x.theta > x.rest
           AND (SELECT count(*) FROM {prefix}_partial AS a
                WHERE a.partial + x.rest >= x.theta) <= {PROBE_LIMIT} AS pruned
    FROM {prefix}_bound AS x
)""",
        f"""{prefix}_bm25 AS (
    SELECT * FROM (
        SELECT a.{key}, a.partial + {common("a")} AS bm25
        FROM {prefix}_partial AS a, {prefix}_bound AS x
        WHERE (SELECT pruned FROM {prefix}_pruning) AND a.partial + x.rest >= x.theta
        UNION ALL
        SELECT p.{key}, sum({contribution}) AS bm25
        FROM {prefix}_weights AS w
        JOIN {postings.terms} AS p ON p.tenant_id = %(tenant_id)s AND p.term = w.term {extra}
        WHERE NOT (SELECT pruned FROM {prefix}_pruning)
        GROUP BY p.{key}
    ) AS scored
    ORDER BY scored.bm25 DESC, scored.{key}
    LIMIT %({candidates})s
)""",
    ]


def fusion_ctes(prefix: str, key: str) -> list[str]:
    """CTEs fusing ``{prefix}_bm25 (<key>, bm25)`` and ``{prefix}_dense (<key>, distance)``
    into ``{prefix}_fused``: ``<key>``, both channels' raw scores, ranks and normalized
    scores, and ``relevance``."""
    return [
        f"""{prefix}_channels AS (
    SELECT COALESCE(b.{key}, d.{key}) AS {key}, b.bm25, b.bm25_rank, b.bm25_norm,
           d.distance, d.dense_rank, d.dense_norm
    FROM (
        SELECT {key}, bm25, row_number() OVER (ORDER BY bm25 DESC, {key}) AS bm25_rank,
               CASE WHEN max(bm25) OVER () = min(bm25) OVER () THEN 1.0::float8
                    ELSE (bm25 - min(bm25) OVER ()) / (max(bm25) OVER () - min(bm25) OVER ())
               END AS bm25_norm
        FROM {prefix}_bm25
    ) AS b
    FULL JOIN (
        SELECT {key}, distance,
               row_number() OVER (ORDER BY distance, {key}) AS dense_rank,
               CASE WHEN max(distance) OVER () = min(distance) OVER () THEN 1.0::float8
                    ELSE (1.0 / (1.0 + distance) - 1.0 / (1.0 + max(distance) OVER ()))
                         / (1.0 / (1.0 + min(distance) OVER ())
                            - 1.0 / (1.0 + max(distance) OVER ()))
               END AS dense_norm
        FROM {prefix}_dense
    ) AS d ON d.{key} = b.{key}
)""",
        f"""{prefix}_fused AS (
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
    FROM {prefix}_channels AS x
)""",
    ]


def channel_evidence(alias: str) -> str:
    """``jsonb_build_object`` arguments with both channels' scores and ranks of ``alias``."""
    return (
        f"'fusion', %(fusion)s::text, 'bm25', {alias}.bm25, 'bm25_rank', {alias}.bm25_rank, "
        f"'bm25_normalized', {alias}.bm25_norm, 'dense_distance', {alias}.distance, "
        f"'dense_rank', {alias}.dense_rank, 'dense_normalized', {alias}.dense_norm"
    )
