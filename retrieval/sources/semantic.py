"""The semantic source: memories nearest the query by L2 distance on the HNSW index.

Relevance is ``1 / (1 + d)``; recency ``0.5 ^ (age / half_life)``; the optional signals are
the stored importance (unset counts as a neutral 0.5), popularity
``log10(access_count + 1) / log10(101)`` and entity overlap (query entity ids the memory links
to / query entity ids). The tenant and the mode's kinds filter the index scan itself; with
``hnsw.iterative_scan`` on, a tenant holding few rows still gets its full candidate pool.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.config import Mode
from retrieval.sources.common import recency_sql

SOURCE = "semantic"
NEUTRAL_IMPORTANCE = 0.5


@dataclass(frozen=True)
class SemanticQuery:
    """The shape of the semantic CTE: which filters it carries."""

    mode: Mode
    with_max_distance: bool
    with_entities: bool
    lexical: str | None = None  # None, or how lexical scores combine: max, weighted, cascade


def semantic_ctes(schema: str, query: SemanticQuery) -> list[str]:
    """The CTEs of the semantic source, the last named ``semantic``.

    Parameters: ``tenant_id``, ``query_vector``, ``semantic_candidates``, ``semantic_half_life``,
    ``as_of``, and when used ``include_kinds``, ``exclude_kinds``, ``max_distance``,
    ``entity_ids``.
    """
    filters = ["m.tenant_id = %(tenant_id)s"]
    if query.mode.include_kinds is not None:
        filters.append("m.kind = ANY(%(include_kinds)s::text[])")
    if query.mode.exclude_kinds:
        filters.append("m.kind <> ALL(%(exclude_kinds)s::text[])")
    nearest = f"""semantic_nearest AS MATERIALIZED (
    SELECT m.id, m.content, m.kind, m.metadata, m.importance, m.access_count,
           m.last_accessed_at, m.created_at, m.embedding_model,
           m.embedding <-> %(query_vector)s::vector AS distance
    FROM "{schema}".memories AS m
    WHERE {" AND ".join(filters)}
    ORDER BY distance
    LIMIT %(semantic_candidates)s
)"""
    if query.with_entities:
        linked = (
            f'SELECT e.entity_id FROM "{schema}".memory_entities AS e '
            "WHERE e.tenant_id = %(tenant_id)s AND e.memory_id = n.id "
            "AND e.entity_id = ANY(%(entity_ids)s::text[]) ORDER BY e.entity_id"
        )
        entities = f"ARRAY({linked})"
        entity = f"cardinality({entities})::float8 / cardinality(%(entity_ids)s::text[])"
    else:
        entities, entity = "NULL::text[]", "0.0::float8"
    cut = "WHERE n.distance <= %(max_distance)s::float8" if query.with_max_distance else ""
    semantic_relevance = "1.0::float8 / (1.0::float8 + n.distance)"
    relevance, lexical_join, lexical_details = semantic_relevance, "", ""
    if query.lexical is not None:
        relevance = _LEXICAL_COMBINATIONS[query.lexical].format(semantic=semantic_relevance)
        lexical_join = _LEXICAL_SCORES
        lexical_details = (
            ", 'lexical', jsonb_build_object('exact', lex.exact, 'fuzzy', lex.fuzzy, "
            "'tokens', lex.tokens, 'semantic', " + semantic_relevance + ", 'combined_by', "
            f"'{query.lexical}')"
        )
    scored = f"""semantic AS (
    SELECT 'semantic'::text AS source, 'memory'::text AS item, n.id, n.content, n.kind,
           n.created_at,
           {relevance} AS relevance,
           {recency_sql("n.created_at", "semantic_half_life")} AS recency,
           COALESCE(n.importance, {NEUTRAL_IMPORTANCE}::float8) AS importance,
           LEAST(1.0::float8, log((n.access_count + 1)::float8) / log(101.0::float8))
               AS popularity,
           {entity} AS entity,
           n.distance, NULL::text[] AS matched, {entities} AS entities,
           jsonb_build_object(
               'metadata', n.metadata, 'importance', n.importance,
               'access_count', n.access_count, 'last_accessed_at', n.last_accessed_at,
               'embedding_model', n.embedding_model{lexical_details}
           ) AS details
    FROM semantic_nearest AS n
    {lexical_join}
    {cut}
)"""
    return [nearest, scored]


# Exact tier, pg_trgm similarity and word overlap of a memory with the query (the SQL side of
# retrieval.lexical_match). Parameters: lexical_query, query_normalized, query_words.
_NORMALIZED = "btrim(regexp_replace(lower(n.content), '\\W+', ' ', 'g'))"
_LEXICAL_SCORES = f"""CROSS JOIN LATERAL (
        SELECT CASE
                   WHEN n.content = %(lexical_query)s THEN 1.0::float8
                   WHEN lower(n.content) = lower(%(lexical_query)s) THEN 0.98::float8
                   WHEN %(query_normalized)s <> '' AND {_NORMALIZED} = %(query_normalized)s
                   THEN 0.95::float8
                   ELSE 0.0::float8
               END AS exact,
               similarity(n.content, %(lexical_query)s)::float8 AS fuzzy,
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
                FROM unnest(regexp_split_to_array({_NORMALIZED}, ' ')) AS word
                WHERE word <> ''
            ) AS t
        ) AS w
    ) AS lex"""
_LEXICAL_COMBINATIONS = {
    "max": "GREATEST(lex.exact, lex.fuzzy, lex.tokens, {semantic})",
    "weighted": "LEAST(1.0::float8, %(lexical_exact)s::float8 * lex.exact"
    " + %(lexical_fuzzy)s::float8 * lex.fuzzy + %(lexical_tokens)s::float8 * lex.tokens"
    " + %(lexical_semantic)s::float8 * {semantic})",
    "cascade": "CASE WHEN lex.exact >= %(cascade_exact)s::float8 THEN lex.exact"
    " WHEN lex.fuzzy >= %(cascade_fuzzy)s::float8 THEN lex.fuzzy"
    " WHEN lex.tokens >= %(cascade_tokens)s::float8 THEN lex.tokens ELSE {semantic} END",
}
