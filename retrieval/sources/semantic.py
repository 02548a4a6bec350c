"""The semantic source: memories nearest the query by L2 distance on the HNSW index.

Relevance is ``1 / (1 + d)``; recency ``0.5 ^ (age / half_life)``; the optional signals are
the stored importance (unset counts as a neutral 0.5), popularity
``log10(access_count + 1) / log10(101)`` and entity overlap (query entity ids the memory links
to / query entity ids). The tenant and the mode's kinds filter the index scan itself; with
``hnsw.iterative_scan`` on, a tenant holding few rows still gets its full candidate pool.

With the BM25 channel on (``memory_bm25``), the memories' postings (:mod:`retrieval.memory_terms`)
give a second candidate pool, and relevance is the fusion of the two channels
(:mod:`retrieval.sources.fusion`, the documents' strategies) instead of ``1 / (1 + d)``; the
distance cut-off then applies to the vector channel only.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.config import Mode
from retrieval.sources.common import recency_sql
from retrieval.sources.fusion import Postings, bm25_ctes, channel_evidence, fusion_ctes
from retrieval.sources.lexical import lexical_evidence, lexical_relevance, lexical_scores

SOURCE = "semantic"
NEUTRAL_IMPORTANCE = 0.5


@dataclass(frozen=True)
class SemanticQuery:
    """The shape of the semantic CTE: which filters it carries."""

    mode: Mode
    with_max_distance: bool
    with_entities: bool
    lexical: str | None = None  # None, or how lexical scores combine: max, weighted, cascade
    bm25: bool = False  # fuse a BM25 channel over the memories' postings


def semantic_ctes(schema: str, query: SemanticQuery) -> list[str]:
    """The CTEs of the semantic source, the last named ``semantic``.

    Parameters: ``tenant_id``, ``query_vector``, ``semantic_candidates``, ``semantic_half_life``,
    ``as_of``, and when used ``include_kinds``, ``exclude_kinds``, ``max_distance``,
    ``entity_ids``, and with ``query.bm25`` the BM25 and fusion parameters
    (:mod:`retrieval.sources.fusion`, with ``query_text``).
    """
    filters = ["m.tenant_id = %(tenant_id)s", *_kind_filters(query.mode, "m")]
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
    cut = "n.distance <= %(max_distance)s::float8" if query.with_max_distance else ""
    ctes = [nearest]
    found, evidence = "semantic_nearest", ""
    semantic_relevance = "1.0::float8 / (1.0::float8 + n.distance)"
    if query.bm25:
        ctes += _bm25_channel(schema, query)
        found, evidence, cut = "semantic_found", ", " + channel_evidence("n"), ""
        semantic_relevance = "n.fused"
    relevance, lexical_join, lexical_details = semantic_relevance, "", ""
    if query.lexical is not None:
        relevance = lexical_relevance(query.lexical, semantic_relevance)
        lexical_join = lexical_scores("n.content")
        lexical_details = ", " + lexical_evidence(query.lexical, "semantic", semantic_relevance)
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
               'embedding_model', n.embedding_model{lexical_details}{evidence}
           ) AS details
    FROM {found} AS n
    {lexical_join}
    {"WHERE " + cut if cut else ""}
)"""
    return [*ctes, scored]


def _kind_filters(mode: Mode, alias: str) -> list[str]:
    # The mode's kinds, on the ``kind`` column of ``alias`` (memories, or their postings).
    filters = []
    if mode.include_kinds is not None:
        filters.append(f"{alias}.kind = ANY(%(include_kinds)s::text[])")
    if mode.exclude_kinds:
        filters.append(f"{alias}.kind <> ALL(%(exclude_kinds)s::text[])")
    return filters


def _bm25_channel(schema: str, query: SemanticQuery) -> list[str]:
    # The vector channel is the HNSW pool (within the cut-off); the BM25 channel reads the
    # postings, filtered by the mode's kinds (kept in the postings); the fused rows are joined
    # back to their memories, with the distance of those only BM25 found.
    cut = "WHERE distance <= %(max_distance)s::float8" if query.with_max_distance else ""
    kinds = _kind_filters(query.mode, "p")
    postings = Postings(
        terms=f'"{schema}".memory_terms',
        stats=f'"{schema}".memory_term_stats',
        corpus=f'"{schema}".memory_corpus',
        key="memory_id",
        length="memory_length",
        count="memories",
    )
    return [
        *bm25_ctes("mem", postings, "query_text", "semantic_candidates", " AND ".join(kinds)),
        f"""mem_dense AS (
    SELECT id AS memory_id, distance FROM semantic_nearest {cut}
)""",
        *fusion_ctes("mem", "memory_id"),
        f"""semantic_found AS (
    SELECT m.id, m.content, m.kind, m.metadata, m.importance, m.access_count,
           m.last_accessed_at, m.created_at, m.embedding_model,
           COALESCE(f.distance, m.embedding <-> %(query_vector)s::vector) AS distance,
           f.relevance AS fused, f.bm25, f.bm25_rank, f.bm25_norm, f.dense_rank, f.dense_norm
    FROM mem_fused AS f
    JOIN "{schema}".memories AS m ON m.tenant_id = %(tenant_id)s AND m.id = f.memory_id
)""",
    ]
