"""The semantic source: memories found by meaning (HNSW) and by their words (GIN).

Two channels, each absolute (:mod:`retrieval.search.statement.relevance`):

* dense: the tenant's ``semantic_candidates`` memories nearest the query by L2 distance on the
  HNSW index (the tenant and the mode's kinds filter the scan itself; with
  ``hnsw.iterative_scan`` on, a small tenant still gets its full pool); relevance is the
  embedding model's calibrated relevance of the distance;
* lexical (``bm25``): Okapi BM25 over the memories' lexemes (``search_vector``, revision 0010,
  with a GIN index on ``(tenant_id, search_vector)``). The tenant's statistics are the number
  of memories and of their lexemes (``memory_corpus``) and, for one memory in eight (by a hash
  of its id), the terms they hold (``memory_term_stats``), all kept by triggers. A query term
  that fewer than ``COMMON_SAMPLED`` sampled memories hold is rare: the GIN index finds its
  memories, and their number is its exact document frequency (up to ``COUNT_CAP``); a common
  term's document frequency is the sample's estimate. The rarest terms' memories, up to
  ``memory_bm25_rows`` in all, join the dense pool. Every candidate is then scored with every
  query term from its own lexemes, so each carries both exact channel scores; a memory that
  holds only the query's commoner terms is found only if it is near by meaning too. When every
  query term was counted and searched (``bm25_complete`` in the metadata), the channel is
  exact BM25 over the tenant. A memory's length is its number of distinct lexemes.

The channels are fused by ``fusion``; a memory is returned only with absolute evidence (when
the cut-off is on): its vector within ``max_distance`` of the query's, or its lexemes covering
``bm25_min_coverage`` of the query's idf. Recency is ``0.5 ^ (age / half_life)``; the optional
signals are the stored importance (unset counts as a neutral 0.5), popularity
``log10(access_count + 1) / log10(101)`` and entity overlap (query entity ids the memory links
to / query entity ids). The metadata keeps the seed's ``1 / (1 + d)`` (``inverse_distance``),
the raw distance and both channels' scores and ranks.
"""

from __future__ import annotations

from retrieval.db.queries import quote_schema
from retrieval.search.config import Mode
from retrieval.search.plan.shape import SemanticQuery
from retrieval.search.statement.bm25 import bm25_contribution, bm25_factors
from retrieval.search.statement.common import live_sql, memory_columns, recency_sql, told_at_sql
from retrieval.search.statement.cte import Cte, noted
from retrieval.search.statement.lexical import lexical_evidence, lexical_relevance, lexical_scores
from retrieval.search.statement.relevance import (
    dense_relevance_sql,
    fused_relevance_sql,
    lexical_relevance_sql,
    lexical_share_sql,
)

SOURCE = "semantic"
# What each CTE holds, printed above it in docs/statements/.
NOTES = {
    "semantic_nearest": "the tenant's live memories nearest the query's vector (the dense pool)",
    "mem_corpus": "the tenant's memory count, mean length and sampled share (memory_corpus)",
    "mem_terms": "the query's lexemes with their document frequencies estimated from the sample",
    "mem_probed": "the rarest query terms whose memories fit the BM25 row budget",
    "mem_fetched": "the live memories holding each probed term, through the GIN index",
    "mem_weights": "each query term's document frequency (counted or estimated) and BM25 factors",
    "mem_total": "the query's summed idf, its terms, and how many were not counted",
    "mem_matched": "the memories the rare terms found beyond the dense pool, in the mode's kinds",
    "mem_pool": "the candidates of both channels, marked by the channel that found them",
    "mem_scores": "each candidate's BM25 score and the idf it covers, from its own lexemes",
    "mem_ranked": "the candidates with their BM25 and dense ranks",
    "semantic_found": "the dense pool and the lexical channel's best candidates",
    "semantic": "the memories' candidates: relevance, recency, signals and evidence",
}
NEUTRAL_IMPORTANCE = 0.5
# A query term held by fewer sampled memories than this (one in eight memories feeds the
# statistics; revision 0010) is rare: its memories are counted exactly, up to COUNT_CAP.
# Above it, the sample's estimate stands (with 16 sampled, within about 25%).
COMMON_SAMPLED = 16
COUNT_CAP = 512

# A memory's importance and popularity signals, for a row ``n`` of a memories' CTE.
MEMORY_SIGNALS = f"""COALESCE(n.importance, {NEUTRAL_IMPORTANCE}::float8) AS importance,
           LEAST(1.0::float8, log((n.access_count + 1)::float8) / log(101.0::float8))
               AS popularity"""
# What every memory result carries as evidence (the pairs of a json_build_object), for a row
# ``n`` with its ``distance``.
MEMORY_EVIDENCE = f"""'metadata', n.metadata, 'importance', n.importance,
               'access_count', n.access_count, 'last_accessed_at', n.last_accessed_at,
               'embedding_model', n.embedding_model, 'thread_id', n.thread_id,
               'position', n.position,
               'inverse_distance', 1.0::float8 / (1.0::float8 + n.distance),
               'dense_relevance', {dense_relevance_sql("n.distance")}"""


def semantic_ctes(schema: str, query: SemanticQuery) -> list[Cte]:
    """The CTEs of the semantic source, the last named ``semantic``.

    The dense channel's pool: the tenant's nearest memories through the HNSW graph (pgvector's
    iterative scan keeps the tenant's filter inside the walk), or with ``query.exact`` its rows
    read exactly, each distance computed once and sorted (for a tenant small for its table:
    :mod:`~retrieval.search.plan.exact_read`).

    Parameters: ``tenant_id``, ``query_vector``, ``semantic_candidates``,
    ``semantic_half_life``, ``as_of``, ``dense_zero_squared``, ``dense_span_squared``, and when
    used ``include_kinds``, ``exclude_kinds``, ``max_distance``, ``entity_ids``; with
    ``query.bm25`` ``query_text``, ``bm25_k1``, ``bm25_b``, ``memory_bm25_rows``,
    ``bm25_min_coverage`` and the fusion's
    (:mod:`retrieval.search.statement.relevance`).
    """
    s = quote_schema(schema)
    ctes = [_nearest(s, query)]
    dense = dense_relevance_sql("n.distance")
    if query.bm25:
        ctes += _bm25_channel(schema, query)
        found = "semantic_found"
        own = fused_relevance_sql(
            lexical_relevance_sql("n.bm25", "(SELECT total_idf FROM mem_total)"),
            dense,
            "n.bm25_rank",
            "n.dense_rank",
        )
        evidence = ", " + _bm25_evidence()
        cut = (
            "n.distance <= %(max_distance)s::float8 OR n.coverage >= %(bm25_min_coverage)s::float8"
            if query.with_max_distance
            else ""
        )
    else:
        found, own, evidence = "semantic_nearest", dense, ""
        cut = "n.distance <= %(max_distance)s::float8" if query.with_max_distance else ""
    relevance, lexical_join, lexical_details = own, "", ""
    if query.lexical is not None:
        relevance = lexical_relevance(query.lexical, own)
        lexical_join = lexical_scores("n.content")
        lexical_details = ", " + lexical_evidence(query.lexical, "semantic", own)
    entities, entity = _entity_columns(s, query.with_entities)
    ctes.append(
        f"""semantic AS (
    SELECT 'semantic'::text AS source, 'memory'::text AS item, n.id, n.content, n.kind,
           n.created_at,
           {relevance} AS relevance,
           {recency_sql(told_at_sql("n"), "semantic_half_life")} AS recency,
           {MEMORY_SIGNALS},
           {entity} AS entity,
           n.distance, NULL::text[] AS matched, {entities} AS entities,
           json_build_object(
               {MEMORY_EVIDENCE}{lexical_details}{evidence}
           ) AS details
    FROM {found} AS n
    {lexical_join}
    {"WHERE " + cut if cut else ""}
)"""
    )
    return noted(ctes, NOTES)


def _nearest(s: str, query: SemanticQuery) -> str:
    """The dense channel's CTE ``semantic_nearest``: the tenant's nearest memories."""
    filters = ["m.tenant_id = %(tenant_id)s", *kind_filters(query.mode, "m"), live_sql("m")]
    vector_column = ", m.search_vector" if query.bm25 else ""
    where = " AND ".join(filters)
    distance = "m.embedding <-> %(query_vector)s::vector"
    return (
        # The tenant's rows by its btree, each distance computed once and only the ids sorted;
        # the pool's rows then read whole by the primary key.
        f"""semantic_nearest AS MATERIALIZED (
    SELECT {memory_columns("m")}{vector_column}, x.distance
    FROM (
        SELECT y.id, y.distance FROM (
            SELECT m.id, {distance} AS distance FROM {s}.memories AS m WHERE {where}
            OFFSET 0
        ) AS y
        ORDER BY y.distance
        LIMIT %(semantic_candidates)s
    ) AS x
    JOIN {s}.memories AS m ON m.tenant_id = %(tenant_id)s AND m.id = x.id
    ORDER BY x.distance
)"""
        if query.exact
        else f"""semantic_nearest AS MATERIALIZED (
    SELECT {memory_columns("m")}{vector_column}, {distance} AS distance
    FROM {s}.memories AS m
    WHERE {where}
    ORDER BY distance
    LIMIT %(semantic_candidates)s
)"""
    )


def _entity_columns(s: str, with_entities: bool) -> tuple[str, str]:
    """The memory's entity ids among the query's, and the entity signal (their share)."""
    if not with_entities:
        return "NULL::text[]", "0.0::float8"
    linked = (
        f"SELECT e.entity_id FROM {s}.memory_entities AS e "
        "WHERE e.tenant_id = %(tenant_id)s AND e.memory_id = n.id "
        "AND e.entity_id = ANY(%(entity_ids)s::text[]) ORDER BY e.entity_id"
    )
    entities = f"ARRAY({linked})"
    return entities, f"cardinality({entities})::float8 / cardinality(%(entity_ids)s::text[])"


def kind_filters(mode: Mode, alias: str) -> list[str]:
    # The mode's kinds, on the ``kind`` column of ``alias``.
    filters = []
    if mode.include_kinds is not None:
        filters.append(f"{alias}.kind = ANY(%(include_kinds)s::text[])")
    if mode.exclude_kinds:
        filters.append(f"{alias}.kind <> ALL(%(exclude_kinds)s::text[])")
    return filters


def _bm25_channel(schema: str, query: SemanticQuery) -> list[str]:
    # The query's lexemes (in the text search configuration the tenant's memories were indexed
    # with) and the sample's estimate of their document frequencies (a query of more words than
    # max_query_words: that many of them, the rarest by the estimate, a lexeme the sample lacks
    # counting as the rarest); the rarest terms' memories,
    # within the row budget, fetched through the GIN index (which counts them exactly) and
    # joined to the dense pool; every candidate scored with every query term from its own
    # lexemes; the lexical channel keeps its best ``semantic_candidates``.
    s = quote_schema(schema)
    return [
        *_bm25_terms(s, query),
        *_bm25_weights(),
        *_bm25_pool(query),
    ]


def _bm25_terms(s: str, query: SemanticQuery) -> list[str]:
    # The tenant's corpus row, the query's lexemes with their estimated document frequencies,
    # the rarest terms within the row budget and their memories.
    return [
        f"""mem_corpus AS MATERIALIZED (
    SELECT memories::float8 AS n, total_terms::float8 / NULLIF(memories, 0) AS average_length,
           sampled_memories::float8 AS sampled_n, text_search_config
    FROM {s}.memory_corpus WHERE tenant_id = %(tenant_id)s
)""",
        f"""mem_terms AS MATERIALIZED (
    SELECT q.term, CAST(array_to_tsvector(ARRAY[q.term])::text AS tsquery) AS query,
           COALESCE(t.document_frequency, 0) AS sampled,
           COALESCE(t.document_frequency, 0) * c.n / NULLIF(c.sampled_n, 0.0) AS estimate
    FROM mem_corpus AS c
    CROSS JOIN LATERAL (
        SELECT DISTINCT lexeme AS term
        FROM unnest(to_tsvector(CAST(c.text_search_config AS regconfig), %(query_text)s))
    ) AS q
    LEFT JOIN {s}.memory_term_stats AS t ON t.tenant_id = %(tenant_id)s AND t.term = q.term
    {"ORDER BY estimate, q.term LIMIT %(max_query_words)s" if query.capped else ""}
)""",
        # The rarest terms (fewer than COMMON_SAMPLED sampled), in ascending estimate, while
        # their estimated memories stay within the row budget: their memories are fetched
        # (at most COUNT_CAP + 1 each), with what a candidate needs.
        f"""mem_probed AS MATERIALIZED (
    SELECT term, query FROM (
        SELECT term, query,
               sum(GREATEST(estimate, 1.0)) OVER (ORDER BY estimate, term) AS rows
        FROM mem_terms WHERE sampled < {COMMON_SAMPLED}
    ) AS x
    WHERE rows <= %(memory_bm25_rows)s
)""",
        f"""mem_fetched AS MATERIALIZED (
    SELECT w.term, r.*
    FROM mem_probed AS w
    CROSS JOIN LATERAL (
        SELECT {memory_columns("m")}, m.search_vector,
               m.embedding <-> %(query_vector)s::vector AS distance
        FROM {_matching(s, query.bound)}
        LIMIT {COUNT_CAP + 1}
    ) AS r
)""",
    ]


def _bm25_weights() -> list[str]:
    # Each query term's document frequency (counted or estimated) and BM25 factors; the
    # query's summed idf and terms.
    return [
        # A probed term's document frequency is the number of its memories (exact below the
        # cap), any other term's the sample's estimate.
        # A lexeme no memory holds has document frequency 0 (it counts in the query's idf).
        f"""mem_weights AS MATERIALIZED (
    SELECT w.term, x.document_frequency, x.counted,
           {bm25_factors("x.document_frequency", "c")}
    FROM mem_terms AS w
    CROSS JOIN mem_corpus AS c
    LEFT JOIN (SELECT term, count(*) AS rows FROM mem_fetched GROUP BY term) AS r
           ON r.term = w.term
    CROSS JOIN LATERAL (
        SELECT CASE WHEN w.term IN (SELECT term FROM mem_probed)
                         AND COALESCE(r.rows, 0) <= {COUNT_CAP}
                    THEN COALESCE(r.rows, 0)
                    ELSE GREATEST(LEAST(w.estimate, c.n), COALESCE(r.rows, 0))
               END AS document_frequency,
               w.term IN (SELECT term FROM mem_probed) AND COALESCE(r.rows, 0) <= {COUNT_CAP}
                   AS counted
    ) AS x
)""",
        """mem_total AS MATERIALIZED (
    SELECT sum(idf) AS total_idf, array_agg(term) AS terms,
           count(*) FILTER (WHERE NOT counted) AS unprobed
    FROM mem_weights
)""",
    ]


def _bm25_pool(query: SemanticQuery) -> list[str]:
    # The candidates of both channels, each scored with every query term from its own lexemes,
    # and ranked by each channel.
    kinds = " AND ".join(["TRUE", *kind_filters(query.mode, "r")])
    return [
        f"""mem_matched AS MATERIALIZED (
    SELECT DISTINCT ON (r.id) {memory_columns("r")}, r.search_vector, r.distance
    FROM mem_fetched AS r
    WHERE {kinds} AND r.id <> ALL (ARRAY(SELECT id FROM semantic_nearest))
    ORDER BY r.id
)""",
        """mem_pool AS MATERIALIZED (
    SELECT *, true AS near FROM semantic_nearest
    UNION ALL
    SELECT *, false AS near FROM mem_matched
)""",
        # Each candidate's query lexemes (ts_filter keeps the lexemes setweight marked), and
        # from them its BM25 score and the idf it covers.
        f"""mem_scores AS MATERIALIZED (
    SELECT p.id,
           sum({_CONTRIBUTION}) AS bm25,
           sum(w.idf) AS covered
    FROM mem_pool AS p
    CROSS JOIN LATERAL unnest(
        ts_filter(setweight(p.search_vector, 'A', (SELECT terms FROM mem_total)), '{{a}}')
    ) AS u
    JOIN mem_weights AS w ON w.term = u.lexeme
    GROUP BY p.id
)""",
        """mem_ranked AS MATERIALIZED (
    SELECT p.*, COALESCE(s.bm25, 0.0) AS bm25,
           COALESCE(s.covered, 0.0) / NULLIF((SELECT total_idf FROM mem_total), 0.0)
               AS coverage,
           CASE WHEN s.bm25 > 0.0 THEN
               row_number() OVER (ORDER BY COALESCE(s.bm25, 0.0) DESC, p.id) END AS bm25_rank,
           row_number() OVER (ORDER BY p.distance, p.id) AS dense_rank
    FROM mem_pool AS p LEFT JOIN mem_scores AS s ON s.id = p.id
)""",
        """semantic_found AS (
    SELECT * FROM mem_ranked
    WHERE near OR bm25_rank <= %(semantic_candidates)s
)""",
    ]


# A query lexeme's BM25 contribution to a memory: its positions are its frequency, the memory's
# distinct lexemes its length.
_CONTRIBUTION = bm25_contribution("w", "cardinality(u.positions)", "length(p.search_vector)")


def _matching(s: str, bound: bool) -> str:
    # The tenant's memories holding a probed term, through the GIN index. A role bound by
    # row-level security cannot use the index for @@ (not leakproof): the owner's function
    # looks the ids up for the tenant the session names (revision 0011).
    # Only live memories count and join.
    if not bound:
        return (
            f"{s}.memories AS m WHERE m.tenant_id = %(tenant_id)s "
            f"AND m.search_vector @@ w.query AND {live_sql('m')}"
        )
    return (
        f"{s}.memories_matching(%(tenant_id)s, w.query, {COUNT_CAP + 1}) AS m WHERE {live_sql('m')}"
    )


def _bm25_evidence() -> str:
    # Both channels' scores and ranks, and the lexical channel's share of the fusion, for the
    # metadata.
    lexical = lexical_relevance_sql("n.bm25", "(SELECT total_idf FROM mem_total)")
    share = lexical_share_sql(
        lexical, dense_relevance_sql("n.distance"), "n.bm25_rank", "n.dense_rank"
    )
    return (
        f"'fusion', %(fusion)s::text, 'bm25', n.bm25, 'bm25_rank', n.bm25_rank, "
        f"'bm25_relevance', {lexical}, 'lexical_share', {share}, "
        f"'coverage', n.coverage, 'dense_rank', n.dense_rank, "
        "'found_by', CASE WHEN n.near THEN 'dense' ELSE 'bm25' END, "
        "'bm25_complete', (SELECT unprobed FROM mem_total) = 0"
    )
