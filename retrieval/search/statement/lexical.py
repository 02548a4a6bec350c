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

from retrieval.search.statement.template import template

HOWS = ("max", "weighted", "cascade")
# The template of each way to combine the scores.
_COMBINATIONS = {
    "max": "read_lexical.max",
    "weighted": "read_lexical.weighted",
    "cascade": "read_lexical.cascade",
}


def lexical_scores(column: str) -> str:
    """A ``CROSS JOIN LATERAL`` giving ``lex.exact``, ``lex.fuzzy`` and ``lex.tokens`` of the
    text in ``column`` (an SQL expression of the row being scored)."""
    normalized = template("read_lexical.normalized", column=column)
    return template("read_lexical.scores", column=column, normalized=normalized)


def lexical_relevance(how: str, base: str) -> str:
    """The relevance combining ``lex.*`` with the source's own relevance ``base`` by ``how``."""
    return template(_COMBINATIONS[how], base=base)


def lexical_evidence(how: str, base_name: str, base: str) -> str:
    """``'lexical', json_build_object(...)``: the three scores, the source's own relevance
    (under ``base_name``) and how they were combined, for a result's metadata."""
    return template("read_lexical.evidence", how=how, base_name=base_name, base=base)
