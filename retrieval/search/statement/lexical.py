"""Exact and fuzzy matching in SQL: the SQL side of :mod:`retrieval.search.lexical_match`.

A row's text is compared with the whole query: an exact tier (exact 1.0, case-insensitive 0.98,
punctuation- and space-normalized 0.95), pg_trgm ``similarity`` (fuzzy), and word overlap
``0.4 * jaccard + 0.6 * coverage`` (tokens). The three combine with the source's own relevance
(the semantic ``1 / (1 + d)``, or the episodic keyword fraction) by ``max``, ``weighted``
(``lexical_weights``; its ``semantic`` weight is the source's own relevance) or ``cascade``.

Parameters: ``lexical_query``, ``query_normalized``, ``query_words``, and for ``weighted``
``lexical_exact``, ``lexical_fuzzy``, ``lexical_tokens``, ``lexical_semantic``, for ``cascade``
``cascade_exact``, ``cascade_fuzzy``, ``cascade_tokens``.
"""

from __future__ import annotations

HOWS = ("max", "weighted", "cascade")

_COMBINATIONS = {
    "max": "GREATEST(lex.exact, lex.fuzzy, lex.tokens, {base})",
    "weighted": "LEAST(1.0::float8, %(lexical_exact)s::float8 * lex.exact"
    " + %(lexical_fuzzy)s::float8 * lex.fuzzy + %(lexical_tokens)s::float8 * lex.tokens"
    " + %(lexical_semantic)s::float8 * {base})",
    "cascade": "CASE WHEN lex.exact >= %(cascade_exact)s::float8 THEN lex.exact"
    " WHEN lex.fuzzy >= %(cascade_fuzzy)s::float8 THEN lex.fuzzy"
    " WHEN lex.tokens >= %(cascade_tokens)s::float8 THEN lex.tokens ELSE {base} END",
}


def lexical_scores(column: str) -> str:
    """A ``CROSS JOIN LATERAL`` giving ``lex.exact``, ``lex.fuzzy`` and ``lex.tokens`` of the
    text in ``column`` (an SQL expression of the row being scored)."""
    normalized = f"btrim(regexp_replace(lower({column}), '\\W+', ' ', 'g'))"
    return f"""CROSS JOIN LATERAL (
        SELECT CASE
                   WHEN {column} = %(lexical_query)s THEN 1.0::float8
                   WHEN lower({column}) = lower(%(lexical_query)s) THEN 0.98::float8
                   WHEN %(query_normalized)s <> '' AND {normalized} = %(query_normalized)s
                   THEN 0.95::float8
                   ELSE 0.0::float8
               END AS exact,
               similarity({column}, %(lexical_query)s)::float8 AS fuzzy,
               CASE WHEN cardinality(%(query_words)s::text[]) = 0 THEN 0.0::float8 ELSE
                   0.4 * w.common / (cardinality(%(query_words)s::text[]) + w.own - w.common)
                   + 0.6 * w.common / cardinality(%(query_words)s::text[])
               END AS tokens
        FROM (
            SELECT count(*) FILTER (WHERE t.word = ANY(%(query_words)s::text[]))::float8
                       AS common,
                   count(*)::float8 AS own
            FROM (
                SELECT DISTINCT word
                FROM unnest(regexp_split_to_array({normalized}, ' ')) AS word
                WHERE word <> ''
            ) AS t
        ) AS w
    ) AS lex"""


def lexical_relevance(how: str, base: str) -> str:
    """The relevance combining ``lex.*`` with the source's own relevance ``base`` by ``how``."""
    return _COMBINATIONS[how].format(base=base)


def lexical_evidence(how: str, base_name: str, base: str) -> str:
    """``'lexical', json_build_object(...)``: the three scores, the source's own relevance
    (under ``base_name``) and how they were combined, for a result's metadata."""
    return (
        "'lexical', json_build_object('exact', lex.exact, 'fuzzy', lex.fuzzy, "
        f"'tokens', lex.tokens, '{base_name}', {base}, 'combined_by', '{how}')"
    )
