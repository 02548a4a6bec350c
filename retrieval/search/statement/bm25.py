"""Okapi BM25 in SQL, written once: a query term's factors, a posting's contribution, and the
best rows of a table's postings, exact and pruned.

:func:`bm25_factors` and :func:`bm25_contribution` are the formula, which the memories' channel
(:mod:`retrieval.search.statement.semantic`), the documents' channel
(:mod:`retrieval.search.statement.documents`) and ``DocumentStore.bm25`` all use; :func:`bm25_ctes`
reads the postings and statistics the write path keeps (``*_terms``, ``*_term_stats``,
``*_corpus``) and returns the best candidates by exact BM25. Its parameters' ranges are declared
once, with the settings (:data:`retrieval.search.config.BM25_K1`, ``BM25_B``). The plain-Python
reference the tests check it against is :mod:`retrieval.search.reference_scores`.

Parameters: ``tenant_id``, ``text_search_config``, ``bm25_k1``, ``bm25_b``,
``bm25_common_share``, ``max_query_words`` (with ``capped``), and the query text and candidate
count named by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROBE_LIMIT", "SEED", "Postings", "bm25_contribution", "bm25_ctes", "bm25_factors"]

# What each CTE holds (after the table's prefix), printed above it in docs/statements/.
NOTES = {
    "terms": "the query's lexemes (the rarest first, when the query is capped)",
    "corpus": "the tenant's row count and mean length",
    "weights": "the query terms the rows hold, each with its BM25 factors and whether it is common",
    "partial": "each row's partial score from the rare terms' postings",
    "top": "the seed (the best partial scores) and the best one outside it",
    "seed": "the seed's exact scores, the common terms added",
    "bound": "what the common terms can add, the seed's bar, and the best partial outside it",
    "reach": "the rows the rare terms found that can still reach the top",
    "tier": "which tier answers exactly: the seed, the rows in reach, or every posting",
    "bm25": "the best rows by exact BM25",
}
SEED = 8  # rows scored exactly to set the pruning bound, per candidate wanted
PROBE_LIMIT = 5000  # most rows whose common terms are probed; more: score every posting


def _terms(prefix: str, postings: Postings, query_text: str, capped: bool) -> str:
    # The query's lexemes; ``capped`` (a query of more words than max_query_words): that many
    # of them, those the rows hold, rarest first, then those they do not hold.
    lexemes = f"""SELECT DISTINCT lexeme AS term
    FROM unnest(to_tsvector(CAST(%(text_search_config)s AS regconfig), %({query_text})s))"""
    if not capped:
        return f"{prefix}_terms AS (\n    {lexemes}\n)"
    return f"""{prefix}_terms AS MATERIALIZED (
    SELECT q.term
    FROM ({lexemes}) AS q
    LEFT JOIN {postings.stats} AS t ON t.tenant_id = %(tenant_id)s AND t.term = q.term
    ORDER BY t.document_frequency IS NULL, t.document_frequency, q.term
    LIMIT %(max_query_words)s
)"""


def bm25_factors(document_frequency: str, corpus: str) -> str:
    """A query term's BM25 factors as select-list columns, from the SQL expression of its
    document frequency and the alias of a corpus row (``n``, ``average_length``): ``idf``
    (Lucene's), ``idf_k1`` (``idf * (k1 + 1)``, the most the term adds to a row), ``base`` and
    ``per_length``, for :func:`bm25_contribution`.

    Okapi BM25 = idf * tf * (k1 + 1) / (tf + k1 * (1 - b) + k1 * b * length / average_length).
    """
    idf = f"ln(1.0 + ({corpus}.n - {document_frequency} + 0.5) / ({document_frequency} + 0.5))"
    return (
        f"{idf} AS idf,\n"
        f"           {idf} * (%(bm25_k1)s::float8 + 1.0) AS idf_k1,\n"
        "           %(bm25_k1)s::float8 * (1.0 - %(bm25_b)s::float8) AS base,\n"
        f"           %(bm25_k1)s::float8 * %(bm25_b)s::float8 / {corpus}.average_length"
        " AS per_length"
    )


def bm25_contribution(factors: str, term_frequency: str, length: str) -> str:
    """What one posting adds to its row's BM25 score: ``idf_k1 * tf / (tf + base + per_length
    * length)``, from the alias of a row of :func:`bm25_factors` and the SQL expressions of the
    term's frequency in the row and the row's length."""
    return (
        f"{factors}.idf_k1 * {term_frequency} / ({term_frequency} + {factors}.base "
        f"+ {factors}.per_length * {length})"
    )


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
    prefix: str,
    postings: Postings,
    query_text: str,
    candidates: str,
    condition: str = "",
    *,
    capped: bool = False,
) -> list[str]:
    """CTEs ending in ``{prefix}_bm25 (<key>, bm25)``: the best ``candidates`` rows by Okapi
    BM25 for the text of parameter ``query_text``; ``condition`` filters postings (alias
    ``p``). Parameter ``bm25_common_share`` (in [0, 1]) makes the search prune losslessly.

    Exact, with pruning (the "max-score" idea, set-wise): the query's rare terms (held by at
    most ``bm25_common_share`` of the rows) are scored from all their postings, giving each
    row they find a partial score ``P``; the common terms together can add at most
    ``R = sum(idf * (k1 + 1))``. The ``SEED * candidates`` rows of best ``P`` (the seed) get
    their common terms added (their exact scores); ``theta`` is the ``candidates``-th best of
    them. Then, in the first tier that applies:

    1. ``theta > R`` and the best ``P`` outside the seed plus ``R`` stays under ``theta``: no
       other row can reach the top (a row the rare terms missed scores at most ``R``), so the
       top is the seed's;
    2. ``theta > R`` and at most ``PROBE_LIMIT`` rows have ``P + R >= theta``: those rows get
       their common terms added the same way, the rest cannot reach the top;
    3. otherwise every posting is scored (:func:`bm25_every_posting`).
    """
    return [
        *bm25_weight_ctes(prefix, postings, query_text, capped=capped),
        *_seed_ctes(prefix, postings, candidates, condition),
        *_tier_ctes(prefix, postings, candidates, condition),
    ]


def bm25_weight_ctes(
    prefix: str, postings: Postings, query_text: str, *, capped: bool = False
) -> list[str]:
    """CTEs ending in ``{prefix}_weights (term, idf, idf_k1, base, per_length, common)``: the
    query's terms that the rows hold, each with its factors (:func:`bm25_factors`) once, so
    that a posting costs one multiply-add; ``common``: held by more than parameter
    ``bm25_common_share`` of the rows."""
    return [
        _terms(prefix, postings, query_text, capped),
        f"""{prefix}_corpus AS (
    SELECT {postings.count}::float8 AS n,
           total_terms::float8 / NULLIF({postings.count}, 0) AS average_length
    FROM {postings.corpus} WHERE tenant_id = %(tenant_id)s
)""",
        f"""{prefix}_weights AS MATERIALIZED (
    SELECT q.term,
           {bm25_factors("t.document_frequency", "c")},
           t.document_frequency > %(bm25_common_share)s::float8 * c.n AS common
    FROM {prefix}_terms AS q
    JOIN {postings.stats} AS t ON t.tenant_id = %(tenant_id)s AND t.term = q.term
    CROSS JOIN {prefix}_corpus AS c
)""",
    ]


def bm25_every_posting(
    prefix: str, postings: Postings, condition: str = "", *, when: str = "TRUE"
) -> str:
    """``SELECT <key>, bm25``: every row's exact BM25 from all the postings of the query's
    terms (after :func:`bm25_weight_ctes`); ``condition`` filters postings (alias ``p``),
    ``when`` the whole select."""
    extra = f"AND {condition}" if condition else ""
    return f"""SELECT p.{postings.key}, sum({_contribution(postings)}) AS bm25
        FROM {prefix}_weights AS w
        JOIN {postings.terms} AS p ON p.tenant_id = %(tenant_id)s AND p.term = w.term {extra}
        WHERE {when}
        GROUP BY p.{postings.key}"""


def _contribution(postings: Postings) -> str:
    return bm25_contribution("w", "p.term_frequency", f"p.{postings.length}")


def _common_of(prefix: str, postings: Postings, rows: str) -> str:
    # The common terms' contributions (``rest``) to the rows of query ``rows``: each common
    # term's postings probed for all of them at once (one index scan per term).
    key = postings.key
    return f"""
        SELECT p.{key}, sum({_contribution(postings)}) AS rest
        FROM {prefix}_weights AS w
        JOIN {postings.terms} AS p
          ON p.tenant_id = %(tenant_id)s AND p.term = w.term
             AND p.{key} = ANY (ARRAY({rows}))
        WHERE w.common
        GROUP BY p.{key}"""


def _seed_ctes(prefix: str, postings: Postings, candidates: str, condition: str) -> list[str]:
    # The rare terms' partial scores, the seed's exact scores, and the bound the common terms
    # set.
    extra = f"AND {condition}" if condition else ""
    key = postings.key
    seed = f"{SEED} * %({candidates})s"  # the seed's size
    seed_rows = f"SELECT {key} FROM {prefix}_top WHERE place <= {seed}"
    return [
        f"""{prefix}_partial AS MATERIALIZED (
    SELECT p.{key}, sum({_contribution(postings)}) AS partial
    FROM {prefix}_weights AS w
    JOIN {postings.terms} AS p ON p.tenant_id = %(tenant_id)s AND p.term = w.term {extra}
    WHERE NOT w.common
    GROUP BY p.{key}
)""",
        # The seed, and one row more: the best partial score outside it.
        f"""{prefix}_top AS MATERIALIZED (
    SELECT a.{key}, a.partial, row_number() OVER (ORDER BY a.partial DESC, a.{key}) AS place
    FROM (SELECT * FROM {prefix}_partial ORDER BY partial DESC, {key}
          LIMIT {SEED} * %({candidates})s + 1) AS a
)""",
        # The seed's exact scores: each common term's postings probed for the seed's rows at
        # once (one index scan per common term).
        f"""{prefix}_seed AS MATERIALIZED (
    SELECT a.{key}, a.partial + COALESCE(x.rest, 0.0) AS bm25
    FROM {prefix}_top AS a
    LEFT JOIN ({_common_of(prefix, postings, seed_rows)}
    ) AS x ON x.{key} = a.{key}
    WHERE a.place <= {seed}
)""",
        # rest: what the common terms can add at most; theta: the candidates-th best exact
        # score in the seed (real rows, so the true candidates-th best is at least theta);
        # outside: the best partial score outside the seed (NULL: the seed holds every row
        # the rare terms found).
        f"""{prefix}_bound AS MATERIALIZED (
    SELECT (SELECT COALESCE(sum(idf_k1), 0.0) FROM {prefix}_weights WHERE common) AS rest,
           (SELECT bm25 FROM {prefix}_seed ORDER BY bm25 DESC
            OFFSET %({candidates})s - 1 LIMIT 1) AS theta,
           (SELECT partial FROM {prefix}_top WHERE place = {SEED} * %({candidates})s + 1)
               AS outside
)""",
    ]


def _tier_ctes(prefix: str, postings: Postings, candidates: str, condition: str) -> list[str]:
    # Which tier answers, and the best candidates by it.
    key = postings.key
    reach_rows = f"SELECT {key} FROM {prefix}_reach"
    tier_3 = f"(SELECT tier FROM {prefix}_tier) = 3"
    return [
        # The rows the rare terms found that can still reach the top (read by tiers 2 and 3).
        f"""{prefix}_reach AS MATERIALIZED (
    SELECT a.{key}, a.partial
    FROM {prefix}_partial AS a, {prefix}_bound AS x
    WHERE a.partial + x.rest >= x.theta
)""",
        f"""{prefix}_tier AS MATERIALIZED (
    SELECT CASE
               WHEN x.rest = 0.0 AND x.outside IS NULL THEN 1
               WHEN x.theta > x.rest AND (x.outside IS NULL OR x.outside + x.rest < x.theta)
               THEN 1
               WHEN x.theta > x.rest
                    AND (SELECT count(*) FROM {prefix}_reach) <= {PROBE_LIMIT}
               THEN 2
               ELSE 3
           END AS tier
    FROM {prefix}_bound AS x
)""",
        f"""{prefix}_bm25 AS (
    SELECT * FROM (
        SELECT s.{key}, s.bm25
        FROM {prefix}_seed AS s
        WHERE (SELECT tier FROM {prefix}_tier) = 1
        UNION ALL
        SELECT a.{key}, a.partial + COALESCE(x.rest, 0.0) AS bm25
        FROM {prefix}_reach AS a
        LEFT JOIN ({_common_of(prefix, postings, reach_rows)}) AS x ON x.{key} = a.{key}
        WHERE (SELECT tier FROM {prefix}_tier) = 2
        UNION ALL
        {bm25_every_posting(prefix, postings, condition, when=tier_3)}
    ) AS scored
    ORDER BY scored.bm25 DESC, scored.{key}
    LIMIT %({candidates})s
)""",
    ]
