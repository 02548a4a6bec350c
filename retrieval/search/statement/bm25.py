"""Okapi BM25 in SQL, written once: a query term's factors, a posting's contribution, and the
best rows of a table's postings, exact and pruned.

:func:`bm25_factors` and :func:`bm25_contribution` are the formula, which the memories' channel
(:mod:`retrieval.search.sources.semantic.statement`), the documents' channel
(:mod:`retrieval.search.sources.documents.statement`) and ``DocumentStore.bm25`` all use;
:func:`bm25_ctes` reads the postings and statistics the write path keeps (``*_terms``,
``*_term_stats``, ``*_corpus``) and returns the best candidates by exact BM25. Its parameters'
ranges are declared once, with the settings (:data:`retrieval.search.config.BM25_K1`, ``BM25_B``).
The plain-Python reference the tests check it against is :mod:`retrieval.search.reference_scores`.

Parameters: ``tenant_id``, ``text_search_config``, ``bm25_k1``, ``bm25_b``,
``bm25_common_share``, ``max_query_words`` (with ``capped``), and the query text and candidate
count named by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.search.statement.template import template

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
    lexemes = template("read_bm25.lexemes", query_text=query_text)
    if not capped:
        return template("read_bm25.terms", prefix=prefix, lexemes=lexemes)
    return template("read_bm25.terms_capped", prefix=prefix, lexemes=lexemes, stats=postings.stats)


def bm25_factors(document_frequency: str, corpus: str) -> str:
    """A query term's BM25 factors as select-list columns, from the SQL expression of its
    document frequency and the alias of a corpus row (``n``, ``average_length``): ``idf``
    (Lucene's), ``idf_k1`` (``idf * (k1 + 1)``, the most the term adds to a row), ``base`` and
    ``per_length``, for :func:`bm25_contribution`.

    Okapi BM25 = idf * tf * (k1 + 1) / (tf + k1 * (1 - b) + k1 * b * length / average_length).
    """
    idf = template("read_bm25.idf", corpus=corpus, document_frequency=document_frequency)
    return template("read_bm25.factors", idf=idf, corpus=corpus)


def bm25_contribution(factors: str, term_frequency: str, length: str) -> str:
    """What one posting adds to its row's BM25 score: ``idf_k1 * tf / (tf + base + per_length
    * length)``, from the alias of a row of :func:`bm25_factors` and the SQL expressions of the
    term's frequency in the row and the row's length."""
    return template(
        "read_bm25.contribution", factors=factors, term_frequency=term_frequency, length=length
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
        template("read_bm25.corpus", prefix=prefix, count=postings.count, corpus=postings.corpus),
        template(
            "read_bm25.weights",
            prefix=prefix,
            factors=bm25_factors("t.document_frequency", "c"),
            stats=postings.stats,
        ),
    ]


def bm25_every_posting(
    prefix: str, postings: Postings, condition: str = "", *, when: str = "TRUE"
) -> str:
    """``SELECT <key>, bm25``: every row's exact BM25 from all the postings of the query's
    terms (after :func:`bm25_weight_ctes`); ``condition`` filters postings (alias ``p``),
    ``when`` the whole select."""
    return template(
        "read_bm25.every_posting", **_scan(prefix, postings), extra=_condition(condition), when=when
    )


def _condition(condition: str) -> str:
    # The caller's condition on the postings, if any.
    return template("read_bm25.posting_condition", condition=condition) if condition else ""


def _scan(prefix: str, postings: Postings) -> dict[str, str]:
    # What every read of the postings fills: the CTEs' prefix, the postings and their key, and
    # a posting's contribution to its row (alias ``p``, the term's factors ``w``).
    return {
        "prefix": prefix,
        "key": postings.key,
        "terms": postings.terms,
        "contribution": bm25_contribution("w", "p.term_frequency", f"p.{postings.length}"),
    }


def _common_of(prefix: str, postings: Postings, rows: str) -> str:
    # The common terms' contributions (``rest``) to the rows of query ``rows``.
    return template("read_bm25.common_of", **_scan(prefix, postings), rows=rows)


def _seed_ctes(prefix: str, postings: Postings, candidates: str, condition: str) -> list[str]:
    # The rare terms' partial scores, the seed's exact scores, and the bound the common terms
    # set.
    key = postings.key
    seed = template("read_bm25.seed_size", seed=SEED, candidates=candidates)
    seed_rows = template("read_bm25.seed_rows", key=key, prefix=prefix, seed=seed)
    return [
        template("read_bm25.partial", **_scan(prefix, postings), extra=_condition(condition)),
        template("read_bm25.top", prefix=prefix, key=key, seed=seed),
        template(
            "read_bm25.seed",
            prefix=prefix,
            key=key,
            seed=seed,
            common=_common_of(prefix, postings, seed_rows),
        ),
        template("read_bm25.bound", prefix=prefix, seed=seed, candidates=candidates),
    ]


def _tier_ctes(prefix: str, postings: Postings, candidates: str, condition: str) -> list[str]:
    # Which tier answers, and the best candidates by it.
    key = postings.key
    reach_rows = template("read_bm25.reach_rows", key=key, prefix=prefix)
    tier_3 = template("read_bm25.tier_3", prefix=prefix)
    return [
        template("read_bm25.reach", prefix=prefix, key=key),
        template("read_bm25.tier", prefix=prefix, probe_limit=PROBE_LIMIT),
        template(
            "read_bm25.bm25",
            prefix=prefix,
            key=key,
            candidates=candidates,
            common=_common_of(prefix, postings, reach_rows),
            every_posting=bm25_every_posting(prefix, postings, condition, when=tier_3),
        ),
    ]
